#include "engine/ops/fir.hpp"

namespace tw::ops {

#if defined(__GNUC__) && defined(__x86_64__) && !defined(__clang__)
#define TW_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define TW_CLONES
#endif

TW_CLONES void fir(float* acc, const float* src, int64_t n, const float* taps, int ntaps, int64_t step) {
  // Blocks of 256 outputs stay in L1 while every tap passes over them.
  constexpr int64_t kBlock = 256;
  for (int64_t b = 0; b < n; b += kBlock) {
    const int64_t m = n - b < kBlock ? n - b : kBlock;
    float* a = acc + b;
    const float* s = src + b;
    for (int64_t i = 0; i < m; ++i) a[i] = 0.f;
    for (int k = 0; k < ntaps; ++k) {
      const float t = taps[k];
      const float* q = s + k * step;
      for (int64_t i = 0; i < m; ++i) a[i] = a[i] + t * q[i];
    }
  }
}

TW_CLONES void u8_to_float(const uint8_t* src, float* dst, int64_t n) {
  for (int64_t i = 0; i < n; ++i) dst[i] = static_cast<float>(src[i]);
}

}  // namespace tw::ops
