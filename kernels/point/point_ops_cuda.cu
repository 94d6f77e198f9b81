#include "engine/ops/op_cuda.cuh"
#include "kernels/point/point_ops.hpp"

TW_CUDA_OP(tw::ops::Invert<1>);
TW_CUDA_OP(tw::ops::Invert<3>);
TW_CUDA_OP(tw::ops::Brightness<1>);
TW_CUDA_OP(tw::ops::Brightness<3>);
TW_CUDA_OP(tw::ops::Contrast<1>);
TW_CUDA_OP(tw::ops::Contrast<3>);
TW_CUDA_OP(tw::ops::Threshold);
TW_CUDA_OP(tw::ops::Gray);
