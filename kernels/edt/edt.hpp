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
#include <memory>
#include <string>

#include "engine/raw_raster.hpp"

namespace tw {

struct EdtParams {
  double threshold = 0;  // foreground: value > threshold (RGB: BT.601 luma)
};

struct EdtStats {
  double seconds = 0;
  double read_seconds = 0;  // of `seconds`: reading (and decoding) the input
  uint64_t foreground = 0, background = 0;
  // With CUDA: device time of the kernels and of the copies, and how many
  // bands of rows the image was cut into (1: it fitted on the device).
  double gpu_kernel_seconds = 0, gpu_transfer_seconds = 0;
  int64_t gpu_bands = 0;
};

// No background anywhere: every distance is +infinity (documented result;
// scipy returns distances to a point outside the image instead).
// The result is a float32 raster: in memory when it fits a quarter of
// `memory`, else in a scratch file beside scratch_near.
std::shared_ptr<const TileSource> euclidean_distance(const TileSource& src, const EdtParams& p, size_t memory,
                                                    const std::string& scratch_near, EdtStats* stats = nullptr);

// One row of the row pass: g2[i] = squared column distance (or a value above
// any real one where the column has no background);
// out[u] = min_i (u - i)^2 + g2[i]. s and t are scratch of n entries.
void edt_row(const int64_t* g2, int64_t n, int64_t inf2, int64_t* out, int64_t* s, int64_t* t);

}  // namespace tw
