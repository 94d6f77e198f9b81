#include "engine/ops/op_cuda.cuh"
#include "kernels/sobel/sobel.hpp"

TW_CUDA_OP(tw::ops::Sobel);
