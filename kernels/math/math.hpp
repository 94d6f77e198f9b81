#pragma once
// Arithmetic between two images of one size (`tilewave math OP A B OUT`),
// sample by sample; the same functions on both backends: over a row on the
// CPU (math_op.cpp, through engine/map_source.hpp), per sample on the GPU
// (math_cuda.cu).
//
//   subtract  A - B; u8, u16, u32 saturate at 0, i32 at its range; f32 as IEEE
//             float subtraction (NaN and inf propagate), a NaN result with
//             the bits an x86 CPU gives it (see subtract_sample)
//   min, max  elementwise; f32: a NaN of A, else of B, is the result (as
//             numpy's minimum / maximum), ties (0 and -0) give A's sample
//   mask      A where B != 0 (NaN counts as non-zero, -0 as zero), else 0;
//             B of 1 channel masks every channel of A
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "engine/ops/hd.hpp"

namespace tw::ops {

enum class MathOp { kSubtract, kMin, kMax };

// NaN is the one float unequal to itself (std::isnan is not a device function).
TW_HD bool is_nan(float v) {
  return v != v;  // NOLINT(misc-redundant-expression)
}

// A float's bits and back, on both backends.
TW_HD uint32_t float_bits(float v) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(v);
#else
  uint32_t u;
  std::memcpy(&u, &v, sizeof u);
  return u;
#endif
}
TW_HD float bits_float(uint32_t u) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(u);
#else
  float v;
  std::memcpy(&v, &u, sizeof v);
  return v;
#endif
}

// f32: a NaN result is written out as x86's SSE makes it: A's NaN made
// quiet, else B's, else (inf - inf) the "indefinite" NaN 0xFFC00000. A GPU
// gives one canonical NaN (0x7FFFFFFF) for every NaN result; spelled out,
// the backends agree bit for bit (and the CPU's result is what a plain
// a - b gives on x86).
template <class T>
TW_HD T subtract_sample(T a, T b) {
  if constexpr (std::is_same_v<T, float>) {
#if defined(__x86_64__) && !defined(__CUDA_ARCH__)
    return a - b;  // SSE gives exactly that NaN, and this loop vectorises (the rule spelled out took 1.6x)
#else
    constexpr uint32_t kQuiet = 0x00400000u, kIndefinite = 0xFFC00000u;
    if (is_nan(a)) return bits_float(float_bits(a) | kQuiet);
    if (is_nan(b)) return bits_float(float_bits(b) | kQuiet);
    const float d = a - b;
    return is_nan(d) ? bits_float(kIndefinite) : d;
#endif
  } else if constexpr (std::is_same_v<T, int32_t>) {
    const int64_t d = static_cast<int64_t>(a) - static_cast<int64_t>(b);
    constexpr int64_t lo = INT32_MIN, hi = INT32_MAX;  // the macros: numeric_limits is host-only in nvcc
    return static_cast<int32_t>(d < lo ? lo : d > hi ? hi : d);
  } else {
    return static_cast<T>(a > b ? a - b : 0);
  }
}

template <class T>
TW_HD T min_sample(T a, T b) {
  if constexpr (std::is_same_v<T, float>) {
    if (is_nan(a)) return a;
    if (is_nan(b)) return b;
  }
  return b < a ? b : a;
}

template <class T>
TW_HD T max_sample(T a, T b) {
  if constexpr (std::is_same_v<T, float>) {
    if (is_nan(a)) return a;
    if (is_nan(b)) return b;
  }
  return b > a ? b : a;
}

template <MathOp kOp, class T>
TW_HD T math_sample(T a, T b) {
  if constexpr (kOp == MathOp::kSubtract)
    return subtract_sample(a, b);
  else if constexpr (kOp == MathOp::kMin)
    return min_sample(a, b);
  else
    return max_sample(a, b);
}

// A's sample where B's is non-zero.
template <class T, class M>
TW_HD T mask_sample(T a, M m) {
  return m != M(0) ? a : T(0);
}

// n samples of out from n samples of a and b.
template <MathOp kOp, class T>
void math_row(const T* a, const T* b, T* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = math_sample<kOp>(a[i], b[i]);
}

// n pixels of `channels` samples: A's where B's is non-zero. b has one
// sample per pixel (b_channels 1) or one per sample of A. (mask_sample's
// rule written out: g++ vectorises this form, and the loop calling
// mask_sample took twice the time: the nuclei's `inside` step on 8192²,
// 0.15 s of thread time against 0.08 s.)
template <class T, class M>
void mask_row(const T* a, const M* b, T* out, int64_t n, int channels, int b_channels) {
  if (channels == 1) {  // the common case, a loop the compiler vectorises
    for (int64_t i = 0; i < n; ++i) out[i] = b[i] != M(0) ? a[i] : T(0);
    return;
  }
  for (int64_t i = 0; i < n; ++i)
    for (int c = 0; c < channels; ++c) {
      const M m = b_channels == 1 ? b[i] : b[i * channels + c];
      out[i * channels + c] = m != M(0) ? a[i * channels + c] : T(0);
    }
}

}  // namespace tw::ops
