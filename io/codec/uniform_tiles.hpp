#pragma once
// Tiles of one colour (glass around tissue, background of a mask, label 0
// around nuclei, a distance clipped at its top) are most of many slides'
// outputs. A lossless encoder gives the same bytes for the same tile, so a
// uniform tile's bytes are kept and reused instead of compressed again:
// deflate on a uniform 256² tile takes as long as on any other, the check
// costs a read of the tile.
#include <cstdint>
#include <memory>
#include <vector>

#include "engine/image.hpp"
#include "io/codec/tile_codec.hpp"

namespace tw {

// Whether every pixel of `tile` equals its first (byte for byte); if so,
// that pixel's bytes are in `pixel`.
bool uniform_tile(const ImageView& tile, std::vector<uint8_t>& pixel);

// `inner` (a deterministic encoder: the same tile, the same bytes) with the
// bytes of the last few uniform tiles it encoded kept, by size and pixel.
std::unique_ptr<TileEncoder> with_uniform_tile_cache(std::unique_ptr<TileEncoder> inner);

}  // namespace tw
