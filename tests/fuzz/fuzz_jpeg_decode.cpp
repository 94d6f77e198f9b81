// fuzz_jpeg_decode: tw::JpegDecoder (io/codec/jpeg_codec.hpp) on arbitrary
// streams, as TiffSource and the split GPU decode call it. The first bytes
// choose the tile the stream is expected to fill, the TIFF photometric and
// channels, the destination window, whether the stream's tables are split
// off into a JPEGTables blob (as TIFF stores them), and the coefficient
// layout for decode_coefficients. InputError is the expected outcome; a
// decoder that has decoded other tiles before must act as a fresh one.
#include <algorithm>
#include <cstring>

#include "engine/jpeg_coefs.hpp"
#include "engine/jpeg_tables.hpp"
#include "io/codec/jpeg_codec.hpp"
#include "io/codec/jpeg_transform/jpeg_huffman_decode.hpp"
#include "tests/fuzz/fuzz_support.hpp"

namespace {

using namespace tw;
using fuzz::finding;

bool is_sof(uint8_t m) {
  return m >= 0xc0 && m <= 0xcf && m != 0xc4 && m != 0xc8 && m != 0xcc;
}

// TIFF's abbreviated form: the tables (everything before the frame header)
// go to a JPEGTables stream, the tile keeps SOI and the rest.
void split_tables(const std::vector<uint8_t>& s, std::vector<uint8_t>& tables, std::vector<uint8_t>& tile) {
  size_t at = 2;
  while (at + 1 < s.size() && !(s[at] == 0xff && (is_sof(s[at + 1]) || s[at + 1] == 0xda))) ++at;
  if (s.size() < 2 || at + 1 >= s.size()) {
    tile = s;
    return;
  }
  tables.assign(s.begin(), s.begin() + static_cast<long>(at));
  tables.push_back(0xff), tables.push_back(0xd9);
  tile = {0xff, 0xd8};
  tile.insert(tile.end(), s.begin() + static_cast<long>(at), s.end());
}

// Decodes a tile of our own encoder (tables in JPEGTables): the decoder then
// holds quantisation and Huffman tables 0 and 1 of another stream.
void prime(JpegDecoder& dec) {
  static const auto made = [] {
    std::pair<std::vector<uint8_t>, std::vector<uint8_t>> tile_tables;
    JpegEncoder enc(3, 40, ChromaSubsampling::k420, 16, 16);
    Image px(kRgb8, Rect(0, 0, 16, 16));
    for (size_t i = 0; i < px.size_bytes(); ++i) px.data()[i] = static_cast<uint8_t>(i * 37);
    enc.encode(px.view(), tile_tables.first);
    tile_tables.second = enc.tables();
    return tile_tables;
  }();
  Image out(kRgb8, Rect(0, 0, 16, 16));
  dec.decode(made.first.data(), made.first.size(), made.second, 6, 16, 16, out.view(), "primer");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > fuzz::kMaxInputBytes) return -1;
  fuzz::Bytes in(data, size);
  static const int64_t kSides[] = {8, 16, 17, 64, 100, 256, 512};
  static const int kPhotometric[] = {1, 2, 6};
  static const int kChannels[] = {1, 3, 3, 3, 2, 4};
  static const int64_t kCoefTiles[] = {16, 32, 64, 256};
  const int64_t expect_w = in.pick(kSides), expect_h = in.pick(kSides);
  const int photometric = in.pick(kPhotometric);
  const int channels = in.pick(kChannels);
  const uint8_t flags = in.u8();
  // The destination: the whole expected tile, or a part of it (an edge tile
  // clipped by the image), somewhere in global coordinates.
  int64_t w = expect_w, h = expect_h;
  if (flags & 4) w = 1 + in.u8() % expect_w, h = 1 + in.u8() % expect_h;
  const int64_t ox = (flags & 2) ? in.u16() : 0, oy = (flags & 2) ? in.u16() : 0;
  JpegCoefLayout layout;
  layout.components = (flags & 8) ? 3 : 1;
  layout.h_samp = layout.v_samp = (flags & 16) ? 2 : 1;
  layout.tile = in.pick(kCoefTiles);

  std::vector<uint8_t> stream = in.rest(), tables, tile;
  if (flags & 1)
    split_tables(stream, tables, tile);
  else
    tile = stream;

  // A decoder reused across tiles (as each thread's is) must decode as a
  // fresh one: the same pixels, or the same refusal. Ours has just decoded a
  // tile of another level, with its own tables.
  static JpegDecoder dec;
  prime(dec);
  const Rect r(ox, oy, w, h);
  const PixelFormat fmt{SampleType::kU8, channels};
  Image reused(fmt, r), fresh(fmt, r);
  std::memset(reused.data(), 0, reused.size_bytes());
  std::memset(fresh.data(), 0, fresh.size_bytes());
  std::string reused_error, fresh_error;
  try {
    dec.decode(tile.data(), tile.size(), tables, photometric, expect_w, expect_h, reused.view(), "fuzz tile");
  } catch (const InputError& e) {
    fuzz::expected(e);
    reused_error = e.what();
  }
  try {
    JpegDecoder first;
    first.decode(tile.data(), tile.size(), tables, photometric, expect_w, expect_h, fresh.view(), "fuzz tile");
  } catch (const InputError& e) {
    fresh_error = e.what();
  }
  if (reused_error != fresh_error) finding("a reused JPEG decoder fails otherwise than a fresh one");
  if (std::memcmp(reused.data(), fresh.data(), reused.size_bytes()) != 0)
    finding("a reused JPEG decoder decodes otherwise than a fresh one");
  std::vector<int16_t> coefs(layout.coefs_per_tile());
  std::vector<uint16_t> quant(layout.quant_per_tile());
  bool libjpeg_ok = false;
  try {
    libjpeg_ok =
        dec.decode_coefficients(tile.data(), tile.size(), tables, layout, coefs.data(), quant.data(), "fuzz tile");
  } catch (const InputError& e) {
    fuzz::expected(e);
  }
  // The GPU's entropy decoder, run on the CPU: what it decodes must be
  // libjpeg's coefficients of a stream libjpeg decoded without complaint.
  try {
    JpegScanHead head;
    std::vector<int16_t> ours(layout.coefs_per_tile());
    if (dec.scan_head(tile.data(), tile.size(), tables, layout, head, "fuzz tile") &&
        jpeg_entropy_decode_tile(layout, head, tile.data(), tile.size(), ours.data()) == kJpegDecodeOk) {
      if (!libjpeg_ok) finding("the GPU's JPEG entropy decoder decoded a tile libjpeg refuses");
      if (ours != coefs) finding("the GPU's JPEG entropy decoder differs from libjpeg");
      if (!std::equal(quant.begin(), quant.end(), head.quant)) finding("scan_head's quantisation tables differ");
    }
  } catch (const InputError& e) {
    fuzz::expected(e);
  }
  // nvJPEG's input: the tables joined back into the tile's stream.
  if (flags & 32) {
    std::vector<uint8_t> merged;
    merge_jpeg_tables(tables, tile, merged);
    try {
      Image dst(PixelFormat{SampleType::kU8, channels}, Rect(0, 0, w, h));
      dec.decode(merged.data(), merged.size(), {}, photometric, expect_w, expect_h, dst.view(), "fuzz merged");
    } catch (const InputError& e) {
      fuzz::expected(e);
    }
  }
  return 0;
}
