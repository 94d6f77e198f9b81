#pragma once
// Any level of a slide's REDUCE cascade (level k = level 0 halved k times,
// rounding up: the Deep Zoom level max_level() - k), made on request from the
// slide's own stored levels: from the stored level of the largest downsample
// not above k's, then the exact REDUCE steps (kernels/pyramid_reduce) down to
// k. Each step reads the 5-tap kernel's halo from the level above, so regions
// made apart join without seams, and on our own pyramids (whose stored
// levels ARE the cascade) a region of a stored level is its stored pixels.
// Levels that are not stored are made in aligned blocks kept in a shared
// cache, so the blocks of a level made from another are made once however
// many tiles below need them. u32 samples (labels) reduce by nearest.
#include <memory>
#include <string>
#include <vector>

#include "engine/tile_source.hpp"
#include "tools/serve/lru_cache.hpp"

namespace tw::serve {

class LevelRenderer {
 public:
  // id: unique among the renderers sharing `blocks` (it prefixes their keys).
  LevelRenderer(SourcePtr src, std::string id, LruCache<Image>* blocks);

  int levels() const { return static_cast<int>(sizes_.size()); }  // k = 0 .. levels() - 1
  Rect bounds(int k) const { return {0, 0, sizes_[k].first, sizes_[k].second}; }
  // The stored level that level k is read from, or -1 where k is made by REDUCE.
  int stored_level(int k) const { return stored_[k]; }
  // The pixels of r (inside bounds(k), non-empty) of level k.
  Image render(int k, const Rect& r) const;

 private:
  Image gather(int k, const Rect& r) const;  // r of level k, stored or from blocks
  std::shared_ptr<const Image> block(int k, int64_t bx, int64_t by) const;

  static constexpr int64_t kBlock = 512;
  SourcePtr src_;
  std::string id_;
  LruCache<Image>* blocks_;
  std::vector<std::pair<int64_t, int64_t>> sizes_;
  std::vector<int> stored_;
};

// The input rect of level k - 1 that REDUCE reads to make r of level k
// (2x - 2 .. 2x1 + 1 in each direction, clipped to the input level: the
// kernel mirrors the rest from inside it).
Rect reduce_input_rect(const Rect& r, int64_t in_w, int64_t in_h);

}  // namespace tw::serve
