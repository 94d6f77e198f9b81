#include "engine/ops/op_cuda.cuh"
#include "kernels/gamma/gamma.hpp"

TW_CUDA_OP(tw::ops::Gamma<1>);
TW_CUDA_OP(tw::ops::Gamma<3>);
