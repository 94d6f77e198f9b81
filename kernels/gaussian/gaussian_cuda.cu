#include "engine/ops/op_cuda.cuh"
#include "kernels/gaussian/gaussian.hpp"

TW_CUDA_OP(tw::ops::Gaussian<1>);
TW_CUDA_OP(tw::ops::Gaussian<3>);
