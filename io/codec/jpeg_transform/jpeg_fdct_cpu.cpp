#include <vector>

#include "engine/error.hpp"
#include "io/codec/jpeg_transform/jpeg_fdct.hpp"
#include "io/codec/jpeg_transform/jpeg_fdct_math.hpp"

namespace tw {

void jpeg_forward_tile(const ImageView& tile, const JpegCoefLayout& layout, const uint16_t* quant, int16_t* coefs) {
  const int64_t T = layout.tile;
  TW_ASSERT(tile.rect.w == T && tile.rect.h == T && tile.fmt.type == SampleType::kU8 &&
            tile.fmt.channels == layout.components);
  // Component planes, full size (chroma downsampled below).
  std::vector<std::vector<uint8_t>> planes(static_cast<size_t>(layout.components),
                                           std::vector<uint8_t>(static_cast<size_t>(T * T)));
  for (int64_t y = 0; y < T; ++y) {
    const uint8_t* p = tile.row_bytes(tile.rect.y + y);
    for (int64_t x = 0; x < T; ++x) {
      const size_t i = static_cast<size_t>(y * T + x);
      if (layout.components == 1) {
        planes[0][i] = p[x];
        continue;
      }
      int Y, cb, cr;
      jfdct::rgb_to_ycc(p[3 * x], p[3 * x + 1], p[3 * x + 2], Y, cb, cr);
      planes[0][i] = static_cast<uint8_t>(Y), planes[1][i] = static_cast<uint8_t>(cb),
      planes[2][i] = static_cast<uint8_t>(cr);
    }
  }
  for (int c = 0; c < layout.components; ++c) {
    const int64_t bw = layout.blocks_w(c), bh = layout.blocks_h(c);
    const bool down = c > 0 && layout.h_samp == 2;
    jfdct::Divisor div[64];
    for (int k = 0; k < 64; ++k) div[k] = jfdct::divisor_for(quant[c * 64 + k]);
    int16_t* out = coefs + layout.block_offset(c) * 64;
    for (int64_t by = 0; by < bh; ++by)
      for (int64_t bx = 0; bx < bw; ++bx) {
        int16_t d[64];
        for (int r = 0; r < 8; ++r)
          for (int k = 0; k < 8; ++k) {
            const int64_t y = by * 8 + r, x = bx * 8 + k;
            int v;
            if (down) {
              const std::vector<uint8_t>& P = planes[static_cast<size_t>(c)];
              const size_t i0 = static_cast<size_t>(2 * y * T + 2 * x), i1 = i0 + static_cast<size_t>(T);
              v = jfdct::average4(P[i0], P[i0 + 1], P[i1], P[i1 + 1], static_cast<int>(x));
            } else {
              v = planes[static_cast<size_t>(c)][static_cast<size_t>(y * T + x)];
            }
            d[r * 8 + k] = static_cast<int16_t>(v - 128);
          }
        jfdct::fdct_islow(d);
        int16_t* o = out + (by * bw + bx) * 64;
        for (int k = 0; k < 64; ++k) o[k] = jfdct::quantize(d[k], div[k]);
      }
  }
}

}  // namespace tw
