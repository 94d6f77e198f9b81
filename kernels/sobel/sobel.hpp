#pragma once
// Sobel gradient magnitude of 8-bit gray: the 3x3 derivatives of OpenCV's
// Sobel (ksize 3, BORDER_REFLECT_101), L2 magnitude sqrt(gx^2 + gy^2)
// (exact: the sum is an integer below 2^24 and sqrtf rounds correctly on
// both backends), rounded half up and clipped to 255; or, with a
// threshold, 255 where the magnitude exceeds it.
#include <cmath>
#include <cstdint>

#include "engine/ops/op.hpp"

namespace tw::kernels {

struct Sobel {
  using Category = ops::Neighborhood;
  using In = uint8_t;
  using Out = uint8_t;
  static constexpr int kIn = 1, kOut = 1;
  float threshold = -1.f;  // < 0: output the magnitude
  int radius() const { return 1; }
  Border border() const { return {BorderMode::kReflect101, 0}; }
  TW_HD void operator()(const ops::Window<In>& w, Out* out) const {
    const int gx = (w(1, -1) + 2 * w(1, 0) + w(1, 1)) - (w(-1, -1) + 2 * w(-1, 0) + w(-1, 1));
    const int gy = (w(-1, 1) + 2 * w(0, 1) + w(1, 1)) - (w(-1, -1) + 2 * w(0, -1) + w(1, -1));
    const float m = sqrtf(static_cast<float>(gx * gx + gy * gy));
    if (threshold >= 0.f) out[0] = m > threshold ? 255 : 0;
    else out[0] = m >= 254.5f ? 255 : static_cast<uint8_t>(floorf(m + 0.5f));
  }
};

}  // namespace tw::kernels
