#include "engine/ops/op_cuda.cuh"
#include "kernels/canny/canny_itk.hpp"

TW_CUDA_OP(tw::ops::ItkGaussian);
TW_CUDA_OP(tw::ops::CannyItkClasses);
