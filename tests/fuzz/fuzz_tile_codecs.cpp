// fuzz_tile_codecs: our tile encoders (io/codec/tile_codec.hpp, the LZW
// encoder, the JPEG encoder's split coefficient path) against the decoders
// we read with, and arbitrary bytes through the decoding paths TiffSource
// feeds (libtiff's LZW, deflate, zstd, PackBits and raw decoders with their
// predictors; our JPEG path). The first byte chooses the mode:
//   0  lossless round trip: pixels -> make_encoder -> a TIFF -> TiffSource,
//      the pixels and the raw tile bytes must come back exactly;
//   1  LzwEncoder on a byte stream (the input, or a longer one made from it)
//      -> libtiff's LZW decoder through TiffSource, exactly;
//   2  the bytes as stored tiles or strips of a TIFF with fuzzed tags
//      (compression, predictor, bits, samples, planar, layout), read back;
//   3  JPEG: coefficients -> encode_coefficients -> decode_coefficients must
//      give them back exactly, and a tile our encoder made must decode.
// A mismatch is a finding (__builtin_trap); so is an InputError on a file or
// stream we made ourselves. On fuzzed bytes (mode 2) InputError is expected.
#include <tbb/global_control.h>
#include <tiff.h>

#include <memory>

#include "io/codec/jpeg_codec.hpp"
#include "io/codec/lzw_encoder.hpp"
#include "io/codec/tile_codec.hpp"
#include "io/tiff/tiff_source.hpp"
#include "tests/fuzz/fuzz_support.hpp"

namespace {

using namespace tw;
using fuzz::Bytes;
using fuzz::finding;
using fuzz::TinyTiff;

fuzz::MemFile& file() {
  static fuzz::MemFile f;
  return f;
}

// A buffer of n bytes: the pattern repeated (zeros if it is empty).
std::vector<uint8_t> repeated(const std::vector<uint8_t>& pattern, size_t n) {
  std::vector<uint8_t> out(n, 0);
  if (!pattern.empty())
    for (size_t i = 0; i < n; ++i) out[i] = pattern[i % pattern.size()];
  return out;
}

// The tags of a tiled directory as RawTileFormat describes it.
TinyTiff tiled_tiff(const RawTileFormat& f, int64_t w, int64_t h) {
  TinyTiff t;
  t.tag_long(TIFFTAG_IMAGEWIDTH, static_cast<uint32_t>(w));
  t.tag_long(TIFFTAG_IMAGELENGTH, static_cast<uint32_t>(h));
  const auto spp = static_cast<size_t>(f.samples_per_pixel);
  t.tag_shorts(TIFFTAG_BITSPERSAMPLE, std::vector<uint16_t>(spp, static_cast<uint16_t>(f.bits_per_sample)));
  t.tag_short(TIFFTAG_COMPRESSION, f.tiff_compression);
  t.tag_short(TIFFTAG_PHOTOMETRIC, f.photometric);
  t.tag_short(TIFFTAG_SAMPLESPERPIXEL, static_cast<uint16_t>(spp));
  t.tag_short(TIFFTAG_PLANARCONFIG, PLANARCONFIG_CONTIG);
  if (f.predictor != 1) t.tag_short(TIFFTAG_PREDICTOR, f.predictor);
  t.tag_long(TIFFTAG_TILEWIDTH, static_cast<uint32_t>(f.tile_w));
  t.tag_long(TIFFTAG_TILELENGTH, static_cast<uint32_t>(f.tile_h));
  if (spp == 2 || spp == 4) t.tag_short(TIFFTAG_EXTRASAMPLES, EXTRASAMPLE_UNASSALPHA);
  t.tag_shorts(TIFFTAG_SAMPLEFORMAT, std::vector<uint16_t>(spp, f.sample_format));
  if (!f.jpeg_tables.empty()) t.tag_bytes(TIFFTAG_JPEGTABLES, TinyTiff::kUndefined, f.jpeg_tables);
  if (f.photometric == PHOTOMETRIC_YCBCR) t.tag_shorts(TIFFTAG_YCBCRSUBSAMPLING, {f.subsampling_h, f.subsampling_v});
  return t;
}

void expect_equal(const ImageView& a, const ImageView& b, const char* what) {
  for (int64_t y = a.rect.y; y < a.rect.y1(); ++y)
    if (std::memcmp(a.ptr_bytes(a.rect.x, y), b.ptr_bytes(a.rect.x, y), a.row_length_bytes()) != 0) finding(what);
}

// Mode 0: up to 2 x 2 tiles of pixels made from the input, encoded by our
// encoders, read back by TiffSource (libtiff's decoders).
void lossless_round_trip(Bytes& in) {
  static const Codec kCodecs[] = {Codec::kNone, Codec::kLzw, Codec::kDeflate, Codec::kZstd};
  static const SampleType kTypes[] = {SampleType::kU8, SampleType::kU16, SampleType::kF32};
  EncodeSettings s;
  s.codec = in.pick(kCodecs);
  s.fmt = PixelFormat{in.pick(kTypes), 1 + in.u8() % 4};
  s.predictor = in.flag();
  s.level = s.codec == Codec::kDeflate ? 1 + in.u8() % 12 : s.codec == Codec::kZstd ? 1 + in.u8() % 19 : -1;
  s.tile_w = 16 * (1 + in.u8() % 4);
  s.tile_h = 16 * (1 + in.u8() % 4);
  const int64_t nx = 1 + in.u8() % 2, ny = 1 + in.u8() % 2;
  // The image ends somewhere inside the last tile column and row.
  const int64_t w = (nx - 1) * s.tile_w + 1 + in.u8() % s.tile_w;
  const int64_t h = (ny - 1) * s.tile_h + 1 + in.u8() % s.tile_h;
  const Rect full(0, 0, nx * s.tile_w, ny * s.tile_h);
  Image src(s.fmt, full);
  const std::vector<uint8_t> px = repeated(in.rest(), src.size_bytes());
  std::memcpy(src.data(), px.data(), px.size());

  const auto enc = make_encoder(s);
  std::vector<std::vector<uint8_t>> tiles;
  for (int64_t ty = 0; ty < ny; ++ty)
    for (int64_t tx = 0; tx < nx; ++tx) {
      tiles.emplace_back();
      enc->encode(src.view().sub(Rect(tx * s.tile_w, ty * s.tile_h, s.tile_w, s.tile_h)), tiles.back());
    }
  const RawTileFormat f = tiff_format_for(s);
  TinyTiff t = tiled_tiff(f, w, h);
  t.chunks(TIFFTAG_TILEOFFSETS, TIFFTAG_TILEBYTECOUNTS, tiles);
  const std::string& path = file().write(t.bytes());
  try {
    TiffSource ts(path);
    if (ts.info().fmt != s.fmt) finding("round trip: another pixel format");
    const Image got = ts.read(0, Rect(0, 0, w, h));
    expect_equal(got.view(), src.view(), "round trip: pixels differ");
    const RawTileFormat* raw = ts.raw_format(0);
    if (!raw) finding("round trip: tiles of our own format cannot pass through");
    for (int64_t ty = 0; ty < ny; ++ty)
      for (int64_t tx = 0; tx < nx; ++tx) {
        const auto bytes = ts.read_raw_tile(0, tx, ty);
        if (bytes != tiles[static_cast<size_t>(ty * nx + tx)]) finding("round trip: raw tile bytes differ");
        const Rect tr = Rect(tx * s.tile_w, ty * s.tile_h, s.tile_w, s.tile_h).intersect(Rect(0, 0, w, h));
        Image dec(s.fmt, tr);
        ts.decode_raw_tile(0, tx, ty, bytes, dec.view());
        expect_equal(dec.view(), src.view(), "round trip: decode_raw_tile differs");
      }
  } catch (const InputError& e) {
    std::fprintf(stderr, "%s\n", e.what());
    finding("round trip: a file of our own tiles was refused");
  }
}

// A longer stream from a short input: runs and noise, so the encoder's table
// fills up and resets (4094 codes) within a few kilobytes.
std::vector<uint8_t> lzw_stream(Bytes& in) {
  const uint8_t how = in.u8();
  std::vector<uint8_t> seed = in.rest();
  if (how % 3 == 0 || seed.empty()) return seed;
  const size_t n = 1 + (static_cast<size_t>(how) * 397 + seed.size() * 131) % 40000;
  std::vector<uint8_t> out;
  out.reserve(n);
  uint64_t x = 0x9e3779b97f4a7c15ull;
  for (uint8_t b : seed) x = (x ^ b) * 0x100000001b3ull;
  size_t i = 0;
  while (out.size() < n) {
    const uint8_t op = seed[i++ % seed.size()];
    if (how % 3 == 1 || (op & 0x80)) {  // noise
      for (int k = 0; k < (op & 31) + 1 && out.size() < n; ++k) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        out.push_back(static_cast<uint8_t>(x));
      }
    } else {  // a run, or the seed again
      for (int k = 0; k < (op & 63) + 1 && out.size() < n; ++k) out.push_back(op & 0x40 ? op : seed[k % seed.size()]);
    }
  }
  return out;
}

// Mode 1: LzwEncoder against libtiff's LZW decoder, one strip of n bytes.
void lzw_round_trip(Bytes& in) {
  const std::vector<uint8_t> stream = lzw_stream(in);
  if (stream.empty()) return;
  LzwEncoder enc;
  std::vector<uint8_t> coded;
  enc.encode(stream.data(), stream.size(), coded);
  TinyTiff t;
  t.tag_long(TIFFTAG_IMAGEWIDTH, static_cast<uint32_t>(stream.size()));
  t.tag_long(TIFFTAG_IMAGELENGTH, 1);
  t.tag_short(TIFFTAG_BITSPERSAMPLE, 8);
  t.tag_short(TIFFTAG_COMPRESSION, COMPRESSION_LZW);
  t.tag_short(TIFFTAG_PHOTOMETRIC, PHOTOMETRIC_MINISBLACK);
  t.tag_long(TIFFTAG_ROWSPERSTRIP, 1);
  t.chunks(TIFFTAG_STRIPOFFSETS, TIFFTAG_STRIPBYTECOUNTS, {coded});
  try {
    TiffSource ts(file().write(t.bytes()));
    const Image got = ts.read(0, Rect(0, 0, static_cast<int64_t>(stream.size()), 1));
    if (std::memcmp(got.data(), stream.data(), stream.size()) != 0) finding("LZW round trip: bytes differ");
  } catch (const InputError& e) {
    std::fprintf(stderr, "%s\n", e.what());
    finding("LZW round trip: libtiff refused our LZW stream");
  }
}

// Mode 2: the bytes as the stored chunks of a TIFF whose tags the input
// chooses; everything a reader does with them.
void decode_fuzzed(Bytes& in) {
  static const uint16_t kCompression[] = {COMPRESSION_NONE,    COMPRESSION_LZW,  COMPRESSION_ADOBE_DEFLATE,
                                          COMPRESSION_DEFLATE, COMPRESSION_ZSTD, COMPRESSION_PACKBITS,
                                          COMPRESSION_JPEG,    COMPRESSION_LZW,  COMPRESSION_ADOBE_DEFLATE};
  static const uint16_t kPredictor[] = {1, 2, 2, 3};
  static const uint16_t kBits[] = {8, 8, 16, 32};
  static const uint16_t kPhotometric[] = {PHOTOMETRIC_MINISBLACK, PHOTOMETRIC_RGB, PHOTOMETRIC_YCBCR,
                                          PHOTOMETRIC_MINISWHITE, PHOTOMETRIC_PALETTE};
  const uint16_t compression = in.pick(kCompression);
  const uint16_t predictor = in.pick(kPredictor);
  const uint16_t bits = in.pick(kBits);
  const uint16_t photometric = in.pick(kPhotometric);
  const uint8_t flags = in.u8();
  const uint16_t spp = static_cast<uint16_t>(1 + in.u8() % 4);
  const bool tiled = !(flags & 1), planar = flags & 2;
  const int64_t tw = 16 * (1 + in.u8() % 8), th = 16 * (1 + in.u8() % 8);
  const int64_t w = 1 + in.u8() % (2 * tw), h = 1 + in.u8() % (2 * th);
  const int64_t rps = 1 + in.u8() % h;

  TinyTiff t;
  t.tag_long(TIFFTAG_IMAGEWIDTH, static_cast<uint32_t>(w));
  t.tag_long(TIFFTAG_IMAGELENGTH, static_cast<uint32_t>(h));
  t.tag_shorts(TIFFTAG_BITSPERSAMPLE, std::vector<uint16_t>(spp, bits));
  t.tag_short(TIFFTAG_COMPRESSION, compression);
  t.tag_short(TIFFTAG_PHOTOMETRIC, photometric);
  t.tag_short(TIFFTAG_SAMPLESPERPIXEL, spp);
  t.tag_short(TIFFTAG_PLANARCONFIG, planar ? PLANARCONFIG_SEPARATE : PLANARCONFIG_CONTIG);
  if (predictor != 1) t.tag_short(TIFFTAG_PREDICTOR, predictor);
  if (bits == 32) t.tag_shorts(TIFFTAG_SAMPLEFORMAT, std::vector<uint16_t>(spp, SAMPLEFORMAT_IEEEFP));
  if (spp == 2 || spp == 4) t.tag_short(TIFFTAG_EXTRASAMPLES, EXTRASAMPLE_UNASSALPHA);
  if (photometric == PHOTOMETRIC_YCBCR)
    t.tag_shorts(TIFFTAG_YCBCRSUBSAMPLING, {uint16_t(1 + (flags >> 2) % 2), uint16_t(1 + (flags >> 3) % 2)});
  if (photometric == PHOTOMETRIC_PALETTE && bits <= 16) {
    std::vector<uint16_t> map(size_t{3} << bits);
    for (size_t i = 0; i < map.size(); ++i) map[i] = static_cast<uint16_t>(i * 257);
    t.tag_shorts(TIFFTAG_COLORMAP, map);
  }
  if (compression == COMPRESSION_JPEG && (flags & 16))
    t.tag_bytes(TIFFTAG_JPEGTABLES, TinyTiff::kUndefined, in.take(in.u16() % 1024));
  int64_t n = tiled ? ((w + tw - 1) / tw) * ((h + th - 1) / th) : (h + rps - 1) / rps;
  if (planar) n *= spp;
  if (tiled) {
    t.tag_long(TIFFTAG_TILEWIDTH, static_cast<uint32_t>(tw));
    t.tag_long(TIFFTAG_TILELENGTH, static_cast<uint32_t>(th));
  } else {
    t.tag_long(TIFFTAG_ROWSPERSTRIP, static_cast<uint32_t>(rps));
  }
  // The bytes shared out among the chunks; a chunk may be empty (sparse).
  std::vector<std::vector<uint8_t>> chunks;
  for (int64_t i = 0; i < n; ++i) chunks.push_back(i + 1 == n ? in.rest() : in.take(in.u16() % 4096));
  t.chunks(tiled ? TIFFTAG_TILEOFFSETS : TIFFTAG_STRIPOFFSETS, tiled ? TIFFTAG_TILEBYTECOUNTS : TIFFTAG_STRIPBYTECOUNTS,
           chunks);
  try {
    TiffSource ts(file().write(t.bytes()));
    const Rect all(0, 0, w, h);
    Image a(ts.info().fmt, all), b(ts.info().fmt, all);
    std::memset(a.data(), 0xa5, a.size_bytes());
    std::memset(b.data(), 0x5a, b.size_bytes());
    ts.read(0, a.view());
    ts.read(0, b.view());
    expect_equal(a.view(), b.view(), "two reads of the same level differ (pixels left unwritten?)");
    if (ts.raw_format(0)) {
      const LevelInfo& li = ts.level(0);
      const TileGrid g = li.grid();
      const auto bytes = ts.read_raw_tile(0, g.cols() - 1, g.rows() - 1);
      Image dec(ts.info().fmt, g.tile_rect(g.cols() - 1, g.rows() - 1));
      ts.decode_raw_tile(0, g.cols() - 1, g.rows() - 1, bytes, dec.view());
    }
  } catch (const InputError& e) {
    fuzz::expected(e);
  }
}

// Mode 3: the split JPEG coding's CPU halves, which must agree exactly.
void jpeg_round_trip(Bytes& in) {
  static const int64_t kTiles[] = {16, 32, 48, 64};
  const int channels = in.flag() ? 3 : 1;
  const ChromaSubsampling sub = in.flag() ? ChromaSubsampling::k420 : ChromaSubsampling::k444;
  const int quality = 1 + in.u8() % 100;
  const int64_t tile = in.pick(kTiles);
  JpegEncoder enc(channels, quality, sub, tile, tile);
  const JpegCoefLayout layout = enc.coef_layout();
  const std::vector<uint8_t> raw = repeated(in.rest(), layout.coefs_per_tile() * 2 + tile * tile * channels);
  // Coefficients a baseline 8-bit stream can hold: DC differences and AC
  // values of at most 11 and 10 bits (ITU T.81 F.1.2).
  std::vector<int16_t> coefs(layout.coefs_per_tile());
  for (size_t i = 0; i < coefs.size(); ++i) {
    int v = static_cast<int16_t>(raw[2 * i] | (raw[2 * i + 1] << 8));
    coefs[i] = static_cast<int16_t>(std::max(-1023, std::min(1023, v)));
  }
  std::vector<uint8_t> stream;
  enc.encode_coefficients(coefs.data(), stream);
  static JpegDecoder dec;
  std::vector<int16_t> back(coefs.size());
  std::vector<uint16_t> quant(layout.quant_per_tile());
  try {
    if (!dec.decode_coefficients(stream.data(), stream.size(), enc.tables(), layout, back.data(), quant.data(), "ours"))
      finding("JPEG: our coefficient stream has another layout");
  } catch (const InputError& e) {
    std::fprintf(stderr, "%s\n", e.what());
    finding("JPEG: our coefficient stream was refused");
  }
  if (back != coefs) finding("JPEG: coefficients differ after encode_coefficients/decode_coefficients");
  if (quant != enc.quant_tables()) finding("JPEG: quantisation tables differ");

  // Pixels through encode() and decode(): no exact result (lossy), but a
  // tile we made must decode.
  Image px(PixelFormat{SampleType::kU8, channels}, Rect(0, 0, tile, tile));
  std::memcpy(px.data(), raw.data() + coefs.size() * 2, static_cast<size_t>(tile * tile * channels));
  enc.encode(px.view(), stream);
  Image out(px.fmt(), px.rect());
  try {
    dec.decode(stream.data(), stream.size(), enc.tables(), channels == 3 ? PHOTOMETRIC_YCBCR : PHOTOMETRIC_MINISBLACK,
               tile, tile, out.view(), "ours");
  } catch (const InputError& e) {
    std::fprintf(stderr, "%s\n", e.what());
    finding("JPEG: a tile of our encoder was refused");
  }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  static tbb::global_control threads(tbb::global_control::max_allowed_parallelism, 2);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > fuzz::kMaxInputBytes) return -1;
  Bytes in(data, size);
  switch (in.u8() % 4) {
    case 0:
      lossless_round_trip(in);
      break;
    case 1:
      lzw_round_trip(in);
      break;
    case 2:
      decode_fuzzed(in);
      break;
    default:
      jpeg_round_trip(in);
      break;
  }
  return 0;
}
