#include "kernels/hed/hed.hpp"

#include <cmath>

namespace tw::ops {

Hed make_hed() {
  // skimage.color.colorconv.rgb_from_hed: rows are the stains' RGB optical
  // densities (hematoxylin, eosin, DAB).
  const double a[3][3] = {{0.65, 0.70, 0.29}, {0.07, 0.99, 0.11}, {0.27, 0.57, 0.78}};
  const double det = a[0][0] * (a[1][1] * a[2][2] - a[1][2] * a[2][1]) -
                     a[0][1] * (a[1][0] * a[2][2] - a[1][2] * a[2][0]) +
                     a[0][2] * (a[1][0] * a[2][1] - a[1][1] * a[2][0]);
  double inv[3][3];
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) {
      // Cofactor of a[j][i] over det: the adjugate's (i, j) entry.
      const int r0 = (j + 1) % 3, r1 = (j + 2) % 3, c0 = (i + 1) % 3, c1 = (i + 2) % 3;
      inv[i][j] = (a[r0][c0] * a[r1][c1] - a[r0][c1] * a[r1][c0]) / det;
    }
  Hed h{};
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) h.m[3 * i + j] = static_cast<float>(inv[i][j]);
  const double adjust = std::log(1e-6);
  for (int v = 0; v < 256; ++v) h.log_od[v] = static_cast<float>(std::log(std::max(v / 255.0, 1e-6)) / adjust);
  return h;
}

HedStain make_hed_stain(int j) {
  const Hed h = make_hed();
  HedStain s{};
  for (int v = 0; v < 256; ++v) s.log_od[v] = h.log_od[v];
  for (int i = 0; i < 3; ++i) s.m[i] = h.m[3 * i + j];
  return s;
}

}  // namespace tw::ops
