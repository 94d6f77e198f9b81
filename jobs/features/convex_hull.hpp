#pragma once
// The convex hull of an object's pixels as scikit-image's
// convex_hull_image(offset_coordinates=True, include_borders=True) builds
// it, for regionprops' area_convex: the hull of every pixel's "diamond" (the
// midpoints of its four edges), filled with the pixel centres inside it or
// on it. Coordinates are doubled so that the diamonds' vertices are
// integers (pixel (x, y) is (2x, 2y)); the hull is built and filled in exact
// integer arithmetic, where skimage uses qhull and a floating point-in-polygon
// test (docs/features.md says where the two can differ).
//
// Rows arrive in increasing order, so Andrew's monotone chain runs
// incrementally with the row as its sweep axis: an object open across many
// bands keeps only its two convex chains (O(n^(2/3)) vertices for a digital
// convex set of n pixels), and the hull of a union is the hull of its parts'.
#include <cstddef>
#include <cstdint>
#include <vector>

namespace tw::features {

class RowHull {
 public:
  // The object's pixels in row y span columns [x0, x1] (its leftmost and
  // rightmost pixel in that row; pixels between them do not change the
  // hull). Rows must come in strictly increasing order.
  void add_row(int64_t y, int64_t x0, int64_t x1);
  // Pixel centres inside or on the hull: skimage's area_convex. Call after
  // the last row.
  int64_t filled_area();
  size_t bytes() const { return (lower_.capacity() + upper_.capacity()) * sizeof(Point); }

 private:
  struct Point {
    int64_t u, v;  // u = doubled row (the sweep axis), v = doubled column
  };
  void push(int64_t u, int64_t v);
  void push_pair(int64_t u, int64_t v0, int64_t v1);
  void flush_pending();

  std::vector<Point> lower_, upper_;  // min-v and max-v chains, u non-decreasing
  // The bottom vertices of the last row (doubled row 2y+1) wait for the next
  // row's top vertices on the same doubled row, so points stay sorted.
  bool pending_ = false;
  int64_t pu_ = 0, pv0_ = 0, pv1_ = 0;
};

}  // namespace tw::features
