#pragma once
// Pixel -> pixel ops on 8-bit samples (the op API's simplest category). C is
// the channel count (1: gray, 3: RGB, each channel mapped alike).
#include <cmath>
#include <cstdint>

#include "engine/ops/op.hpp"

namespace tw::ops {

// Round half up, then clamp: the rounding every filter of ours uses. For
// 0 < u < 255 truncation is floor, and it vectorises where floorf does not.
TW_HD uint8_t round_u8(float v) {
  const float u = v + 0.5f;
  return u <= 0.f ? 0 : u >= 255.f ? 255 : static_cast<uint8_t>(static_cast<int>(u));
}

template <int C>
struct Invert {
  using Category = ops::Pixel;
  using In = uint8_t;
  using Out = uint8_t;
  static constexpr bool kLight = true;
  static constexpr int kIn = C, kOut = C;
  TW_HD void operator()(const In* in, Out* out) const {
    for (int c = 0; c < C; ++c) out[c] = static_cast<uint8_t>(255 - in[c]);
  }
};

template <int C>
struct Brightness {  // v + add, saturated
  using Category = ops::Pixel;
  using In = uint8_t;
  using Out = uint8_t;
  static constexpr bool kLight = true;
  static constexpr int kIn = C, kOut = C;
  int add = 0;
  TW_HD void operator()(const In* in, Out* out) const {
    for (int c = 0; c < C; ++c) {
      const int v = in[c] + add;
      out[c] = static_cast<uint8_t>(v < 0 ? 0 : v > 255 ? 255 : v);
    }
  }
};

template <int C>
struct Contrast {  // (v - center) * factor + center, rounded half up, saturated
  using Category = ops::Pixel;
  using In = uint8_t;
  using Out = uint8_t;
  static constexpr int kIn = C, kOut = C;
  float factor = 1.f, center = 128.f;
  TW_HD void operator()(const In* in, Out* out) const {
    for (int c = 0; c < C; ++c) out[c] = round_u8(ops::mul_add(static_cast<float>(in[c]) - center, factor, center));
  }
};

struct Threshold {  // 255 where v > t, else 0 (OpenCV THRESH_BINARY, maxval 255)
  using Category = ops::Pixel;
  using In = uint8_t;
  using Out = uint8_t;
  static constexpr bool kLight = true;
  static constexpr int kIn = 1, kOut = 1;
  int t = 127;
  TW_HD void operator()(const In* in, Out* out) const { out[0] = in[0] > t ? 255 : 0; }
};

// RGB -> gray with ITU-R BT.601 weights in OpenCV's fixed point
// (cv2.cvtColor(..., COLOR_RGB2GRAY), bit for bit):
// (4899 R + 9617 G + 1868 B + 8192) >> 14.
struct Gray {
  using Category = ops::Pixel;
  using In = uint8_t;
  using Out = uint8_t;
  static constexpr int kIn = 3, kOut = 1;
  TW_HD void operator()(const In* in, Out* out) const {
    out[0] = static_cast<uint8_t>((4899 * in[0] + 9617 * in[1] + 1868 * in[2] + 8192) >> 14);
  }
};

}  // namespace tw::ops
