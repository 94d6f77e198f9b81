#pragma once
#include "engine/geometry.hpp"
#include "engine/image.hpp"

namespace tw {

// Copies the tile's pixels (clipped to the level) into a tile-sized buffer,
// repeating the last column and row into the padding: flat padding costs
// the encoders least and no reader ever shows it.
void pad_tile(const ImageView& band, const Rect& tile, int64_t level_w, int64_t level_h, Image& out);

}  // namespace tw
