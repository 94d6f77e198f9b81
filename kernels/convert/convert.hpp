#pragma once
// Type conversion with an explicit range (`filter convert`):
//
//   to u8 / u16:  out = clamp(round((v - LO) * MAX / (HI - LO)), 0, MAX),
//                 MAX = 255 / 65535, rounded half away from zero; NaN -> 0,
//                 +inf -> MAX, -inf -> 0 (for HI > LO; HI < LO inverts);
//   to f32:       out = float((v - LO) / (HI - LO)) with a range, else float(v).
//
// The arithmetic is in double, in exactly that order (subtract, multiply,
// divide, each rounded once), on both backends: every input sample (u8, u16,
// i32, f32) is exact in double, and the device uses the _rn intrinsics so
// that nvcc cannot contract or reorder anything. The rounding is done by
// hand (truncate, then compare the exact fraction with 0.5), so no math
// library function is involved; CPU and GPU give the same bits.
#include <cstdint>
#include <type_traits>

#include "engine/ops/op.hpp"

namespace tw::ops {

namespace convert_detail {

TW_HD double sub(double a, double b) {
#if defined(__CUDA_ARCH__)
  return __dsub_rn(a, b);
#else
  return a - b;
#endif
}
TW_HD double mul(double a, double b) {
#if defined(__CUDA_ARCH__)
  return __dmul_rn(a, b);
#else
  return a * b;
#endif
}
TW_HD double div(double a, double b) {
#if defined(__CUDA_ARCH__)
  return __ddiv_rn(a, b);
#else
  return a / b;
#endif
}

// clamp(round(x), 0, kMax), half away from zero; NaN -> 0. For 0 < x < kMax,
// x - trunc(x) is exact (Sterbenz), so the comparison with 0.5 is exact.
template <int kMax>
TW_HD int round_clamp(double x) {
  if (!(x > 0.0)) return 0;  // also NaN
  if (x >= static_cast<double>(kMax)) return kMax;
  const int t = static_cast<int>(x);
  return t + (sub(x, static_cast<double>(t)) >= 0.5 ? 1 : 0);
}

}  // namespace convert_detail

// I: input sample type (u8, u16, i32, f32); O: output (u8, u16, f32); C channels.
template <class I, class O, int C>
struct Convert {
  using Category = ops::Pixel;
  using In = I;
  using Out = O;
  static constexpr int kIn = C, kOut = C;
  // From u8 the CPU looks the 256 results of one() up (engine/ops/op_source.hpp).
  static constexpr bool kLookup = std::is_same_v<I, uint8_t>;
  double lo = 0, span = 1;  // LO and HI - LO (span != 0)
  bool ranged = true;       // integer outputs always are; f32 without --from/--to is not

  TW_HD Out one(In v) const {
    using namespace convert_detail;
    const double d = static_cast<double>(v);
    if constexpr (std::is_same_v<O, float>) {
      return static_cast<float>(ranged ? div(sub(d, lo), span) : d);
    } else {
      constexpr int kMax = std::is_same_v<O, uint8_t> ? 255 : 65535;
      return static_cast<O>(round_clamp<kMax>(div(mul(sub(d, lo), static_cast<double>(kMax)), span)));
    }
  }
  TW_HD void operator()(const In* in, Out* out) const {
    for (int c = 0; c < C; ++c) out[c] = one(in[c]);
  }
};

}  // namespace tw::ops
