#pragma once
// Computed sources (ops, maps) cut a large read into pieces, so that what a
// piece holds at once — its input with the halo, the op's intermediates —
// stays near a fixed size whatever the read: a pyramid writer reads a band
// of 256 rows across the whole image, and a chain of ops would otherwise
// hold that band in every op's input format at once, per reading thread
// (a float32 band of a 100k-pixel-wide slide is 100 MB).
#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "engine/image.hpp"

namespace tw {

constexpr size_t kReadPieceBytes = size_t{4} << 20;

// Calls fn(piece) for pieces of dst, in row-major order, each at most
// `piece_bytes` of `bytes_per_pixel` including a halo of `halo` pixels
// (at least 64 pixels wide and 1 row high).
template <class Fn>
void for_each_read_piece(const ImageView& dst, size_t bytes_per_pixel, int halo, Fn&& fn,
                         size_t piece_bytes = kReadPieceBytes) {
  const Rect r = dst.rect;
  const int64_t bpp = static_cast<int64_t>(std::max<size_t>(bytes_per_pixel, 1)), H2 = 2 * int64_t{halo};
  const int64_t budget = static_cast<int64_t>(piece_bytes) / bpp;  // pixels a piece may touch
  if ((r.w + H2) * (r.h + H2) <= budget) {
    fn(dst);
    return;
  }
  // Rows per piece: as many as keep a piece at least 512 pixels wide.
  const int64_t rows = std::clamp<int64_t>(budget / (512 + H2) - H2, 1, r.h);
  const int64_t cols = std::max<int64_t>(64, budget / (rows + H2) - H2);
  for (int64_t y = r.y; y < r.y1(); y += rows)
    for (int64_t x = r.x; x < r.x1(); x += cols)
      fn(dst.sub(Rect(x, y, std::min(cols, r.x1() - x), std::min(rows, r.y1() - y))));
}

}  // namespace tw
