// Every instantiation `filter convert` runs (kernels/convert/convert_op.cpp):
// inputs u8, u16, i32, f32; outputs u8, u16, f32; 1 to 4 channels.
#include "engine/ops/op_cuda.cuh"
#include "kernels/convert/convert.hpp"

TW_CUDA_OP(tw::ops::Convert<uint8_t, uint8_t, 1>);
TW_CUDA_OP(tw::ops::Convert<uint8_t, uint8_t, 2>);
TW_CUDA_OP(tw::ops::Convert<uint8_t, uint8_t, 3>);
TW_CUDA_OP(tw::ops::Convert<uint8_t, uint8_t, 4>);
TW_CUDA_OP(tw::ops::Convert<uint16_t, uint8_t, 1>);
TW_CUDA_OP(tw::ops::Convert<uint16_t, uint8_t, 2>);
TW_CUDA_OP(tw::ops::Convert<uint16_t, uint8_t, 3>);
TW_CUDA_OP(tw::ops::Convert<uint16_t, uint8_t, 4>);
TW_CUDA_OP(tw::ops::Convert<int32_t, uint8_t, 1>);
TW_CUDA_OP(tw::ops::Convert<int32_t, uint8_t, 2>);
TW_CUDA_OP(tw::ops::Convert<int32_t, uint8_t, 3>);
TW_CUDA_OP(tw::ops::Convert<int32_t, uint8_t, 4>);
TW_CUDA_OP(tw::ops::Convert<float, uint8_t, 1>);
TW_CUDA_OP(tw::ops::Convert<float, uint8_t, 2>);
TW_CUDA_OP(tw::ops::Convert<float, uint8_t, 3>);
TW_CUDA_OP(tw::ops::Convert<float, uint8_t, 4>);
TW_CUDA_OP(tw::ops::Convert<uint8_t, uint16_t, 1>);
TW_CUDA_OP(tw::ops::Convert<uint8_t, uint16_t, 2>);
TW_CUDA_OP(tw::ops::Convert<uint8_t, uint16_t, 3>);
TW_CUDA_OP(tw::ops::Convert<uint8_t, uint16_t, 4>);
TW_CUDA_OP(tw::ops::Convert<uint16_t, uint16_t, 1>);
TW_CUDA_OP(tw::ops::Convert<uint16_t, uint16_t, 2>);
TW_CUDA_OP(tw::ops::Convert<uint16_t, uint16_t, 3>);
TW_CUDA_OP(tw::ops::Convert<uint16_t, uint16_t, 4>);
TW_CUDA_OP(tw::ops::Convert<int32_t, uint16_t, 1>);
TW_CUDA_OP(tw::ops::Convert<int32_t, uint16_t, 2>);
TW_CUDA_OP(tw::ops::Convert<int32_t, uint16_t, 3>);
TW_CUDA_OP(tw::ops::Convert<int32_t, uint16_t, 4>);
TW_CUDA_OP(tw::ops::Convert<float, uint16_t, 1>);
TW_CUDA_OP(tw::ops::Convert<float, uint16_t, 2>);
TW_CUDA_OP(tw::ops::Convert<float, uint16_t, 3>);
TW_CUDA_OP(tw::ops::Convert<float, uint16_t, 4>);
TW_CUDA_OP(tw::ops::Convert<uint8_t, float, 1>);
TW_CUDA_OP(tw::ops::Convert<uint8_t, float, 2>);
TW_CUDA_OP(tw::ops::Convert<uint8_t, float, 3>);
TW_CUDA_OP(tw::ops::Convert<uint8_t, float, 4>);
TW_CUDA_OP(tw::ops::Convert<uint16_t, float, 1>);
TW_CUDA_OP(tw::ops::Convert<uint16_t, float, 2>);
TW_CUDA_OP(tw::ops::Convert<uint16_t, float, 3>);
TW_CUDA_OP(tw::ops::Convert<uint16_t, float, 4>);
TW_CUDA_OP(tw::ops::Convert<int32_t, float, 1>);
TW_CUDA_OP(tw::ops::Convert<int32_t, float, 2>);
TW_CUDA_OP(tw::ops::Convert<int32_t, float, 3>);
TW_CUDA_OP(tw::ops::Convert<int32_t, float, 4>);
TW_CUDA_OP(tw::ops::Convert<float, float, 1>);
TW_CUDA_OP(tw::ops::Convert<float, float, 2>);
TW_CUDA_OP(tw::ops::Convert<float, float, 3>);
TW_CUDA_OP(tw::ops::Convert<float, float, 4>);
