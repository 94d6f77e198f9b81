#pragma once
// A pipeline's input of JPEG tiles, decoded the split way for the GPU ops
// that read it (engine/jpeg_coefs.hpp): the CPU only entropy-decodes the
// tiles a read covers (about half a full decode's time), the GPU does the
// IDCT, upsampling and colour conversion with libjpeg-turbo's arithmetic,
// straight into the chain's device memory — the pixels the CPU decoder
// makes. Readers on the host get the input's own (CPU) decode.
#include <memory>

#include "engine/tile_source.hpp"

namespace tw {

// `src` itself where the split decode does not apply: no CUDA, no raw JPEG
// tiles at level 0, a layout the GPU cannot finish (engine/jpeg_coefs.hpp),
// or pixels that are not the tiles' own (8-bit gray or RGB).
std::shared_ptr<const TileSource> make_split_jpeg_input(std::shared_ptr<const TileSource> src, int device);

// The tiles such an input has entropy-decoded for the GPU so far; -1 for any
// other source (for --report).
int64_t split_jpeg_tiles(const TileSource& src);

}  // namespace tw
