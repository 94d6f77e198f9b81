#include "engine/ops/op_cuda.cuh"
#include "kernels/canny/canny.hpp"

TW_CUDA_OP(tw::ops::CannyNms);
