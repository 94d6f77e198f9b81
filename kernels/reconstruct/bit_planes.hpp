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

// One row of n bytes as words (bit i of out[k]: byte 32k + i nonzero; with
// `zeros`, zero), words up to `words` beyond them zero: a plane row from
// word 1 on.
void pack_row_bits(const uint8_t* p, int64_t n, uint32_t* out, int64_t words, bool zeros);

// Bytes x0 .. x0 + n - 1 of a plane row (word k + 1 holds x = 32k ..):
// `on` where the bit is set, `off` where not.
void unpack_row_bits(const uint32_t* row, int64_t x0, int64_t n, uint8_t* out, uint8_t on, uint8_t off);

// Whether every one of the n bytes is 0 or 255 (a binary image's).
bool bytes_binary(const uint8_t* p, int64_t n);

// Writes 255 (with `zeros`: 0) into j at every core pixel set in `after` but
// not in `before` (pixels only turn on); returns how many. Rows in parallel.
int64_t unpack_new_bits(const uint32_t* before, const uint32_t* after, const ImageView& j, const Rect& core,
                        bool zeros = false);

}  // namespace tw
