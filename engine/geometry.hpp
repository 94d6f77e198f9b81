#pragma once
// Integer geometry in global pixel coordinates of one pyramid level.
#include <algorithm>
#include <cstdint>
#include <string>

namespace tw {

struct Rect {
  int64_t x = 0, y = 0, w = 0, h = 0;

  constexpr Rect() = default;
  constexpr Rect(int64_t x_, int64_t y_, int64_t w_, int64_t h_) : x(x_), y(y_), w(w_), h(h_) {}

  constexpr int64_t x1() const { return x + w; }  // exclusive
  constexpr int64_t y1() const { return y + h; }  // exclusive
  constexpr bool empty() const { return w <= 0 || h <= 0; }
  constexpr int64_t area() const { return empty() ? 0 : w * h; }
  constexpr bool contains(int64_t px, int64_t py) const { return px >= x && px < x1() && py >= y && py < y1(); }
  constexpr bool contains(const Rect& r) const {
    return r.empty() || (r.x >= x && r.y >= y && r.x1() <= x1() && r.y1() <= y1());
  }
  Rect grown(int64_t halo) const { return {x - halo, y - halo, w + 2 * halo, h + 2 * halo}; }
  Rect intersect(const Rect& o) const {
    const int64_t nx = std::max(x, o.x), ny = std::max(y, o.y);
    const int64_t nx1 = std::min(x1(), o.x1()), ny1 = std::min(y1(), o.y1());
    if (nx1 <= nx || ny1 <= ny) return {nx, ny, 0, 0};
    return {nx, ny, nx1 - nx, ny1 - ny};
  }
  bool operator==(const Rect& o) const { return x == o.x && y == o.y && w == o.w && h == o.h; }
  bool operator!=(const Rect& o) const { return !(*this == o); }
  std::string str() const;
};

// A raster of width x height cut into tiles of tile_w x tile_h; the last
// column and row of tiles may be partial.
struct TileGrid {
  int64_t width = 0, height = 0;
  int64_t tile_w = 0, tile_h = 0;

  int64_t cols() const { return tile_w > 0 ? (width + tile_w - 1) / tile_w : 0; }
  int64_t rows() const { return tile_h > 0 ? (height + tile_h - 1) / tile_h : 0; }
  int64_t count() const { return cols() * rows(); }
  Rect bounds() const { return {0, 0, width, height}; }
  // The tile's rectangle clipped to the raster.
  Rect tile_rect(int64_t tx, int64_t ty) const {
    return Rect(tx * tile_w, ty * tile_h, tile_w, tile_h).intersect(bounds());
  }
  // The tile's full (unclipped) rectangle, as stored in a tiled file.
  Rect tile_full_rect(int64_t tx, int64_t ty) const { return {tx * tile_w, ty * tile_h, tile_w, tile_h}; }
  // First and one-past-last tile index (per axis) that overlaps r.
  int64_t col_of(int64_t px) const { return px / tile_w; }
  int64_t row_of(int64_t py) const { return py / tile_h; }
};

inline int64_t ceil_div(int64_t a, int64_t b) {
  return (a + b - 1) / b;
}

}  // namespace tw
