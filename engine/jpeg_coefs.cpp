#include "engine/jpeg_coefs.hpp"

namespace tw {

std::optional<JpegCoefLayout> gpu_jpeg_coef_layout(const RawTileFormat& f) {
  if (f.codec != Codec::kJpeg || f.bits_per_sample != 8 || f.tile_w != f.tile_h || f.tile_w % 16 != 0 || f.tile_w <= 0)
    return std::nullopt;
  JpegCoefLayout l;
  l.tile = f.tile_w;
  if (f.samples_per_pixel == 1 && f.photometric == 1) {
    l.components = 1;
    return l;
  }
  if (f.samples_per_pixel != 3 || f.photometric != 6) return std::nullopt;
  const bool s444 = f.subsampling_h == 1 && f.subsampling_v == 1;
  const bool s420 = f.subsampling_h == 2 && f.subsampling_v == 2;
  if (!s444 && !s420) return std::nullopt;
  l.components = 3;
  l.h_samp = l.v_samp = s420 ? 2 : 1;
  return l;
}

}  // namespace tw
