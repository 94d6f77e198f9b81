#pragma once
// Level 0 of a JPEG-tiled input entropy-decoded on the GPU once, its
// coefficients then kept in device memory for every GPU read of the input
// (engine/cuda/split_jpeg_input.hpp). The GPU decodes a thread a tile
// (io/codec/jpeg_transform/jpeg_huffman_decode.hpp): one tile takes a
// thread milliseconds, tens of thousands of tiles in one launch take
// tens of milliseconds, so the whole level goes in launches of thousands
// of tiles, never a read's few tiles at a time (that was 4x slower than
// libjpeg on the CPU for the nuclei's slide). The CPU reads each tile's
// headers; a tile the GPU cannot decode (not one baseline scan) or gives up
// on (damage) is libjpeg's on the CPU, which reports damage as before.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>

#include "engine/jpeg_coefs.hpp"
#include "engine/tile_source.hpp"

namespace tw {

struct DeviceJpegCoefs {
  std::shared_ptr<uint8_t> mem;     // owns both arrays
  const int16_t* coefs = nullptr;   // tile (ty * across + tx): layout.coefs_per_tile() values
  const uint16_t* quant = nullptr;  // tile: layout.quant_per_tile() values
  int64_t across = 0, down = 0;
  int64_t gpu_tiles = 0, cpu_tiles = 0;  // entropy-decoded on each side
};

// Device memory level 0's coefficients take.
size_t device_jpeg_coefs_bytes(const TileSource& src, const JpegCoefLayout& layout);

// Decodes level 0 of `src` (whose raw tiles are laid out as `layout`) into
// device memory of `device`. Nothing where that memory would pass
// `device_budget` or the device refuses it, or where a tile is not laid out
// so (the caller decodes as before); host memory in use stays near
// `host_budget` (tiles go up in batches of that many stream bytes). Throws
// InputError on damaged tiles.
std::optional<DeviceJpegCoefs> decode_jpeg_level0_on_device(const TileSource& src, const JpegCoefLayout& layout,
                                                            int device, size_t device_budget, size_t host_budget);

}  // namespace tw
