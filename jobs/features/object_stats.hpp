#pragma once
// One object's running sums while the scan passes over it, and the
// measurements made from them once it is complete (the definitions of
// skimage.measure.regionprops; docs/features.md).
//
// Moments are kept as exact integer sums (area, sum of x, y, x², y², xy),
// so they do not depend on the order in which rows or bands arrive, and the
// central moments come out of exact integer differences: n·Σx² − (Σx)² has
// no cancellation. Intensities are per-channel (count, mean, M2) merged run
// by run in raster order (Chan et al.'s pairwise update), which is stable and,
// the order being fixed, identical for any tile size or budget.
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "jobs/features/convex_hull.hpp"

namespace tw::features {

using Int128 = __int128;

// Perimeter pixel classes of skimage's perimeter(neighborhood=4): a border
// pixel's 3x3 code 1 + 2·(border 4-neighbours) + 10·(border diagonal
// neighbours) weighs 1 (codes 5, 7, 15, 17, 25, 27), sqrt(2) (21, 33) or
// (1 + sqrt(2)) / 2 (13, 23), else 0. Counting classes keeps the sum exact.
enum PerimeterClass : int { kPerimOne = 0, kPerimSqrt2 = 1, kPerimHalf = 2, kPerimNone = 3 };
int perimeter_class(int code);

// Running (count, mean, M2) of one channel's values.
struct RunningMoments {
  double mean = 0, m2 = 0;
  // Merges a part of nb values (mean_b, m2_b) into this one of na values.
  void merge(int64_t na, int64_t nb, double mean_b, double m2_b) {
    const int64_t n = na + nb;
    if (na == 0) {  // what the formula below gives then, but for infinities
      mean = mean_b, m2 = m2_b;
      return;
    }
    if (!std::isfinite(mean) || !std::isfinite(mean_b)) {
      // An infinity or NaN among the values: the mean is what their sum
      // gives (inf, -inf or NaN, as numpy's), the spread NaN. The formula
      // below made inf - inf of a mean of inf and a finite one.
      mean = (static_cast<double>(na) * mean + static_cast<double>(nb) * mean_b) / static_cast<double>(n);
      m2 = std::numeric_limits<double>::quiet_NaN();
      return;
    }
    const double delta = mean_b - mean;
    mean += delta * (static_cast<double>(nb) / static_cast<double>(n));
    m2 += m2_b + delta * delta * (static_cast<double>(na) * static_cast<double>(nb) / static_cast<double>(n));
  }
};

struct ObjectAccumulator {
  uint32_t label = 0;
  int64_t first_x = 0, first_y = 0;        // its first pixel in raster order
  int64_t x0 = 0, y0 = 0, x1 = 0, y1 = 0;  // bounding box, x1 and y1 exclusive
  int64_t n = 0;
  Int128 sx = 0, sy = 0, sxx = 0, syy = 0, sxy = 0;
  int64_t perim[3] = {0, 0, 0};
  RowHull hull;
  std::vector<RunningMoments> intensity;  // per channel (+ hematoxylin)
  // The row being merged and the object's extremes in it (for the hull).
  int64_t cur_row = -1, row_min = 0, row_max = 0;
  bool finished = false;  // a row has passed without it: complete

  // Kept by the serial pass that assigns runs to objects (features_job.cpp):
  int64_t seen_row = -1;   // the last row with a run of it
  int64_t runs_total = 0;  // its runs so far (for the size of its outline)
  int64_t band_runs = 0;   // its runs in the rows being merged
  size_t band_first = 0;   // where they start in that pass's list

  // Adds the run [xa, xb) of row y.
  void add_run(int64_t y, int64_t xa, int64_t xb);
  // Ends the row being merged (into the hull).
  void end_row();
};

struct ObjectRecord {
  uint32_t label = 0;
  int64_t area = 0;
  double centroid_x = 0, centroid_y = 0;
  int64_t bbox_x0 = 0, bbox_y0 = 0, bbox_x1 = 0, bbox_y1 = 0;
  double perimeter = 0, equivalent_diameter = 0;
  double major_axis = 0, minor_axis = 0, orientation = 0, eccentricity = 0;
  int64_t area_convex = 0;
  double solidity = 0;
  std::vector<double> mean, std;  // per intensity channel (+ hematoxylin)
};

// The measurements of a complete object (its hull is consumed).
ObjectRecord measure(ObjectAccumulator& acc);

}  // namespace tw::features
