#pragma once
// The parallel half of the features scan: a band of label rows cut into runs
// of equal non-zero labels, each run with its pixels' perimeter classes
// (skimage's 4-neighbourhood perimeter, which needs two rows and columns of
// halo) and its intensity statistics. Rows are independent, so they run in
// parallel; features_job.cpp assigns them to their objects in raster order and
// adds each object's runs up in that order (objects in parallel).
#include <cstdint>
#include <vector>

#include "engine/image.hpp"
#include "kernels/hed/hed.hpp"

namespace tw::features {

struct LabelRun {
  uint32_t label = 0;
  int32_t perim[3] = {0, 0, 0};  // pixels per PerimeterClass
  int64_t x0 = 0, x1 = 0;        // [x0, x1)
};

class RowScanner {
 public:
  // stat channels: every channel of an intensity image of format `ifmt`
  // (channels 0 when there is none), then hematoxylin when `hed`.
  RowScanner(int64_t width, PixelFormat ifmt, bool has_intensity, bool hed);
  int stat_channels() const { return stat_channels_; }
  // Bytes of one band row's pixels (labels with halo, border flags,
  // intensity) and of one run (LabelRun and its statistics), for budgets.
  size_t pixel_bytes_per_row() const;
  size_t bytes_per_run() const;

  // labels: u32 over rows [y0-2, y1+2) and columns [-2, width+2) (zero
  // outside the image). Finds the border pixels of rows [y0-1, y1+1) and
  // counts the runs of each row of [y0, y1) into counts (rows in parallel).
  void prepare(const ImageView& labels, int64_t y0, int64_t y1, std::vector<int64_t>& counts);
  // The runs of rows [s0, s1) of the prepared band, rows in parallel: row
  // s0 + i's into runs[offsets[i], offsets[i + 1]), with their statistics
  // (stat_channels() pairs (mean, M2) per run) at stats[stat_channels() * 2 *
  // run index]. intensity (or null) holds rows [s0, s1), columns [0, width).
  void scan(const ImageView& labels, const ImageView* intensity, int64_t s0, int64_t s1, const int64_t* offsets,
            LabelRun* runs, double* stats) const;

 private:
  void scan_row(const ImageView& labels, const ImageView* intensity, int64_t y, LabelRun* runs, double* stats) const;
  int64_t width_;
  PixelFormat ifmt_;
  bool has_intensity_, hed_;
  int stat_channels_;
  ops::Hed hed_op_;
  std::vector<uint8_t> border_;  // border-pixel flags, rows [y0-1, y1+1) x columns [-1, width+1)
  int64_t border_y0_ = 0;
};

}  // namespace tw::features
