#pragma once
// Arithmetic between two images of one size (`tilewave math OP A B OUT`),
// sample by sample over a row; the registry entry (math_op.cpp) runs them on
// the CPU through engine/map_source.hpp.
//
//   subtract  A - B; u8, u16, u32 saturate at 0, i32 at its range; f32 as IEEE
//             float subtraction (NaN and inf propagate)
//   min, max  elementwise; f32: a NaN of A, else of B, is the result (as
//             numpy's minimum / maximum), ties (0 and -0) give A's sample
//   mask      A where B != 0 (NaN counts as non-zero, -0 as zero), else 0;
//             B of 1 channel masks every channel of A
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

namespace tw::ops {

enum class MathOp { kSubtract, kMin, kMax };

template <class T>
T subtract_sample(T a, T b) {
  if constexpr (std::is_same_v<T, float>) {
    return a - b;
  } else if constexpr (std::is_same_v<T, int32_t>) {
    const int64_t d = static_cast<int64_t>(a) - static_cast<int64_t>(b);
    constexpr int64_t lo = std::numeric_limits<int32_t>::min(), hi = std::numeric_limits<int32_t>::max();
    return static_cast<int32_t>(d < lo ? lo : d > hi ? hi : d);
  } else {
    return static_cast<T>(a > b ? a - b : 0);
  }
}

template <class T>
T min_sample(T a, T b) {
  if constexpr (std::is_same_v<T, float>) {
    if (std::isnan(a)) return a;
    if (std::isnan(b)) return b;
  }
  return b < a ? b : a;
}

template <class T>
T max_sample(T a, T b) {
  if constexpr (std::is_same_v<T, float>) {
    if (std::isnan(a)) return a;
    if (std::isnan(b)) return b;
  }
  return b > a ? b : a;
}

// n samples of out from n samples of a and b.
template <MathOp kOp, class T>
void math_row(const T* a, const T* b, T* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    if constexpr (kOp == MathOp::kSubtract)
      out[i] = subtract_sample(a[i], b[i]);
    else if constexpr (kOp == MathOp::kMin)
      out[i] = min_sample(a[i], b[i]);
    else
      out[i] = max_sample(a[i], b[i]);
  }
}

// n pixels of `channels` samples: A's where B's is non-zero. b has one
// sample per pixel (b_channels 1) or one per sample of A.
template <class T, class M>
void mask_row(const T* a, const M* b, T* out, int64_t n, int channels, int b_channels) {
  for (int64_t i = 0; i < n; ++i)
    for (int c = 0; c < channels; ++c) {
      const M m = b_channels == 1 ? b[i] : b[i * channels + c];
      out[i * channels + c] = m != M(0) ? a[i * channels + c] : T(0);
    }
}

}  // namespace tw::ops
