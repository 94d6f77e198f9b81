#pragma once
// Colour deconvolution into hematoxylin, eosin and DAB optical densities
// (Ruifrok & Johnston 2001), as scikit-image's rgb2hed computes it:
// stains = max(0, (log(max(rgb / 255, 1e-6)) / log(1e-6)) @ inv(rgb_from_hed)).
// The log of each of the 256 sample values is tabulated on the host (in
// double precision), so both backends do the same float arithmetic after it.
#include <cstdint>

#include "engine/ops/op.hpp"

namespace tw::ops {

struct Hed {
  using Category = ops::Pixel;
  using In = uint8_t;
  using Out = float;
  static constexpr int kIn = 3, kOut = 3;
  float log_od[256];  // log(max(v / 255, 1e-6)) / log(1e-6)
  float m[9];         // hed_from_rgb, row-major: stains[j] = sum_i od[i] * m[3 i + j]
  TW_HD void operator()(const In* in, Out* out) const {
    const float r = log_od[in[0]], g = log_od[in[1]], b = log_od[in[2]];
    for (int j = 0; j < 3; ++j) {
      const float s = ops::mul_add(b, m[6 + j], ops::mul_add(g, m[3 + j], r * m[j]));
      out[j] = s > 0.f ? s : 0.f;
    }
  }
};

// One stain's density only (column j of the same matrix, the same float
// arithmetic, so its samples equal channel j of Hed's bit for bit): a
// third of the arithmetic and of the bytes written where only hematoxylin
// is wanted (the nuclei pipeline).
struct HedStain {
  using Category = ops::Pixel;
  using In = uint8_t;
  using Out = float;
  static constexpr int kIn = 3, kOut = 1;
  float log_od[256];
  float m[3];  // hed_from_rgb's column j: the stain's weights of R, G, B
  TW_HD void operator()(const In* in, Out* out) const {
    const float s = ops::mul_add(log_od[in[2]], m[2], ops::mul_add(log_od[in[1]], m[1], log_od[in[0]] * m[0]));
    out[0] = s > 0.f ? s : 0.f;
  }
};

// The op with skimage's stain matrix.
Hed make_hed();
// Stain j (0 hematoxylin, 1 eosin, 2 DAB) of make_hed().
HedStain make_hed_stain(int j);

}  // namespace tw::ops
