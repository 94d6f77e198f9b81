#pragma once
// The parallel half of the features scan: a band of label rows cut into runs
// of equal non-zero labels, each run with its pixels' perimeter classes
// (skimage's 4-neighbourhood perimeter, which needs two rows and columns of
// halo) and its intensity statistics. Rows are independent, so they run in
// parallel; the serial merge (features_job.cpp) adds them up in raster order.
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

struct BandRuns {
  int64_t y0 = 0, rows = 0;
  std::vector<std::vector<LabelRun>> runs;  // per row
  // Per row, per run, per statistics channel: the run's (mean, M2).
  std::vector<std::vector<double>> stats;
};

class RowScanner {
 public:
  // stat channels: every channel of an intensity image of format `ifmt`
  // (channels 0 when there is none), then hematoxylin when `hed`.
  RowScanner(int64_t width, PixelFormat ifmt, bool has_intensity, bool hed);
  int stat_channels() const { return stat_channels_; }
  // Worst-case bytes per band row (every pixel its own run), for budgets.
  size_t bytes_per_row() const;

  // labels: u32 over rows [y0-2, y1+2) and columns [-2, width+2) (zero
  // outside the image); intensity (or null): rows [y0, y1), columns
  // [0, width).
  void scan(const ImageView& labels, const ImageView* intensity, int64_t y0, int64_t y1, BandRuns& out);

 private:
  void scan_row(const ImageView& labels, const ImageView* intensity, int64_t y, std::vector<LabelRun>& runs,
                std::vector<double>& stats) const;
  int64_t width_;
  PixelFormat ifmt_;
  bool has_intensity_, hed_;
  int stat_channels_;
  ops::Hed hed_op_;
  std::vector<uint8_t> border_;  // border-pixel flags, rows [y0-1, y1+1) x columns [-1, width+1)
  int64_t border_y0_ = 0;
};

}  // namespace tw::features
