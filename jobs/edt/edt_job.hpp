#pragma once
// The exact EDT of a whole slide, streamed (kernels/edt/edt.hpp has the
// math): the column pass bottom-up into a raster of distances below, then
// top-down with the row pass, band by band; memory O(width x band).
#include <memory>
#include <string>

#include "engine/raw_raster.hpp"
#include "kernels/edt/edt.hpp"

namespace tw {

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

}  // namespace tw
