#include "engine/ops/op_cuda.cuh"
#include "kernels/hed/hed.hpp"

TW_CUDA_OP(tw::ops::Hed);
TW_CUDA_OP(tw::ops::HedStain);
