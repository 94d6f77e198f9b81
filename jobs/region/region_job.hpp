#pragma once
// One image out of a slide, as a PNG or JPEG file: `tilewave region` (a
// rectangle of one level, as openslide-write-png cuts it) and
// `tilewave thumbnail` (the whole slide scaled to a size, as vips thumbnail).
#include <cstdint>
#include <string>

#include "engine/image.hpp"
#include "engine/tile_source.hpp"

namespace tw {

struct RegionRequest {
  int level = 0;
  int64_t x = 0, y = 0;  // top left in level-0 pixels (openslide's convention)
  int64_t w = 0, h = 0;  // size in the level's pixels
};

// The pixels of r; what lies outside the level is 0 (openslide's transparent
// pixels, alpha dropped). Refuses (InputError) before reading a region whose
// pixels need more than `memory`, a level that does not exist, an empty size.
// The level's origin is floor(x / downsample) (openslide reads the same
// pixels where x and y are multiples of the downsample; elsewhere it
// interpolates).
Image read_region(const TileSource& src, const RegionRequest& r, size_t memory);

// The whole slide with its longer side `size` pixels (the other rounded,
// at least 1), from the smallest level at least that large, reduced by area
// averaging (each output pixel the mean of the level's pixels it covers,
// weighted by the covered fraction). Streams the level by rows, so its
// memory is the output and a band of rows. Never enlarges: size above
// level 0's longer side is refused.
Image make_thumbnail(const TileSource& src, int64_t size, size_t memory);

// Writes img as OUT.png (8/16-bit, 1 to 4 channels) or OUT.jpg/.jpeg (8-bit
// gray or RGB) under a temporary name, renamed into place. InputError for an
// unknown suffix or pixels the format cannot hold, before anything is written.
void check_image_file_output(const std::string& path, PixelFormat fmt);
void write_image_file(const std::string& path, const ImageView& img, int jpeg_quality);

}  // namespace tw
