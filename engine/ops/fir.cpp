#include "engine/ops/fir.hpp"

#include <algorithm>

#include "engine/ops/clones.hpp"

namespace tw::ops {

TW_CLONES void fir(float* acc, const float* src, int64_t n, const float* taps, int ntaps, int64_t step) {
  // 32 outputs at a time, accumulated in registers across all taps: one load
  // per tap and output instead of a load and a store of the sum as well.
  constexpr int64_t kBlock = 32;
  int64_t i = 0;
  for (; i + kBlock <= n; i += kBlock) {
    float a[kBlock];
    for (int64_t j = 0; j < kBlock; ++j) a[j] = 0.f;
    for (int k = 0; k < ntaps; ++k) {
      const float t = taps[k];
      const float* q = src + i + k * step;
      for (int64_t j = 0; j < kBlock; ++j) a[j] = a[j] + t * q[j];
    }
    for (int64_t j = 0; j < kBlock; ++j) acc[i + j] = a[j];
  }
  for (; i < n; ++i) {
    float a = 0.f;
    for (int k = 0; k < ntaps; ++k) a = a + taps[k] * src[i + k * step];
    acc[i] = a;
  }
}

TW_CLONES void round_half_up_u8(const float* v, uint8_t* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const float u = std::min(std::max(v[i] + 0.5f, 0.f), 255.f);  // then truncation is floor
    out[i] = static_cast<uint8_t>(static_cast<int32_t>(u));
  }
}

TW_CLONES void u8_to_float(const uint8_t* src, float* dst, int64_t n) {
  for (int64_t i = 0; i < n; ++i) dst[i] = static_cast<float>(src[i]);
}

}  // namespace tw::ops
