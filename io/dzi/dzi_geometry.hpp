#pragma once
// The Deep Zoom tile grid (Microsoft's DZI spec, as OpenSeadragon and
// `vips dzsave` use it): level L of max_level() + 1 is the image halved
// (rounding up) max_level() - L times, so level 0 is 1x1 and the last is
// full size; tile (col, row) of a level covers [col*T, (col+1)*T) widened by
// `overlap` pixels on each side that has a neighbour, clipped to the level.
// Shared by the DZI sink and the tile server so both cut the same grid.
#include <algorithm>
#include <cstdint>

#include "engine/geometry.hpp"

namespace tw {

struct DziGeometry {
  int64_t width = 0, height = 0;  // full resolution
  int64_t tile = 254;             // tile size without the overlap
  int64_t overlap = 1;

  // Levels are numbered from 0 (1x1) to max_level() (full size).
  int max_level() const {
    int l = 0;
    for (int64_t w = width, h = height; w > 1 || h > 1; w = (w + 1) / 2, h = (h + 1) / 2) ++l;
    return l;
  }
  // Size of level `level` (0..max_level()).
  int64_t level_width(int level) const { return halved(width, max_level() - level); }
  int64_t level_height(int level) const { return halved(height, max_level() - level); }
  int64_t cols(int level) const { return (level_width(level) + tile - 1) / tile; }
  int64_t rows(int level) const { return (level_height(level) + tile - 1) / tile; }
  // The pixels of tile (col, row) in its level's coordinates.
  Rect tile_rect(int level, int64_t col, int64_t row) const {
    const int64_t x0 = std::max<int64_t>(0, col * tile - (col > 0 ? overlap : 0));
    const int64_t y0 = std::max<int64_t>(0, row * tile - (row > 0 ? overlap : 0));
    const int64_t x1 = std::min(level_width(level), (col + 1) * tile + overlap);
    const int64_t y1 = std::min(level_height(level), (row + 1) * tile + overlap);
    return Rect{x0, y0, x1 - x0, y1 - y0};
  }

 private:
  static int64_t halved(int64_t n, int times) {
    for (int i = 0; i < times; ++i) n = (n + 1) / 2;
    return n;
  }
};

}  // namespace tw
