#pragma once
// Helpers for tests of the op API: a result read back in tiles of any size,
// and an in-memory source holding a copy of an image.
#include <algorithm>
#include <memory>

#include "engine/memory_source.hpp"
#include "engine/tile_source.hpp"

namespace tw::test {

// The whole level 0 of s, read in tiles of `tile` pixels (0: in one read).
inline Image read_tiled(const TileSource& s, int64_t tile = 0) {
  const LevelInfo& l0 = s.level(0);
  Image out(s.info().fmt, l0.bounds());
  if (tile <= 0) tile = std::max(l0.width, l0.height);
  for (int64_t y = 0; y < l0.height; y += tile)
    for (int64_t x = 0; x < l0.width; x += tile)
      s.read(0, out.view().sub(Rect(x, y, tile, tile).intersect(l0.bounds())));
  return out;
}

inline std::shared_ptr<const TileSource> source_of(const Image& img) {
  Image c(img.fmt(), img.rect());
  copy_overlap(img.view(), c.view());
  return std::make_shared<MemorySource>(std::move(c));
}

}  // namespace tw::test
