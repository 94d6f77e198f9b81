#pragma once
// A pipeline's input of JPEG tiles, decoded the split way for the GPU ops
// that read it (engine/jpeg_coefs.hpp): the entropy decoding of the whole
// of level 0 at once on the GPU, its coefficients kept there
// (engine/cuda/device_jpeg_coefs.hpp), or where they do not fit, on the CPU
// for the tiles a read covers (about half a full decode's time); then the
// IDCT, upsampling and colour conversion on the GPU with libjpeg-turbo's
// arithmetic, straight into the chain's device memory — the pixels the CPU
// decoder makes. Readers on the host get the same where level 0 is on the
// device (copied down), else the input's own (CPU) decode.
#include <cstddef>
#include <memory>

#include "engine/tile_source.hpp"

namespace tw {

// `src` itself where the split decode does not apply: no CUDA, no raw JPEG
// tiles at level 0, a layout the GPU cannot finish (engine/jpeg_coefs.hpp),
// or pixels that are not the tiles' own (8-bit gray or RGB).
// Level 0's coefficients are decoded on the GPU at once and kept there where
// they take at most `device_budget` bytes (host memory for that near
// `host_budget`); else the CPU entropy-decodes each read's tiles. Throws
// InputError on a damaged tile found then.
std::shared_ptr<const TileSource> make_split_jpeg_input(std::shared_ptr<const TileSource> src, int device,
                                                        size_t device_budget, size_t host_budget);

// The tiles such an input has entropy-decoded on the CPU for the GPU so
// far; -1 for any other source (for --report).
int64_t split_jpeg_tiles(const TileSource& src);
// The tiles it had the GPU entropy-decode (level 0 kept on the device); -1
// for any other source.
int64_t split_jpeg_gpu_decoded_tiles(const TileSource& src);

}  // namespace tw
