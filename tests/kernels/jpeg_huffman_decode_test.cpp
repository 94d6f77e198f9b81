// The entropy decoding the GPU does (io/codec/jpeg_transform/jpeg_huffman_decode.hpp),
// run on the CPU: every tile it decodes must be libjpeg-turbo's own
// coefficients (JpegDecoder::decode_coefficients) of a stream libjpeg takes
// without complaint, and every tile of our own encoder it must decode. Gray,
// 4:4:4 and 4:2:0, tiles of 16 to 512, quality 5 to 100, blocks made to hit
// every case of the code, and thousands of damaged streams (bytes changed,
// cut, markers and garbage put in), where it may only give up.
#include "io/codec/jpeg_transform/jpeg_huffman_decode.hpp"

#include <gtest/gtest.h>

#include <random>

#include "engine/error.hpp"
#include "io/codec/jpeg_codec.hpp"
#include "tests/support/test_support.hpp"

namespace tw {
namespace {

struct Tile {
  JpegCoefLayout layout;
  std::vector<uint8_t> stream, tables;
};

Tile encoded(int channels, ChromaSubsampling sub, int64_t t, int quality, int content, uint64_t seed) {
  JpegEncoder enc(channels, quality, sub, t, t);
  Tile out;
  out.layout = enc.coef_layout();
  out.tables = enc.tables();
  const PixelFormat fmt{SampleType::kU8, channels};
  if (content < 2) {
    const Image img = content == 0 ? test::random_image(fmt, t, t, seed) : test::pattern_image(fmt, t, t, seed);
    enc.encode(img.view(), out.stream);
    return out;
  }
  // Coefficients of every kind the decoder has a case for: long zero runs
  // (ZRL), the last coefficient, DC steps of up to 2047 both ways, every
  // coefficient non-zero at baseline's extremes (codes of 16 bits, runs of
  // 0xFF bytes), sparse small values.
  std::mt19937_64 rng(seed);
  std::vector<int16_t> c(out.layout.coefs_per_tile(), 0);
  for (size_t b = 0; b < out.layout.blocks_per_tile(); ++b) {
    int16_t* k = c.data() + b * 64;
    switch (rng() % 6) {
      case 0:
        break;
      case 1:
        k[0] = static_cast<int16_t>(b % 2 ? 1023 : -1024);
        break;
      case 2:
        k[0] = static_cast<int16_t>(static_cast<int>(rng() % 200) - 100);
        k[63] = static_cast<int16_t>(rng() % 2 ? 1023 : -1023);
        k[7 * 8 + 3] = -1;
        break;
      case 3:
        for (int i = 1; i < 64; ++i) {
          const int v = static_cast<int>(rng() % 2047) - 1023;
          k[i] = static_cast<int16_t>(v == 0 ? 1 : v);
        }
        break;
      case 4:
        for (int i = 0; i < 64; ++i) k[i] = static_cast<int16_t>(i % 2 ? 255 : 127);
        break;
      default:
        for (int i = 0; i < 64; ++i)
          if (rng() % 5 == 0) k[i] = static_cast<int16_t>(static_cast<int>(rng() % 31) - 15);
        break;
    }
  }
  enc.encode_coefficients(c.data(), out.stream);
  return out;
}

// Our decode of `stream` against libjpeg's: true where ours decoded it (then
// libjpeg must have, without complaint, to the same coefficients and
// quantisation tables), false where ours gave it up.
bool decodes_as_libjpeg(const Tile& t, const std::vector<uint8_t>& stream, const std::string& what) {
  JpegDecoder dec;
  JpegScanHead head;
  try {
    if (!dec.scan_head(stream.data(), stream.size(), t.tables, t.layout, head, what)) return false;
  } catch (const InputError&) {
    return false;  // corrupt headers: the CPU path reads them the same way and reports them
  }
  std::vector<int16_t> ours(t.layout.coefs_per_tile(), 7);
  if (jpeg_entropy_decode_tile(t.layout, head, stream.data(), stream.size(), ours.data()) != kJpegDecodeOk)
    return false;
  std::vector<int16_t> theirs(t.layout.coefs_per_tile());
  std::vector<uint16_t> quant(t.layout.quant_per_tile());
  try {
    EXPECT_TRUE(
        dec.decode_coefficients(stream.data(), stream.size(), t.tables, t.layout, theirs.data(), quant.data(), what))
        << what;
  } catch (const InputError& e) {
    ADD_FAILURE() << what << ": decoded a stream libjpeg refuses: " << e.what();
    return true;
  }
  EXPECT_TRUE(ours == theirs) << what << ": coefficients differ from libjpeg's";
  EXPECT_TRUE(std::equal(quant.begin(), quant.end(), head.quant)) << what << ": quantisation tables differ";
  return true;
}

TEST(JpegHuffmanDecode, TilesAreLibjpegsCoefficients) {
  int checked = 0;
  for (int channels : {1, 3})
    for (ChromaSubsampling sub : {ChromaSubsampling::k420, ChromaSubsampling::k444})
      for (int64_t size : {16, 64, 256, 512})
        for (int quality : {5, 75, 100})
          for (int content = 0; content < 3; ++content) {
            if (channels == 1 && sub == ChromaSubsampling::k444) continue;
            const std::string what = std::to_string(channels) + " channels, " +
                                     (sub == ChromaSubsampling::k420 ? "4:2:0" : "4:4:4") + ", tile " +
                                     std::to_string(size) + ", quality " + std::to_string(quality) + ", content " +
                                     std::to_string(content);
            const Tile t = encoded(channels, sub, size, quality, content, static_cast<uint64_t>(size + quality));
            EXPECT_TRUE(decodes_as_libjpeg(t, t.stream, what)) << what << ": given up";
            // Fill bytes before EOI are no damage: libjpeg skips them.
            std::vector<uint8_t> filled(t.stream.begin(), t.stream.end() - 2);
            filled.insert(filled.end(), {0xFF, 0xFF, 0xFF, 0xD9});
            EXPECT_TRUE(decodes_as_libjpeg(t, filled, what + ", fill bytes")) << what << ", fill bytes: given up";
            ++checked;
          }
  EXPECT_EQ(checked, 3 * 4 * 3 * 3);
}

// Damaged streams: ours may give up on any of them, but what it decodes
// must be libjpeg's without a warning. Some damage leaves the stream valid
// (a changed bit inside a value), and those must mostly be decoded.
TEST(JpegHuffmanDecode, DamagedStreamsAreLibjpegsOrGivenUp) {
  std::mt19937_64 rng(2026);
  int decoded = 0, tried = 0;
  for (int channels : {1, 3})
    for (int64_t size : {16, 64, 256}) {
      const Tile t = encoded(channels, ChromaSubsampling::k420, size, 85, 1, static_cast<uint64_t>(size));
      JpegDecoder dec;
      JpegScanHead head;
      ASSERT_TRUE(dec.scan_head(t.stream.data(), t.stream.size(), t.tables, t.layout, head, "tile"));
      const size_t scan = head.scan_offset, end = t.stream.size() - 2;
      for (int i = 0; i < 1000; ++i) {
        std::vector<uint8_t> s = t.stream;
        const size_t at = scan + rng() % (end - scan);
        switch (i % 8) {
          case 0:  // a byte changed
            s[at] = static_cast<uint8_t>(rng());
            break;
          case 1:  // a bit flipped
            s[at] ^= static_cast<uint8_t>(1u << (rng() % 8));
            break;
          case 2:  // cut short, with or without EOI
            s.resize(at);
            if (rng() % 2) s.insert(s.end(), {0xFF, 0xD9});
            break;
          case 3:  // a marker inside the segment
            s.insert(s.begin() + static_cast<std::ptrdiff_t>(at), {0xFF, static_cast<uint8_t>(0xD0 + rng() % 10)});
            break;
          case 4:  // garbage before EOI
            s.insert(s.end() - 2, {static_cast<uint8_t>(rng()), static_cast<uint8_t>(rng())});
            break;
          case 5:  // no EOI
            s.resize(end);
            break;
          case 6:  // a stuffed 0xFF pair broken
            s.insert(s.begin() + static_cast<std::ptrdiff_t>(at), 0xFF);
            break;
          default:  // the header's bytes changed
            s[rng() % scan] = static_cast<uint8_t>(rng());
            break;
        }
        decoded += decodes_as_libjpeg(t, s, "damage " + std::to_string(i) + " of tile " + std::to_string(size));
        ++tried;
      }
    }
  EXPECT_GT(decoded, 0);
  EXPECT_LT(decoded, tried);
}

// What is not one baseline scan without restarts is libjpeg's to decode.
TEST(JpegHuffmanDecode, RestartIntervalsAreLibjpegs) {
  const Tile t = encoded(3, ChromaSubsampling::k420, 64, 80, 0, 1);
  std::vector<uint8_t> s = t.stream;
  s.insert(s.begin() + 2, {0xFF, 0xDD, 0x00, 0x04, 0x00, 0x01});  // DRI: a restart every MCU
  JpegDecoder dec;
  JpegScanHead head;
  EXPECT_FALSE(dec.scan_head(s.data(), s.size(), t.tables, t.layout, head, "tile"));
  EXPECT_TRUE(dec.scan_head(t.stream.data(), t.stream.size(), t.tables, t.layout, head, "tile"));
  // Nor is a tile of another size than its level's.
  JpegCoefLayout other = t.layout;
  other.tile = 128;
  EXPECT_FALSE(dec.scan_head(t.stream.data(), t.stream.size(), t.tables, other, head, "tile"));
}

TEST(JpegHuffmanDecode, TablesLibjpegRefusesAreRefused) {
  JpegHuffDecTable t;
  JpegHuffSpec s{};
  s.bits[1] = 2;  // codes 0 and 1 of one bit: 1 is all ones
  EXPECT_FALSE(jpeg_huff_dec_table(s, false, t));
  s = JpegHuffSpec{};
  s.bits[2] = 3, s.bits[3] = 1;  // 00 01 10, 110
  EXPECT_TRUE(jpeg_huff_dec_table(s, false, t));
  s.bits[3] = 2;  // 110 111: all ones
  EXPECT_FALSE(jpeg_huff_dec_table(s, false, t));
  s = JpegHuffSpec{};
  for (int l = 9; l <= 16; ++l) s.bits[l] = 40;  // 320 codes
  EXPECT_FALSE(jpeg_huff_dec_table(s, false, t));
  s = JpegHuffSpec{};
  s.bits[2] = 2, s.val[0] = 3, s.val[1] = 16;  // a DC size of 16 bits
  EXPECT_FALSE(jpeg_huff_dec_table(s, true, t));
  EXPECT_TRUE(jpeg_huff_dec_table(s, false, t));
  // An empty table decodes nothing.
  s = JpegHuffSpec{};
  ASSERT_TRUE(jpeg_huff_dec_table(s, false, t));
  const uint8_t bytes[] = {0x00, 0x00, 0xFF, 0xD9};
  jhuff::BitReader br(bytes, 4, 0);
  EXPECT_EQ(jhuff::decode_symbol(br, t), -1);
}

}  // namespace
}  // namespace tw
