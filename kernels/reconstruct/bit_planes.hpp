#pragma once
// A tile of a binary image as bit planes, in the layout of the GPU's binary
// reconstruction (reconstruct_binary_cuda.cu): rows of `pitch` 32-bit words,
// row ry holding y = core.y + ry - 1 (rows 0 and h + 1 are the tile's ring),
// word k + 1 holding x = core.x + 32k .. +31 (bit = x % 32), word 0 only the
// ring pixel x = core.x - 1 (bit 31). Packing on the host, 32 pixels a word,
// moves an eighth of the bytes across PCIe (from pinned memory).
#include <cstdint>

#include "engine/image.hpp"

namespace tw {

// Words per row for a core `w` pixels wide.
inline int bit_plane_pitch(int64_t w) {
  return static_cast<int>((w + 31) / 32 + 2);
}

// on: j (the core with its one-pixel ring) nonzero; allowed: i (the core)
// nonzero, 0 on the ring and beyond. Rows in parallel. With `zeros`, a bit
// is set where the byte is 0 instead: reconstruction by erosion of a binary
// image is the dilation of its complement (fill-holes' background floods in
// from the border), so one kernel serves both.
void pack_tile_bits(const ImageView& j, const ImageView& i, const Rect& core, uint32_t* on, uint32_t* allowed,
                    bool zeros = false);

// Writes 255 (with `zeros`: 0) into j at every core pixel set in `after` but
// not in `before` (pixels only turn on); returns how many. Rows in parallel.
int64_t unpack_new_bits(const uint32_t* before, const uint32_t* after, const ImageView& j, const Rect& core,
                        bool zeros = false);

}  // namespace tw
