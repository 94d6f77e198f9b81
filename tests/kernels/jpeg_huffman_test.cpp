// The entropy coding the GPU does (io/codec/jpeg_transform/jpeg_huffman.hpp),
// run on the CPU in its pieces: block lengths, bits at their prefix-sum
// places, 0xFF stuffing. Each tile must be libjpeg-turbo's own bytes
// (JpegEncoder::encode_coefficients of the same coefficients): gray, 4:4:4
// and 4:2:0, tiles of 16 to 512, quality 5 to 100, and coefficient blocks
// made to hit every case of the code (long zero runs, the last coefficient,
// extreme DC steps, negative values, runs of 0xFF bytes).
#include "io/codec/jpeg_transform/jpeg_huffman.hpp"

#include <gtest/gtest.h>

#include <random>

#include "io/codec/jpeg_codec.hpp"
#include "io/codec/jpeg_transform/jpeg_fdct.hpp"
#include "io/codec/tile_codec.hpp"
#include "tests/support/test_support.hpp"

namespace tw {
namespace {

struct Case {
  int channels;
  ChromaSubsampling sub;
  int64_t tile;
  int quality;
};

std::string name(const Case& c) {
  return std::to_string(c.channels) + " channels, " + (c.sub == ChromaSubsampling::k420 ? "4:2:0" : "4:4:4") +
         ", tile " + std::to_string(c.tile) + ", quality " + std::to_string(c.quality);
}

JpegCoefSpec spec_of(JpegEncoder& enc) {
  return JpegCoefSpec{enc.coef_layout(), enc.quant_tables(), enc.huffman_codes(), enc.stream_head()};
}

// Coefficient blocks of every kind the code has a case for; each block
// drawn from one of them.
std::vector<int16_t> crafted(const JpegCoefLayout& l, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<int16_t> c(l.coefs_per_tile(), 0);
  for (size_t b = 0; b < l.blocks_per_tile(); ++b) {
    int16_t* k = c.data() + b * 64;
    switch (rng() % 8) {
      case 0:  // all zero
        break;
      case 1:  // extreme DC, alternating: differences of up to 2 x 1023
        k[0] = static_cast<int16_t>(b % 2 ? 1023 : -1024);
        break;
      case 2:  // one AC after a run of more than 16 zeros (ZRL), and the last one
        k[0] = static_cast<int16_t>(rng() % 200) - 100;
        k[63] = static_cast<int16_t>(rng() % 2 ? 1023 : -1023);
        k[7 * 8 + 3] = -1;
        break;
      case 3:  // every coefficient non-zero, full baseline range
        for (int i = 0; i < 64; ++i) {
          int v = static_cast<int>(rng() % 2047) - 1023;
          k[i] = static_cast<int16_t>(v == 0 ? 1 : v);
        }
        break;
      case 4:  // bits that make runs of 0xFF bytes: all-ones values
        for (int i = 0; i < 64; ++i) k[i] = static_cast<int16_t>(i % 2 ? 255 : 127);
        break;
      default:  // sparse small values
        for (int i = 0; i < 64; ++i)
          if (rng() % 5 == 0) k[i] = static_cast<int16_t>(static_cast<int>(rng() % 31) - 15);
        break;
    }
  }
  return c;
}

std::vector<Case> cases() {
  std::vector<Case> v;
  for (int channels : {1, 3})
    for (ChromaSubsampling sub : {ChromaSubsampling::k420, ChromaSubsampling::k444})
      for (int64_t t : {16, 64, 256, 512})
        for (int quality : {5, 75, 100}) {
          if (channels == 1 && sub == ChromaSubsampling::k444) continue;
          v.push_back({channels, sub, t, quality});
        }
  return v;
}

TEST(JpegHuffman, TilesAreLibjpegsBytes) {
  int checked = 0;
  for (const Case& c : cases()) {
    JpegEncoder enc(c.channels, c.quality, c.sub, c.tile, c.tile);
    const JpegCoefSpec spec = spec_of(enc);
    const PixelFormat fmt{SampleType::kU8, c.channels};
    for (int content = 0; content < 4; ++content) {
      std::vector<int16_t> coefs(spec.layout.coefs_per_tile());
      if (content < 3) {
        const uint64_t seed = static_cast<uint64_t>(c.tile * 31 + c.quality);
        const Image img = content == 0   ? test::random_image(fmt, c.tile, c.tile, seed)
                          : content == 1 ? test::pattern_image(fmt, c.tile, c.tile, seed)
                                         : Image(fmt, Rect(0, 0, c.tile, c.tile));  // zeros
        jpeg_forward_tile(img.view(), spec.layout, spec.quant.data(), coefs.data());
      } else {
        coefs = crafted(spec.layout, static_cast<uint64_t>(c.tile + c.quality));
      }
      std::vector<uint8_t> want, got;
      enc.encode_coefficients(coefs.data(), want);
      ASSERT_TRUE(jpeg_entropy_code_tile(spec, coefs.data(), got)) << name(c) << ", content " << content;
      ASSERT_EQ(got, want) << name(c) << ", content " << content;
      ++checked;
    }
  }
  EXPECT_EQ(checked, static_cast<int>(cases().size()) * 4);
}

TEST(JpegHuffman, StreamHeadIsTheTileStreamUpToItsScan) {
  JpegEncoder enc(3, 80, ChromaSubsampling::k420, 256, 256);
  const std::vector<uint8_t> head = enc.stream_head();
  ASSERT_GE(head.size(), 4u);
  EXPECT_EQ(head[0], 0xFF);
  EXPECT_EQ(head[1], 0xD8);  // SOI
  // No tables in a tile's stream: they are the level's JPEGTables.
  for (size_t i = 0; i + 1 < head.size(); ++i) {
    if (head[i] == 0xFF) {
      EXPECT_TRUE(head[i + 1] != 0xDB && head[i + 1] != 0xC4) << "a table marker at " << i;
    }
  }
}

TEST(JpegHuffman, ValuesBeyondBaselineAreLeftToLibjpeg) {
  JpegEncoder enc(1, 90, ChromaSubsampling::k420, 16, 16);
  const JpegCoefSpec spec = spec_of(enc);
  std::vector<int16_t> coefs(spec.layout.coefs_per_tile(), 0);
  std::vector<uint8_t> out;
  coefs[5] = 1024;  // an AC of 11 bits
  EXPECT_FALSE(jpeg_entropy_code_tile(spec, coefs.data(), out));
  coefs[5] = 0;
  coefs[0] = 2047, coefs[64] = -2048;  // a DC difference of 12 bits
  EXPECT_FALSE(jpeg_entropy_code_tile(spec, coefs.data(), out));
  coefs[64] = 0;
  EXPECT_TRUE(jpeg_entropy_code_tile(spec, coefs.data(), out));  // 2047: 11 bits
}

TEST(JpegHuffman, SpecsForJpegCarryTheCodes) {
  EncodeSettings s;
  s.codec = Codec::kJpeg;
  s.fmt = PixelFormat{SampleType::kU8, 3};
  s.tile_w = s.tile_h = 256;
  const auto spec = jpeg_coef_spec_for(s);
  ASSERT_TRUE(spec);
  EXPECT_EQ(spec->huff.size(), 3u);
  EXPECT_FALSE(spec->head.empty());
}

}  // namespace
}  // namespace tw
