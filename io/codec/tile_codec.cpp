#include "io/codec/tile_codec.hpp"

#include <libdeflate.h>
#include <zstd.h>

#include <cstring>

#include "engine/error.hpp"
#include "io/codec/jpeg_codec.hpp"
#include "io/codec/lzw_encoder.hpp"
#include "io/codec/uniform_tiles.hpp"

namespace tw {
namespace {

constexpr uint16_t kTiffNone = 1, kTiffLzw = 5, kTiffJpeg = 7, kTiffDeflate = 8, kTiffZstd = 50000;
constexpr uint16_t kPhotoMinIsBlack = 1, kPhotoRgb = 2, kPhotoYCbCr = 6;

// Copies a tile into one contiguous buffer (rows packed), optionally
// applying the horizontal predictor: lossless codecs compress bytes, not rows.
void pack_tile(const ImageView& tile, bool predictor, std::vector<uint8_t>& buf) {
  predictor = predictor && tile.fmt.type != SampleType::kF32;
  const size_t row = tile.row_length_bytes();
  buf.resize(row * static_cast<size_t>(tile.rect.h));
  for (int64_t y = 0; y < tile.rect.h; ++y) std::memcpy(buf.data() + row * y, tile.row_bytes(tile.rect.y + y), row);
  if (predictor) apply_horizontal_predictor(buf.data(), tile.rect.w, tile.rect.h, row, tile.fmt);
}

class NoneEncoder : public TileEncoder {
 public:
  void encode(const ImageView& tile, std::vector<uint8_t>& out) override { pack_tile(tile, false, out); }
};

class DeflateEncoder : public TileEncoder {
 public:
  DeflateEncoder(int level, bool predictor) : c_(libdeflate_alloc_compressor(level)), predictor_(predictor) {
    if (!c_) throw InternalError("libdeflate_alloc_compressor failed");
  }
  ~DeflateEncoder() override { libdeflate_free_compressor(c_); }
  void encode(const ImageView& tile, std::vector<uint8_t>& out) override {
    pack_tile(tile, predictor_, buf_);
    // Into the encoder's own buffer, then only the bytes made into `out`:
    // sizing `out` to the bound zeroed (and faulted in) a tile's worth of
    // fresh memory for a few kilobytes of labels.
    z_.resize(libdeflate_zlib_compress_bound(c_, buf_.size()));
    const size_t n = libdeflate_zlib_compress(c_, buf_.data(), buf_.size(), z_.data(), z_.size());
    if (n == 0) throw InternalError("deflate compression failed");
    out.assign(z_.begin(), z_.begin() + static_cast<std::ptrdiff_t>(n));
  }

 private:
  libdeflate_compressor* c_;
  bool predictor_;
  std::vector<uint8_t> buf_, z_;
};

class ZstdEncoder : public TileEncoder {
 public:
  ZstdEncoder(int level, bool predictor) : c_(ZSTD_createCCtx()), level_(level), predictor_(predictor) {
    if (!c_) throw InternalError("ZSTD_createCCtx failed");
  }
  ~ZstdEncoder() override { ZSTD_freeCCtx(c_); }
  void encode(const ImageView& tile, std::vector<uint8_t>& out) override {
    pack_tile(tile, predictor_, buf_);
    z_.resize(ZSTD_compressBound(buf_.size()));  // as DeflateEncoder: only the bytes made go to `out`
    const size_t n = ZSTD_compressCCtx(c_, z_.data(), z_.size(), buf_.data(), buf_.size(), level_);
    if (ZSTD_isError(n)) throw InternalError(std::string("zstd compression failed: ") + ZSTD_getErrorName(n));
    out.assign(z_.begin(), z_.begin() + static_cast<std::ptrdiff_t>(n));
  }

 private:
  ZSTD_CCtx* c_;
  int level_;
  bool predictor_;
  std::vector<uint8_t> buf_, z_;
};

class LzwTileEncoder : public TileEncoder {
 public:
  explicit LzwTileEncoder(bool predictor) : predictor_(predictor) {}
  void encode(const ImageView& tile, std::vector<uint8_t>& out) override {
    pack_tile(tile, predictor_, buf_);
    lzw_.encode(buf_.data(), buf_.size(), out);
  }

 private:
  bool predictor_;
  LzwEncoder lzw_;
  std::vector<uint8_t> buf_;
};

class JpegTileEncoder : public TileEncoder {
 public:
  explicit JpegTileEncoder(const EncodeSettings& s)
      : enc_(s.fmt.channels, s.quality, s.subsampling, s.tile_w, s.tile_h) {}
  void encode(const ImageView& tile, std::vector<uint8_t>& out) override { enc_.encode(tile, out); }
  void encode_coefficients(const int16_t* coefs, std::vector<uint8_t>& out) override {
    enc_.encode_coefficients(coefs, out);
  }

 private:
  JpegEncoder enc_;
};

template <class T>
void predict_rows(uint8_t* data, int64_t w, int64_t h, size_t stride, int ch) {
  for (int64_t y = 0; y < h; ++y) {
    T* row = reinterpret_cast<T*>(data + stride * y);
    // Right to left, so each difference uses the original left neighbour.
    for (int64_t i = w * ch - 1; i >= ch; --i) row[i] = static_cast<T>(row[i] - row[i - ch]);
  }
}

// zlib's default, 6, except for u32 images (labels): their tiles, mostly
// zeros after the predictor, compress 15% faster at 4 and 1.6% smaller
// (libdeflate on the nuclei labels of an 8192² slide: 0.42 s and 2.99 MB
// against 0.50 s and 3.04 MB), and deflating them was a tenth of the CPU
// time of `tilewave nuclei`.
int default_deflate_level(const EncodeSettings& s) {
  return s.fmt.type == SampleType::kU32 ? 4 : 6;
}

}  // namespace

void EncodeSettings::validate() const {
  if (tile_w < 16 || tile_h < 16 || tile_w % 16 || tile_h % 16 || tile_w > 16384 || tile_h > 16384)
    throw InputError("tile size " + std::to_string(tile_w) + "x" + std::to_string(tile_h) +
                     " is invalid: TIFF tiles must be multiples of 16, from 16 to 16384");
  if (codec == Codec::kJpeg) {
    if (fmt.type != SampleType::kU8)
      throw InputError(std::string("JPEG stores 8-bit samples only; this image has ") + sample_name(fmt.type) +
                       " samples (use --compression deflate, zstd or lzw)");
    if (fmt.channels != 1 && !(fmt.channels == 3 && color))
      throw InputError("JPEG stores gray or RGB only; this image has " + std::to_string(fmt.channels) +
                       (color ? "" : " separate") + " channels (use --compression deflate, zstd or lzw)");
    if (quality < 1 || quality > 100)
      throw InputError("JPEG quality " + std::to_string(quality) + " is out of range 1..100");
  }
  if (codec == Codec::kDeflate && level != -1 && (level < 1 || level > 12))
    throw InputError("deflate level " + std::to_string(level) + " is out of range 1..12");
  if (codec == Codec::kZstd && level != -1 && (level < 1 || level > 22))
    throw InputError("zstd level " + std::to_string(level) + " is out of range 1..22");
  if (codec == Codec::kOther) throw InputError("cannot write that compression");
  if (codec == Codec::kPng)
    throw InputError(
        "PNG compresses Deep Zoom tiles (OUT.dzi) and PNG images, not TIFF tiles "
        "(use --compression deflate, zstd, lzw or jpeg)");
  if (fmt.type == SampleType::kI32) throw InputError(std::string("cannot write ") + sample_name(fmt.type) + " samples");
}

void TileEncoder::encode_coefficients(const int16_t*, std::vector<uint8_t>&) {
  throw InternalError("encode_coefficients on an encoder that is not JPEG");
}

std::optional<JpegCoefSpec> jpeg_coef_spec_for(const EncodeSettings& s) {
  if (s.codec != Codec::kJpeg || s.tile_w != s.tile_h || s.tile_w % 16 != 0) return std::nullopt;
  JpegEncoder probe(s.fmt.channels, s.quality, s.subsampling, s.tile_w, s.tile_h);
  return JpegCoefSpec{probe.coef_layout(), probe.quant_tables(), probe.huffman_codes(), probe.stream_head()};
}

std::unique_ptr<TileEncoder> make_encoder(const EncodeSettings& s) {
  s.validate();
  switch (s.codec) {
    case Codec::kNone:
      return std::make_unique<NoneEncoder>();
    case Codec::kJpeg:
      return std::make_unique<JpegTileEncoder>(s);
    // The lossless codecs give the same bytes for the same tile: uniform
    // tiles (io/codec/uniform_tiles.hpp) are compressed once.
    case Codec::kDeflate:
      return with_uniform_tile_cache(
          std::make_unique<DeflateEncoder>(s.level < 0 ? default_deflate_level(s) : s.level, s.predictor));
    case Codec::kZstd:
      return with_uniform_tile_cache(std::make_unique<ZstdEncoder>(s.level < 0 ? 3 : s.level, s.predictor));
    case Codec::kLzw:
      return with_uniform_tile_cache(std::make_unique<LzwTileEncoder>(s.predictor));
    case Codec::kOther:
    case Codec::kPng:
      break;
  }
  throw InternalError("make_encoder: unknown codec");
}

RawTileFormat tiff_format_for(const EncodeSettings& s) {
  s.validate();
  RawTileFormat f;
  f.codec = s.codec;
  f.bits_per_sample = static_cast<int>(sample_bytes(s.fmt.type) * 8);
  f.sample_format = s.fmt.type == SampleType::kF32 ? 3 : 1;
  f.samples_per_pixel = s.fmt.channels;
  f.tile_w = s.tile_w, f.tile_h = s.tile_h;
  // RGB(A) only for 3 or 4 colour channels: any other count written as RGB
  // would have readers take the first three for colour and the rest for
  // alpha. The pyramid_writer adds ExtraSamples for the samples beyond.
  const bool rgb = s.color && (s.fmt.channels == 3 || s.fmt.channels == 4);
  f.photometric = rgb ? kPhotoRgb : kPhotoMinIsBlack;
  switch (s.codec) {
    case Codec::kNone:
      f.tiff_compression = kTiffNone;
      break;
    case Codec::kLzw:
      f.tiff_compression = kTiffLzw;
      break;
    case Codec::kDeflate:
      f.tiff_compression = kTiffDeflate;
      break;
    case Codec::kZstd:
      f.tiff_compression = kTiffZstd;
      break;
    case Codec::kJpeg: {
      f.tiff_compression = kTiffJpeg;
      JpegEncoder probe(s.fmt.channels, s.quality, s.subsampling, s.tile_w, s.tile_h);
      f.jpeg_tables = probe.tables();
      if (s.fmt.channels == 3) {
        f.photometric = kPhotoYCbCr;
        const uint16_t sub = s.subsampling == ChromaSubsampling::k420 ? 2 : 1;
        f.subsampling_h = f.subsampling_v = sub;
      }
      break;
    }
    case Codec::kOther:
    case Codec::kPng:
      break;
  }
  const bool lossless = s.codec == Codec::kLzw || s.codec == Codec::kDeflate || s.codec == Codec::kZstd;
  // Floats go without a predictor: TIFF's floating-point predictor (3) is
  // not read by every reader (tifffile without imagecodecs, for one).
  f.predictor = (lossless && s.predictor && s.fmt.type != SampleType::kF32) ? 2 : 1;
  return f;
}

void apply_horizontal_predictor(uint8_t* data, int64_t w, int64_t h, size_t stride, PixelFormat fmt) {
  if (fmt.type == SampleType::kU8)
    predict_rows<uint8_t>(data, w, h, stride, fmt.channels);
  else if (fmt.type == SampleType::kU16)
    predict_rows<uint16_t>(data, w, h, stride, fmt.channels);
  else if (fmt.type == SampleType::kU32)
    predict_rows<uint32_t>(data, w, h, stride, fmt.channels);
  else
    throw InternalError("no predictor for these samples");
}

}  // namespace tw
