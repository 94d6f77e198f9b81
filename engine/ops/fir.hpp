#pragma once
// The inner loops of separable filters on the CPU, compiled for AVX2 as well
// as for plain x86-64 (picked at load time). Each output sums its taps in
// index order with a multiply and an add (never a fused multiply-add), so
// every build and the GPU give the same bits.
#include <cstdint>

namespace tw::ops {

// acc[i] = sum over k of taps[k] * src[i + k * step], k = 0..ntaps-1 in order.
void fir(float* acc, const float* src, int64_t n, const float* taps, int ntaps, int64_t step);
// out[i] = the value rounded half up and clamped to 0..255 (round_u8 of
// kernels/point/point_ops.hpp, for whole rows).
void round_half_up_u8(const float* v, uint8_t* out, int64_t n);
void u8_to_float(const uint8_t* src, float* dst, int64_t n);

}  // namespace tw::ops
