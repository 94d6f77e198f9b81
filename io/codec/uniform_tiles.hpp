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

// The compressed bytes of the last few uniform tiles an encoder made, by
// size and pixel (a few values recur: 0, 255, a clip; the oldest goes first).
class UniformTileBytes {
 public:
  // The bytes kept for a w x h tile of `pixel`, or nullptr.
  const std::vector<uint8_t>* find(int64_t w, int64_t h, const std::vector<uint8_t>& pixel) const;
  void keep(int64_t w, int64_t h, const std::vector<uint8_t>& pixel, const std::vector<uint8_t>& bytes);

 private:
  static constexpr size_t kMaxKept = 8;
  struct Entry {
    int64_t w, h;
    std::vector<uint8_t> pixel, bytes;
  };
  std::vector<Entry> kept_;
};

// `inner` (a deterministic encoder: the same tile, the same bytes) with the
// bytes of the last few uniform tiles it encoded kept, by size and pixel.
std::unique_ptr<TileEncoder> with_uniform_tile_cache(std::unique_ptr<TileEncoder> inner);

}  // namespace tw
