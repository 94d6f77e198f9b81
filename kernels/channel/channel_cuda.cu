#include "engine/ops/op_cuda.cuh"
#include "kernels/channel/channel.hpp"

TW_CUDA_OP(tw::ops::Channel<uint8_t, 2>);
TW_CUDA_OP(tw::ops::Channel<uint8_t, 3>);
TW_CUDA_OP(tw::ops::Channel<uint8_t, 4>);
TW_CUDA_OP(tw::ops::Channel<uint16_t, 2>);
TW_CUDA_OP(tw::ops::Channel<uint16_t, 3>);
TW_CUDA_OP(tw::ops::Channel<uint16_t, 4>);
TW_CUDA_OP(tw::ops::Channel<int32_t, 2>);
TW_CUDA_OP(tw::ops::Channel<int32_t, 3>);
TW_CUDA_OP(tw::ops::Channel<int32_t, 4>);
TW_CUDA_OP(tw::ops::Channel<float, 2>);
TW_CUDA_OP(tw::ops::Channel<float, 3>);
TW_CUDA_OP(tw::ops::Channel<float, 4>);
TW_CUDA_OP(tw::ops::Channel<uint32_t, 2>);
TW_CUDA_OP(tw::ops::Channel<uint32_t, 3>);
TW_CUDA_OP(tw::ops::Channel<uint32_t, 4>);
