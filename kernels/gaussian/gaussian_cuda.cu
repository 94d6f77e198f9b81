#include "engine/ops/op_cuda.cuh"
#include "kernels/gaussian/gaussian.hpp"

TW_CUDA_OP(tw::kernels::Gaussian<1>);
TW_CUDA_OP(tw::kernels::Gaussian<3>);
