// Our tile encoders, checked by decoding what they write with libtiff's own
// decoders (an independent implementation of each codec).
#include "io/codec/tile_codec.hpp"

#include <gtest/gtest.h>
#include <tiffio.h>

#include <cstring>

#include "io/codec/jpeg_codec.hpp"
#include "io/codec/uniform_tiles.hpp"
#include "io/tiff/pyramid_writer.hpp"
#include "tests/support/test_support.hpp"

namespace tw {
namespace {

// Writes img as one tiled level with our encoder, reads it back with libtiff.
Image round_trip(const Image& img, const EncodeSettings& s, const std::string& path, size_t* bytes = nullptr) {
  std::vector<PyramidLevelSpec> levels{{img.rect().w, img.rect().h, tiff_format_for(s)}};
  PyramidTiffWriter w(path, img.fmt(), levels, {});
  auto enc = make_encoder(s);
  std::vector<uint8_t> out;
  Image tile(img.fmt(), Rect(0, 0, s.tile_w, s.tile_h));
  size_t total = 0;
  for (int64_t ty = 0; ty * s.tile_h < img.rect().h; ++ty)
    for (int64_t tx = 0; tx * s.tile_w < img.rect().w; ++tx) {
      tile.set_origin(tx * s.tile_w, ty * s.tile_h);
      tile.fill_zero();
      copy_overlap(img.view(), tile.view());
      enc->encode(tile.view(), out);
      total += out.size();
      w.write_tile(0, tx, ty, out.data(), out.size());
    }
  w.finish();
  if (bytes) *bytes = total;
  return test::read_tiff_libtiff(path, 0);
}

EncodeSettings settings(Codec c, PixelFormat fmt, int tile = 64) {
  EncodeSettings s;
  s.codec = c;
  s.fmt = fmt;
  s.tile_w = s.tile_h = tile;
  return s;
}

TEST(TileCodec, LosslessRoundTripThroughLibtiff) {
  test::TempDir tmp;
  for (Codec c : {Codec::kNone, Codec::kLzw, Codec::kDeflate, Codec::kZstd})
    for (PixelFormat fmt : {kGray8, kRgb8, kGray16, PixelFormat{SampleType::kU16, 3}, PixelFormat{SampleType::kU8, 4}})
      for (bool pred : {false, true}) {
        EncodeSettings s = settings(c, fmt);
        s.predictor = pred;
        const Image img = test::pattern_image(fmt, 150, 97, 3);
        const Image back = round_trip(img, s, tmp.file("rt.tif"));
        EXPECT_EQ(test::diff_images(back.view(), img.view()), "")
            << codec_name(c) << " " << fmt.str() << " predictor " << pred;
        EXPECT_EQ(test::read_tiff_tags(tmp.file("rt.tif"), 0).predictor, (pred && c != Codec::kNone) ? 2 : 1);
      }
}

// Uniform tiles come from a cache (io/codec/uniform_tiles.hpp): each must be
// the very bytes a fresh encoder gives, whatever came before it (other
// values, sizes, non-uniform tiles that differ from a uniform one only in
// their last pixel or first row), and what the cache gives decodes right.
TEST(TileCodec, UniformTilesEncodeAsAFreshEncoderWould) {
  test::TempDir tmp;
  for (Codec c : {Codec::kLzw, Codec::kDeflate, Codec::kZstd})
    for (PixelFormat fmt : {kGray8, kRgb8, kGray16, PixelFormat{SampleType::kU32, 1}, PixelFormat{SampleType::kF32, 1}})
      for (bool pred : {false, true}) {
        EncodeSettings s = settings(c, fmt);
        s.predictor = pred;
        auto cached = make_encoder(s);
        std::vector<uint8_t> got, want;
        for (int round = 0; round < 3; ++round)
          for (int v : {0, 255, 7, 0, 40, 255, 1, 2, 3, 4, 5, 6, 8, 9, 0})
            for (int variant = 0; variant < 3; ++variant) {
              Image tile(fmt, Rect(0, 0, s.tile_w, s.tile_h));
              for (int64_t y = 0; y < s.tile_h; ++y) std::memset(tile.row_bytes(y), v, tile.view().row_length_bytes());
              // 1: the last byte differs; 2: a byte of the first row does.
              if (variant == 1) tile.row_bytes(s.tile_h - 1)[tile.view().row_length_bytes() - 1] ^= 1;
              if (variant == 2) tile.row_bytes(0)[fmt.bytes_per_pixel()] ^= 1;
              std::vector<uint8_t> pixel;
              EXPECT_EQ(uniform_tile(tile.view(), pixel), variant == 0);
              cached->encode(tile.view(), got);
              make_encoder(s)->encode(tile.view(), want);
              ASSERT_EQ(got, want) << codec_name(c) << " " << fmt.str() << " value " << v << " variant " << variant;
            }
        // A uniform image through the cache reads back uniform.
        Image img(fmt, Rect(0, 0, 150, 97));
        for (int64_t y = 0; y < 97; ++y) std::memset(img.row_bytes(y), 9, img.view().row_length_bytes());
        const Image back = round_trip(img, s, tmp.file("u.tif"));
        EXPECT_EQ(test::diff_images(back.view(), img.view()), "") << codec_name(c) << " " << fmt.str();
      }
}

// LZW's hard parts: table resets (incompressible data fills the 4096-entry
// table many times), long runs, and code-width changes at the very end.
TEST(TileCodec, LzwWorstCases) {
  test::TempDir tmp;
  EncodeSettings s = settings(Codec::kLzw, kGray8, 256);
  s.predictor = false;
  const Image noise = test::random_image(kGray8, 256, 256, 11);
  EXPECT_EQ(test::diff_images(round_trip(noise, s, tmp.file("n.tif")).view(), noise.view()), "");
  Image flat(kGray8, Rect(0, 0, 256, 256));
  flat.fill_zero();
  EXPECT_EQ(test::diff_images(round_trip(flat, s, tmp.file("f.tif")).view(), flat.view()), "");
  for (int tile : {16, 32, 48, 80, 128, 176}) {
    EncodeSettings t = settings(Codec::kLzw, kRgb8, tile);
    const Image img = test::random_image(kRgb8, tile, tile, static_cast<uint64_t>(tile));
    EXPECT_EQ(test::diff_images(round_trip(img, t, tmp.file("s.tif")).view(), img.view()), "") << tile;
  }
}

TEST(TileCodec, JpegQualityTablesAndSubsampling) {
  test::TempDir tmp;
  const Image img = test::pattern_image(kRgb8, 320, 200, 4);
  for (auto sub : {ChromaSubsampling::k420, ChromaSubsampling::k444}) {
    EncodeSettings s = settings(Codec::kJpeg, kRgb8);
    s.quality = 90;
    s.subsampling = sub;
    size_t bytes = 0;
    const Image back = round_trip(img, s, tmp.file("j.tif"), &bytes);
    EXPECT_GT(test::psnr(back.view(), img.view()), 32.0);
    const auto tags = test::read_tiff_tags(tmp.file("j.tif"), 0);
    EXPECT_EQ(tags.photometric, PHOTOMETRIC_YCBCR);
    EXPECT_EQ(tags.sub_h, sub == ChromaSubsampling::k420 ? 2 : 1);
    EXPECT_TRUE(tags.has_jpeg_tables);
  }
  // Tile streams carry no tables (they live once in JPEGTables).
  EncodeSettings s = settings(Codec::kJpeg, kGray8);
  auto enc = make_encoder(s);
  Image tile = test::pattern_image(kGray8, 64, 64, 1);
  std::vector<uint8_t> out;
  enc->encode(tile.view(), out);
  const std::string bytes(out.begin(), out.end());
  EXPECT_EQ(bytes.find("\xff\xc4"), std::string::npos) << "DHT in a tile stream";
  EXPECT_EQ(bytes.find("\xff\xdb"), std::string::npos) << "DQT in a tile stream";
  const Image g = test::pattern_image(kGray8, 100, 70, 9);
  EXPECT_GT(test::psnr(round_trip(g, s, tmp.file("g.tif")).view(), g.view()), 32.0);
}

// A tile stream decoded without its tables fails, whatever the decoder read
// before (found by fuzz_tiff_source: libjpeg kept the last stream's tables,
// so such a tile decoded with another level's or file's tables, differently
// on each thread).
TEST(TileCodec, JpegTileWithoutTablesFailsAfterAnyOtherTile) {
  const EncodeSettings s = settings(Codec::kJpeg, kRgb8);
  const RawTileFormat f = tiff_format_for(s);
  auto enc = make_encoder(s);
  std::vector<uint8_t> out;
  enc->encode(test::pattern_image(kRgb8, 64, 64, 2).view(), out);
  JpegDecoder dec;
  Image img(kRgb8, Rect(0, 0, 64, 64));
  dec.decode(out.data(), out.size(), f.jpeg_tables, 6, 64, 64, img.view(), "tile with tables");
  try {
    dec.decode(out.data(), out.size(), {}, 6, 64, 64, img.view(), "tile without tables");
    ADD_FAILURE() << "a tile without its tables decoded";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("Quantization table 0x00 was not defined"), std::string::npos) << e.what();
  }
  // The entropy decoding for the GPU reports the stream's quantisation
  // tables: none here, whatever the last stream had.
  const JpegCoefLayout layout = jpeg_coef_spec_for(s)->layout;
  std::vector<int16_t> coefs(layout.coefs_per_tile());
  std::vector<uint16_t> quant(layout.quant_per_tile());
  ASSERT_TRUE(dec.decode_coefficients(out.data(), out.size(), f.jpeg_tables, layout, coefs.data(), quant.data(),
                                      "tile with tables"));
  EXPECT_THROW(
      dec.decode_coefficients(out.data(), out.size(), {}, layout, coefs.data(), quant.data(), "tile without tables"),
      InputError);
}

TEST(TileCodec, BadInput) {
  EXPECT_THROW(settings(Codec::kJpeg, kGray16).validate(), InputError);
  EXPECT_THROW(settings(Codec::kJpeg, PixelFormat{SampleType::kU8, 4}).validate(), InputError);
  EncodeSettings s = settings(Codec::kJpeg, kRgb8);
  s.quality = 500;
  EXPECT_THROW(s.validate(), InputError);
  EXPECT_THROW(settings(Codec::kDeflate, kRgb8, 100).validate(), InputError);
  EXPECT_THROW(settings(Codec::kDeflate, kRgb8, 0).validate(), InputError);
  EXPECT_THROW(parse_codec("jpeg2000"), InputError);
}

}  // namespace
}  // namespace tw
