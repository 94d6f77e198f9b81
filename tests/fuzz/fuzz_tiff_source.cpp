// fuzz_tiff_source: the input is a file opened with tw::TiffSource; then
// everything a command does with a source, in bounded amounts: info(), a few
// regions of every level (first tile, last tile, across a tile border, over
// the image's edge with a border rule), raw tiles read and decoded (pixels and
// DCT coefficients), associated images. InputError is the expected outcome
// for a bad file; anything else that escapes, a sanitizer report, or a read
// that does not write every pixel it returns, is a finding.
#include <tbb/global_control.h>

#include "engine/jpeg_coefs.hpp"
#include "io/tiff/tiff_source.hpp"
#include "tests/fuzz/fuzz_support.hpp"

namespace {

using namespace tw;
using fuzz::finding;

// Decoding one tile or strip of a level must cost at most this much memory
// (the file may declare tiles of 2^32 x 2^32). Levels beyond it are skipped:
// bounding what a lying header may allocate is the memory budget's job
// (issue 14, item 3), not this target's.
constexpr double kMaxChunkBytes = 8.0 * (1 << 20);
constexpr int64_t kMaxSide = 512;  // of a region read
constexpr int64_t kMaxAssociatedPixels = int64_t{1} << 20;

// Reads r of a level twice, into buffers filled with different bytes: a
// pixel that differs between the two was never written (or the decoder is
// not deterministic), and would reach a pyramid as garbage.
Image read_checked(const TileSource& src, int level, const Rect& r, Border border = {}) {
  Image a(src.info().fmt, r), b(src.info().fmt, r);
  std::memset(a.data(), 0xa5, a.size_bytes());
  std::memset(b.data(), 0x5a, b.size_bytes());
  src.read(level, a.view(), border);
  src.read(level, b.view(), border);
  for (int64_t y = r.y; y < r.y1(); ++y)
    for (int64_t x = r.x; x < r.x1(); ++x)
      if (std::memcmp(a.ptr_bytes(x, y), b.ptr_bytes(x, y), a.fmt().bytes_per_pixel()) != 0) {
        const std::string why = "two reads of region " + r.str() + " of level " + std::to_string(level) +
                                " differ first at (" + std::to_string(x) + ", " + std::to_string(y) +
                                ") (pixels left unwritten?)";
        finding(why.c_str());
      }
  return a;
}

Rect capped(const Rect& r) {
  return {r.x, r.y, std::min(r.w, kMaxSide), std::min(r.h, kMaxSide)};
}

void read_level(const TileSource& src, int l) {
  const LevelInfo& li = src.level(l);
  const double bpp = static_cast<double>(src.info().fmt.bytes_per_pixel());
  if (li.width <= 0 || li.height <= 0 || li.tile_w <= 0 || li.tile_h <= 0) return;
  if (static_cast<double>(li.tile_w) * static_cast<double>(li.tile_h) * bpp > kMaxChunkBytes) return;
  const TileGrid g = li.grid();
  const Rect first = capped(g.tile_rect(0, 0));
  const Rect last = capped(g.tile_rect(g.cols() - 1, g.rows() - 1));
  // Four tiles meet at (tile_w, tile_h) when there are that many.
  const Rect across = Rect(std::min(li.tile_w, li.width - 1) - 8, std::min(li.tile_h, li.height - 1) - 8, 17, 17)
                          .intersect(li.bounds());
  read_checked(src, l, first);
  read_checked(src, l, last);
  if (!across.empty()) read_checked(src, l, across);
  // Over the bottom-right edge, the outside made up by a border rule.
  read_checked(src, l, Rect(li.width - 5, li.height - 3, 11, 7), Border{BorderMode::kReflect101, 0});
  read_checked(src, l, Rect(-4, -4, 9, 9), Border{BorderMode::kConstant, 3});

  // Pass-through: raw tiles, decoded as the pyramid job decodes them.
  const RawTiles* raw_tiles = src.raw_tiles();
  if (const RawTileFormat* raw = raw_tiles ? raw_tiles->raw_format(l) : nullptr) {
    const int64_t tiles[][2] = {{0, 0}, {g.cols() - 1, g.rows() - 1}};
    for (const auto& t : tiles) {
      const std::vector<uint8_t> bytes = raw_tiles->read_raw_tile(l, t[0], t[1]);
      const Rect tr = g.tile_rect(t[0], t[1]);
      Image dec(src.info().fmt, tr);
      raw_tiles->decode_raw_tile(l, t[0], t[1], bytes, dec.view());
      if (const auto layout = gpu_jpeg_coef_layout(*raw)) {
        std::vector<int16_t> coefs(layout->coefs_per_tile());
        std::vector<uint16_t> quant(layout->quant_per_tile());
        raw_tiles->decode_raw_tile_coefficients(l, t[0], t[1], bytes, *layout, coefs.data(), quant.data());
      }
    }
  }
}

void open_and_read(const std::string& path) {
  TiffSource src(path);
  const SourceInfo& info = src.info();
  // What `tilewave info` prints.
  size_t chars = info.path.size() + info.format.size() + info.vendor.size() + info.fmt.str().size();
  for (const auto& p : info.properties) chars += p.first.size() + p.second.size();
  for (const auto& li : info.levels) chars += li.compression.size();
  if (chars == 0) finding("empty info");
  for (int l = 0; l < src.level_count() && l < 8; ++l) read_level(src, l);
  // Again through the decoded-tile cache: the same pixels.
  src.set_read_cache(size_t{4} << 20);
  for (int l = 0; l < src.level_count() && l < 2; ++l) read_level(src, l);
  for (const auto& a : info.associated) {
    if (a.width <= 0 || a.height <= 0 || a.width * a.height > kMaxAssociatedPixels) continue;
    try {
      const Image img = src.read_associated(a.name);
      if (img.rect().w != a.width || img.rect().h != a.height) finding("associated image of another size");
    } catch (const InputError& e) {
      fuzz::expected(e);
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  // Two cores on the fuzzing machines: parallel reads still run on two threads.
  static tbb::global_control threads(tbb::global_control::max_allowed_parallelism, 2);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > fuzz::kMaxInputBytes) return -1;
  static fuzz::MemFile file;
  const std::string& path = file.write(data, size);
  try {
    open_and_read(path);
  } catch (const InputError& e) {
    fuzz::expected(e);  // a bad file, refused with a message
  }
  return 0;
}
