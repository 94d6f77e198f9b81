#include "jobs/pyramid/pad_tile.hpp"

#include <cstring>

namespace tw {

void pad_tile(const ImageView& band, const Rect& tile, int64_t level_w, int64_t level_h, Image& out) {
  const Rect valid = tile.intersect(Rect(0, 0, level_w, level_h)).intersect(band.rect);
  TW_ASSERT(!valid.empty());
  if (out.empty() || !out.can_hold(band.fmt, tile))
    out = Image(band.fmt, tile);
  else
    out.reshape(band.fmt, tile);
  const size_t bpp = band.fmt.bytes_per_pixel();
  for (int64_t y = tile.y; y < tile.y1(); ++y) {
    const int64_t sy = std::min(y, valid.y1() - 1);
    uint8_t* o = out.row_bytes(y);
    std::memcpy(o, band.ptr_bytes(valid.x, sy), static_cast<size_t>(valid.w) * bpp);
    for (int64_t x = valid.w; x < tile.w; ++x) std::memcpy(o + x * bpp, o + (valid.w - 1) * bpp, bpp);
  }
}

}  // namespace tw
