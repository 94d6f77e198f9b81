#pragma once
// Exact Euclidean distance transform, out of core: the distance of every
// foreground pixel (value > threshold) to the nearest background pixel, as
// float32, equal to scipy.ndimage.distance_transform_edt.
//
// Meijster, Roerdink & Hesselink (2000): distances separate into a column
// pass (g = distance to the nearest background pixel in the same column) and
// a row pass (the lower envelope of the parabolas (x - i)^2 + g(i)^2), both
// exact in integers. Both stream: the column pass runs bottom-up keeping one
// value per column and stores g below each pixel in a scratch raster, then a
// top-down pass finishes g and runs the row pass band by band. Memory is
// O(width x band), whatever the height; a background pixel may be any number
// of tiles away. (Why not the seeds' Danielsson/IWPP propagation: it is not
// exact; see docs/ops/edt.md.)
#include <cstdint>

namespace tw {

struct EdtParams {
  double threshold = 0;  // foreground: value > threshold (RGB: BT.601 luma)
};

// One row of the row pass: g2[i] = squared column distance (or a value above
// any real one where the column has no background);
// out[u] = min_i (u - i)^2 + g2[i]. s and t are scratch of n entries.
void edt_row(const int64_t* g2, int64_t n, int64_t inf2, int64_t* out, int64_t* s, int64_t* t);

}  // namespace tw
