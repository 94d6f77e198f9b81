#pragma once
// A binary image held as bits, one per pixel (a whole-image GPU
// reconstruction's result: jobs/reconstruct/binary_whole.hpp). A source
// that holds one offers it (TileSource::bit_plane()), so a GPU step that
// reads the image sends an eighth of a byte per pixel across PCIe and
// expands it there, instead of reading bytes on the host.
#include <cstdint>

namespace tw {

// The layout of kernels/reconstruct/bit_planes.hpp for a whole image: rows
// of `pitch` 32-bit words; the row of y is y + 1 (rows 0 and height + 1 are
// empty); word k + 1 holds x = 32k .. 32k + 31 (bit x % 32); word 0 and the
// bits past the width are zero. A pixel reads `on` where its bit is set,
// `off` where not.
struct BitPlane {
  const uint32_t* words = nullptr;  // host memory, (height + 2) * pitch words
  int64_t pitch = 0;
  int64_t width = 0, height = 0;
  uint8_t on = 255, off = 0;
};

}  // namespace tw
