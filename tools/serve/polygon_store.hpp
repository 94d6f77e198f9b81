#pragma once
// The rings of a GeoJSON overlay (docs/features.md: QuPath detections,
// Polygon/MultiPolygon in level-0 pixel-corner coordinates) held compactly
// for drawing outlines tile by tile: vertices as int32 fixed point, a
// bounding box per ring and a grid of buckets over the slide. A whole
// slide's nuclei.geojson is ~1 GB of text for 600k nuclei; it is read
// streaming (nlohmann's SAX interface), never as a DOM, and the store's bytes
// count against the server's --memory.
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "engine/image.hpp"

namespace tw::serve {

class PolygonStore {
 public:
  // Vertices are kept in 1/256 pixel: the features' integer corners and
  // QuPath's halves are exact, and int32 reaches 8.3 million pixels.
  static constexpr int kFracBits = 8;
  // Level-0 pixels per side of a grid bucket: a few nuclei each.
  static constexpr int64_t kCell = 256;

  // Reads `path` for a slide of width x height pixels. Throws InputError
  // (one line naming the file) for what is not a FeatureCollection (or
  // array) of Polygon/MultiPolygon features with closed rings of finite
  // coordinates on the slide, and for a store that would exceed `budget`
  // bytes (checked while reading, so no more is ever allocated).
  static PolygonStore load(const std::string& path, int64_t width, int64_t height, size_t budget);

  size_t rings() const { return ring_start_.empty() ? 0 : ring_start_.size() - 1; }
  size_t vertices() const { return xy_.size() / 2; }
  size_t polygons() const { return polygons_; }
  size_t bytes() const;  // what the store holds (capacities, not sizes)

  // Draws the ring edges at level k (level-0 coordinates divided by 2^k,
  // vertex pixel = floor), each edge by Bresenham's line as
  // skimage.draw.line draws it, clipped to `out`'s rect: `color` with alpha
  // 255 on the outline, `out` (RGBA) untouched elsewhere.
  void draw(int k, std::array<uint8_t, 3> color, const ImageView& out) const;

 private:
  friend class GeoJsonSax;
  // The buckets a ring's box (fixed point) covers, and their count.
  static size_t cells_of(const int32_t box[4], int64_t* x0 = nullptr, int64_t* y0 = nullptr, int64_t* x1 = nullptr,
                         int64_t* y1 = nullptr);
  void build_index();

  std::vector<int32_t> xy_;           // x0 y0 x1 y1 ... (fixed point)
  std::vector<uint32_t> ring_start_;  // ring i: vertices [start[i], start[i+1])
  std::vector<int32_t> box_;          // per ring: x0 y0 x1 y1 (fixed point, inclusive)
  std::vector<uint32_t> cell_start_;  // bucket c: ring ids [start[c], start[c+1])
  std::vector<uint32_t> cell_rings_;
  int64_t cols_ = 0, rows_ = 0;  // buckets
  size_t polygons_ = 0;
};

}  // namespace tw::serve
