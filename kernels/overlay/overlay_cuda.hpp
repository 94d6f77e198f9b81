#pragma once
// The overlay on a GPU (overlay_cuda.cu; overlay_cuda_none.cpp where CUDA is
// not built): for an image made on the device — a slide's JPEG tiles decoded
// the split way (engine/cuda/split_jpeg_input.hpp), a GPU chain's result —
// the image is made there and the outlines drawn there, so the host only
// entropy-decodes the slide instead of decoding it whole and drawing. The
// labels are read on the host (with their one-pixel halo) and sent up. The
// pixels are the CPU's (overlay.hpp) bit for bit.
#include <array>
#include <cstdint>
#include <memory>

#include "engine/tile_source.hpp"

namespace tw {

// image: 8-bit gray or RGB; labels: one channel of integers; one size
// (checked by the caller).
std::shared_ptr<const TileSource> make_overlay_cuda(std::shared_ptr<const TileSource> image,
                                                    std::shared_ptr<const TileSource> labels,
                                                    std::array<uint8_t, 3> color, int device);

}  // namespace tw
