#pragma once
// Gamma correction of 8-bit gray or RGB, as scikit-image's adjust_gamma
// computes it for uint8 since 0.20: out = min(rint(255 gain (v / 255)^gamma),
// 255) (0.19 truncated instead of rounding). The
// power is taken on the host for the 256 sample values (in double, as numpy
// does), so both backends only look the result up.
#include <algorithm>
#include <cmath>
#include <cstdint>

#include "engine/ops/op.hpp"

namespace tw::ops {

template <int C>
struct Gamma {
  using Category = ops::Pixel;
  using In = uint8_t;
  using Out = uint8_t;
  static constexpr int kIn = C, kOut = C;
  uint8_t lut[256];
  TW_HD void operator()(const In* in, Out* out) const {
    for (int c = 0; c < C; ++c) out[c] = lut[in[c]];
  }
};

template <int C>
Gamma<C> make_gamma(double gamma, double gain) {
  Gamma<C> g;
  for (int k = 0; k < 256; ++k) {
    // numpy's linspace(0, 1, 256)[k] is k * (1 / 255), not k / 255.
    const double v = 255.0 * gain * std::pow(k * (1.0 / 255.0), gamma);
    g.lut[k] = static_cast<uint8_t>(std::min(std::nearbyint(v), 255.0));
  }
  return g;
}

}  // namespace tw::ops
