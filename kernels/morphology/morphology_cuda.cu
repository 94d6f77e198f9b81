// The GPU runs the functor (O(R^2) per pixel, reads through L1): the same
// pixels as the CPU's separable and chord kernels by definition.
#include "engine/ops/op_cuda.cuh"
#include "kernels/morphology/morphology.hpp"

TW_CUDA_OP(tw::ops::Morph<uint8_t, 1, false>);
TW_CUDA_OP(tw::ops::Morph<uint8_t, 1, true>);
TW_CUDA_OP(tw::ops::Morph<uint8_t, 3, false>);
TW_CUDA_OP(tw::ops::Morph<uint8_t, 3, true>);
TW_CUDA_OP(tw::ops::Morph<uint16_t, 1, false>);
TW_CUDA_OP(tw::ops::Morph<uint16_t, 1, true>);
TW_CUDA_OP(tw::ops::Morph<uint16_t, 3, false>);
TW_CUDA_OP(tw::ops::Morph<uint16_t, 3, true>);
