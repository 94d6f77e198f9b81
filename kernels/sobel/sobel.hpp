#pragma once
// Sobel gradient magnitude of 8-bit gray: the 3x3 derivatives of OpenCV's
// Sobel (ksize 3, BORDER_REFLECT_101), L2 magnitude sqrt(gx^2 + gy^2)
// (exact: the sum is an integer below 2^24 and sqrtf rounds correctly on
// both backends), rounded half up and clipped to 255; or, with a
// threshold, 255 where the magnitude exceeds it.
#include <cmath>
#include <cstdint>

#include "engine/image.hpp"
#include "engine/ops/op.hpp"

namespace tw::ops {

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
    out[0] = finish(gx, gy);
  }
  TW_HD uint8_t finish(int gx, int gy) const {
    const float m = sqrtf(static_cast<float>(gx * gx + gy * gy));
    if (threshold >= 0.f) return m > threshold ? 255 : 0;
    return m >= 254.5f ? 255 : static_cast<uint8_t>(static_cast<int>(m + 0.5f));  // m >= 0: truncation is floor
  }
  // Whole rows on the CPU (they vectorise; a functor per pixel does not).
  void cpu_block(const Image& src, const ImageView& dst, int64_t W, int64_t H) const;
};

}  // namespace tw::ops
