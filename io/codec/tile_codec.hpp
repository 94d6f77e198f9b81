#pragma once
// Tile compression done outside libtiff, so tiles are compressed in parallel
// and written raw (libtiff's own compression path is serial).
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "engine/codec_kind.hpp"
#include "engine/image.hpp"
#include "engine/jpeg_coefs.hpp"

namespace tw {

struct EncodeSettings {
  Codec codec = Codec::kJpeg;
  int quality = 90;  // JPEG 1..100
  ChromaSubsampling subsampling = ChromaSubsampling::k420;
  int level = -1;         // deflate 1..12 / zstd 1..22; -1 = codec default
  bool predictor = true;  // horizontal differencing for the lossless codecs
  PixelFormat fmt;
  // Whether 3 or 4 channels are RGB (and a 4th its alpha), as they are by
  // default; false for channels of their own (fluorescence, a 4-channel
  // multiplex), stored as MinIsBlack with unspecified extra samples. Any
  // other count of channels is always stored that way.
  bool color = true;
  int64_t tile_w = 256, tile_h = 256;

  void validate() const;  // throws InputError (e.g. JPEG on 16-bit)
};

// One encoder per thread: encoders keep codec state between tiles.
class TileEncoder {
 public:
  virtual ~TileEncoder() = default;
  // tile: exactly tile_w x tile_h pixels of fmt. out is overwritten.
  virtual void encode(const ImageView& tile, std::vector<uint8_t>& out) = 0;
  // JPEG only (JpegEncoder::encode_coefficients); others throw.
  virtual void encode_coefficients(const int16_t* coefs, std::vector<uint8_t>& out);
};

// The split encode's spec for tiles from make_encoder(s): JPEG of square
// tiles (a multiple of 16) only.
std::optional<JpegCoefSpec> jpeg_coef_spec_for(const EncodeSettings& s);

std::unique_ptr<TileEncoder> make_encoder(const EncodeSettings& s);

// The TIFF tags a directory needs for tiles from make_encoder(s).
RawTileFormat tiff_format_for(const EncodeSettings& s);

// TIFF predictor 2 (horizontal differencing), in place, per row of a tile.
void apply_horizontal_predictor(uint8_t* data, int64_t w, int64_t h, size_t stride, PixelFormat fmt);

}  // namespace tw
