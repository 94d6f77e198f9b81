#include "engine/ops/op_cuda.cuh"
#include "kernels/point/point_ops.hpp"

TW_CUDA_OP(tw::kernels::Invert<1>);
TW_CUDA_OP(tw::kernels::Invert<3>);
TW_CUDA_OP(tw::kernels::Brightness<1>);
TW_CUDA_OP(tw::kernels::Brightness<3>);
TW_CUDA_OP(tw::kernels::Contrast<1>);
TW_CUDA_OP(tw::kernels::Contrast<3>);
TW_CUDA_OP(tw::kernels::Threshold);
TW_CUDA_OP(tw::kernels::Gray);
