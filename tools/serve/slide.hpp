#pragma once
// One slide the server was given: its reader, its name in URLs, its Deep Zoom
// grid, and the renderers of its pixels and (with --overlay) of its labels'
// outlines, tile by tile.
#include <array>
#include <memory>
#include <string>
#include <vector>

#include "engine/tile_source.hpp"
#include "io/dzi/dzi_geometry.hpp"
#include "tools/serve/level_renderer.hpp"
#include "tools/serve/lru_cache.hpp"
#include "tools/serve/polygon_store.hpp"

namespace tw::serve {

class Slide {
 public:
  // labels: null, or a u32 label image of the slide's size; polygons: null,
  // or the rings of a GeoJSON overlay (at most one of the two). Throws
  // InputError (one line naming the file) for pixels the viewer cannot show.
  Slide(std::string name, SourcePtr src, SourcePtr labels, std::shared_ptr<const PolygonStore> polygons,
        DziGeometry geometry, LruCache<Image>* blocks);

  const std::string& name() const { return name_; }
  const SourceInfo& info() const { return src_->info(); }
  const DziGeometry& geometry() const { return geometry_; }
  bool has_overlay() const { return labels_ != nullptr || polygons_ != nullptr; }
  // True when (level, col, row) is a tile of the grid.
  bool has_tile(int64_t level, int64_t col, int64_t row) const;

  // The tile's pixels (8-bit gray or RGB, as the slide).
  Image tile(int level, int64_t col, int64_t row) const;
  // The tile of the outline layer: RGBA, `color` on the outline pixels,
  // transparent elsewhere. Outline pixels of labels: kernels/overlay's rule
  // at that level (a labelled pixel with a 4-neighbour of another label or
  // outside the image); of polygons: PolygonStore::draw's ring edges.
  Image outline_tile(int level, int64_t col, int64_t row, std::array<uint8_t, 3> color) const;

 private:
  std::string name_;
  SourcePtr src_, labels_;
  std::shared_ptr<const PolygonStore> polygons_;
  DziGeometry geometry_;
  std::unique_ptr<LevelRenderer> pixels_, label_levels_;
};

// URL-safe slide names from the paths given: the file's name without its
// extension (.ome.tif counts as one), characters other than letters, digits,
// '.', '_' and '-' made '-', and -2, -3, ... added to repeats.
std::vector<std::string> slide_names(const std::vector<std::string>& specs);

// A slide name as the router accepts it: 1..200 of [A-Za-z0-9._-], not
// starting with '.'.
bool valid_slide_name(const std::string& s);

}  // namespace tw::serve
