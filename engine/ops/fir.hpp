#pragma once
// The inner loops of separable filters on the CPU, compiled for AVX2 as well
// as for plain x86-64 (picked at load time). Each output sums its taps in
// index order with a multiply and an add (never a fused multiply-add), so
// every build and the GPU give the same bits.
#include <cstdint>

namespace tw::ops {

// acc[i] = sum over k of taps[k] * src[i + k * step], k = 0..ntaps-1 in order.
void fir(float* acc, const float* src, int64_t n, const float* taps, int ntaps, int64_t step);
void u8_to_float(const uint8_t* src, float* dst, int64_t n);

}  // namespace tw::ops
