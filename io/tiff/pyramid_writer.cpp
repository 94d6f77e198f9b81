// The file is laid out by hand rather than through libtiff's writer: libtiff
// writes one directory at a time, so the lower levels (which the cascade
// finishes while level 0 is still streaming in) had to be spilled to a
// scratch file and copied back at the end — 0.4 s of a 1.8 s run on a 2 GP
// slide. Here every tile is appended as it arrives, whatever its level, and
// the directories (IFDs) are written once, at the end, pointing at them.
// libtiff, tifffile, OpenSlide and vips read the result in the tests.
#include "io/tiff/pyramid_writer.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <mutex>
#include <optional>

#include "engine/error.hpp"
#include "engine/output_file.hpp"
#include "engine/trace.hpp"
#include "io/codec/lzw_encoder.hpp"
#include "io/codec/tile_codec.hpp"
#include "io/vendor_metadata.hpp"

namespace tw {
namespace {

// TIFF field types.
constexpr uint16_t kAscii = 2, kShort = 3, kLong = 4, kRational = 5, kUndefined = 7, kLong8 = 16, kIfd8 = 18;
constexpr uint16_t kPhotoMinIsBlack = 1, kPhotoRgb = 2;

struct Entry {
  uint16_t tag = 0, type = 0;
  uint64_t count = 0;
  std::vector<uint8_t> data;  // little-endian values
};

size_t type_size(uint16_t type) {
  switch (type) {
    case kShort:
      return 2;
    case kLong:
      return 4;
    case kRational:
    case kLong8:
    case kIfd8:
      return 8;
    default:
      return 1;
  }
}

template <class T>
void put(std::vector<uint8_t>& v, T x) {
  const size_t n = v.size();
  v.resize(n + sizeof(T));
  std::memcpy(v.data() + n, &x, sizeof(T));  // the host is little-endian, like the file
}

Entry shorts(uint16_t tag, std::initializer_list<uint16_t> vals) {
  Entry e{tag, kShort, vals.size(), {}};
  for (uint16_t v : vals) put(e.data, v);
  return e;
}

Entry shorts(uint16_t tag, uint16_t v, size_t n) {
  Entry e{tag, kShort, n, {}};
  for (size_t i = 0; i < n; ++i) put(e.data, v);
  return e;
}

Entry long1(uint16_t tag, uint32_t v) {
  Entry e{tag, kLong, 1, {}};
  put(e.data, v);
  return e;
}

Entry long8s(uint16_t tag, const std::vector<uint64_t>& vals, uint16_t type = kLong8) {
  Entry e{tag, type, vals.size(), {}};
  for (uint64_t v : vals) put(e.data, v);
  return e;
}

Entry ascii(uint16_t tag, const std::string& s) {
  Entry e{tag, kAscii, s.size() + 1, std::vector<uint8_t>(s.begin(), s.end())};
  e.data.push_back(0);
  return e;
}

// v as N/D in 32 bits each: D = 1000 (enough for micron-scale
// resolutions), fewer decimals where N would pass 32 bits, D = 1e9 below 1
// so that a coarse level keeps its digits. None where N would be 0 or past
// 32 bits: a 0/1 resolution reads as "unknown" or a division by zero.
std::optional<Entry> rational(uint16_t tag, double v) {
  if (!(v > 0) || !std::isfinite(v)) return std::nullopt;
  uint32_t den = v < 1 ? 1000000000u : 1000u;
  while (v * den > 4e9 && den > 1) den /= 10;
  const double num = std::round(v * den);
  if (num < 1 || num > 4294967295.0) return std::nullopt;
  Entry e{tag, kRational, 1, {}};
  put(e.data, static_cast<uint32_t>(num));
  put(e.data, den);
  return e;
}

struct Level {
  std::vector<uint64_t> offsets, counts;
  std::vector<bool> written;
};

// ExtraSamples (tag 338) for samples beyond the photometric's colour ones:
// RGB + 1 is RGBA with unassociated alpha (as before); the samples of a
// MinIsBlack image of N channels are channels of their own (0, unspecified),
// so readers hand them back as they are rather than as gray + alpha.
std::vector<uint16_t> extra_samples(const RawTileFormat& f) {
  const int colour = f.photometric == kPhotoMinIsBlack ? 1 : 3;
  const int extra = f.samples_per_pixel - colour;
  if (extra <= 0) return {};
  if (f.photometric == kPhotoRgb && extra == 1) return {2};
  return std::vector<uint16_t>(static_cast<size_t>(extra), 0);
}

}  // namespace

struct PyramidTiffWriter::Impl {
  PixelFormat fmt;
  std::vector<PyramidLevelSpec> levels;
  PyramidWriterOptions opt;
  OutputFile out;
  int fd = -1;
  uint64_t end = 16;  // after the BigTIFF header
  uint64_t bytes = 0;
  std::vector<std::vector<Level>> state;  // [plane][level]
  // Associated images are compressed when they are added (possibly on
  // another thread, while tiles stream in) and appended at finish().
  struct Assoc {
    std::string name;
    int64_t width = 0, height = 0;
    int channels = 0;
    std::vector<std::vector<uint8_t>> strips;
  };
  std::mutex assoc_mu;
  std::vector<Assoc> assoc;
  bool finished = false;

  Impl(const std::string& path, PixelFormat f, std::vector<PyramidLevelSpec> l, PyramidWriterOptions o)
      : fmt(f), levels(std::move(l)), opt(std::move(o)), out(path) {}

  [[noreturn]] void fail(const std::string& what) {
    throw InputError("cannot write " + out.final_path() + ": " + what);
  }

  uint64_t append(const uint8_t* p, size_t n) {
    const uint64_t at = end;
    size_t done = 0;
    while (done < n) {
      const ssize_t w = ::pwrite(fd, p + done, n - done, static_cast<off_t>(at + done));
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) fail(std::strerror(errno));
      done += static_cast<size_t>(w);
    }
    end += n;
    // Word-align what follows (IFDs must start on a word boundary).
    if (end & 1) {
      const uint8_t z = 0;
      if (::pwrite(fd, &z, 1, static_cast<off_t>(end)) != 1) fail(std::strerror(errno));
      ++end;
    }
    return at;
  }

  int64_t tiles_across(int l) const { return ceil_div(levels[l].width, levels[l].format.tile_w); }
  int64_t tile_count(int l) const { return tiles_across(l) * ceil_div(levels[l].height, levels[l].format.tile_h); }

  void resolution_tags(std::vector<Entry>& e, double scale) const {
    if (!plausible_mpp(opt.mpp_x) || !plausible_mpp(opt.mpp_y)) return;  // unknown: no tags
    // Pixels per centimetre; the sampling period doubles at each level. A
    // level too coarse for a rational keeps no tags rather than wrong ones.
    const std::optional<Entry> x = rational(282, 1e4 / (opt.mpp_x * scale));
    const std::optional<Entry> y = rational(283, 1e4 / (opt.mpp_y * scale));
    if (!x || !y) return;
    e.push_back(*x);
    e.push_back(*y);
    e.push_back(shorts(296, {3}));  // centimetre
  }

  std::vector<Entry> level_entries(int plane, int l) const {
    const PyramidLevelSpec& s = levels[l];
    const RawTileFormat& f = s.format;
    const Level& st = state[plane][l];
    const uint16_t spp = static_cast<uint16_t>(f.samples_per_pixel);
    std::vector<Entry> e;
    // NewSubfileType: reduced resolution; Aperio's levels say 0 (its label
    // says 1), and tifffile's SVS reader takes a reduced page for the label.
    e.push_back(long1(254, l > 0 && !opt.aperio ? 1u : 0u));
    e.push_back(long1(256, static_cast<uint32_t>(s.width)));
    e.push_back(long1(257, static_cast<uint32_t>(s.height)));
    e.push_back(shorts(258, static_cast<uint16_t>(f.bits_per_sample), spp));
    e.push_back(shorts(259, {f.tiff_compression}));
    e.push_back(shorts(262, {f.photometric}));
    if (plane == 0 && l == 0 && !opt.description.empty()) e.push_back(ascii(270, opt.description));
    e.push_back(shorts(277, {spp}));
    e.push_back(shorts(284, {1}));  // contiguous samples
    resolution_tags(e, std::ldexp(1.0, l));
    e.push_back(ascii(305, opt.software));
    if (f.predictor > 1) e.push_back(shorts(317, {f.predictor}));
    e.push_back(long1(322, static_cast<uint32_t>(f.tile_w)));
    e.push_back(long1(323, static_cast<uint32_t>(f.tile_h)));
    e.push_back(long8s(324, st.offsets));
    e.push_back(long8s(325, st.counts));
    const std::vector<uint16_t> extra = extra_samples(f);
    if (!extra.empty()) {
      Entry x{338, kShort, extra.size(), {}};
      for (uint16_t v : extra) put(x.data, v);
      e.push_back(x);
    }
    e.push_back(shorts(339, f.sample_format, spp));  // unsigned integers or floats
    if (f.tiff_compression == 7 && !f.jpeg_tables.empty())
      e.push_back(Entry{347, kUndefined, f.jpeg_tables.size(), f.jpeg_tables});
    if (f.photometric == 6) {
      e.push_back(shorts(530, {f.subsampling_h, f.subsampling_v}));
      Entry ref{532, kRational, 6, {}};
      for (uint32_t v : {0u, 255u, 128u, 255u, 128u, 255u}) put(ref.data, v), put(ref.data, 1u);
      e.push_back(ref);
    }
    return e;
  }

  static constexpr int64_t kAssocRowsPerStrip = 16;

  // Associated images: LZW strips of 16 rows with the horizontal predictor.
  static Assoc compress_assoc(const std::string& name, const Image& img) {
    Assoc a{name, img.rect().w, img.rect().h, img.fmt().channels, {}};
    LzwEncoder lzw;
    std::vector<uint8_t> packed;
    const size_t row = img.view().row_length_bytes();
    for (int64_t y0 = 0; y0 < img.rect().h; y0 += kAssocRowsPerStrip) {
      const int64_t n = std::min(kAssocRowsPerStrip, img.rect().h - y0);
      packed.resize(row * static_cast<size_t>(n));
      for (int64_t y = 0; y < n; ++y) std::memcpy(packed.data() + row * y, img.row_bytes(img.rect().y + y0 + y), row);
      apply_horizontal_predictor(packed.data(), img.rect().w, n, row, img.fmt());
      a.strips.emplace_back();
      lzw.encode(packed.data(), packed.size(), a.strips.back());
    }
    return a;
  }

  std::vector<Entry> assoc_entries(const Assoc& a) {
    const uint16_t spp = static_cast<uint16_t>(a.channels);
    std::vector<uint64_t> offs, cnts;
    for (const auto& coded : a.strips) {
      offs.push_back(append(coded.data(), coded.size()));
      cnts.push_back(coded.size());
      bytes += coded.size();
    }
    std::vector<Entry> e;
    // Aperio's label is flagged reduced (1) and its macro 9, which
    // tifffile's SVS reader goes by; ours are plain images elsewhere.
    const uint32_t subfile = !opt.aperio ? 0u : a.name == "label" ? 1u : a.name == "macro" ? 9u : 0u;
    e.push_back(long1(254, subfile));
    e.push_back(long1(256, static_cast<uint32_t>(a.width)));
    e.push_back(long1(257, static_cast<uint32_t>(a.height)));
    e.push_back(shorts(258, 8, spp));
    e.push_back(shorts(259, {5}));  // LZW
    e.push_back(shorts(262, {static_cast<uint16_t>(spp == 3 ? 2 : 1)}));
    e.push_back(ascii(270, opt.aperio ? aperio_associated_description(a.name, a.width, a.height) : a.name));
    e.push_back(long8s(273, offs));
    e.push_back(shorts(277, {spp}));
    e.push_back(long1(278, static_cast<uint32_t>(kAssocRowsPerStrip)));
    e.push_back(long8s(279, cnts));
    e.push_back(shorts(284, {1}));
    e.push_back(ascii(305, opt.software));
    e.push_back(shorts(317, {2}));
    return e;
  }

  // Writes one IFD (entries sorted by tag, long values after it); returns
  // where it starts and the file offset of its next-IFD field.
  std::pair<uint64_t, uint64_t> write_ifd(std::vector<Entry> e) {
    std::sort(e.begin(), e.end(), [](const Entry& a, const Entry& b) { return a.tag < b.tag; });
    const uint64_t start = end;
    const uint64_t ifd_size = 8 + 20 * e.size() + 8;
    uint64_t extra = start + ifd_size;  // out-of-line values go right after the IFD
    std::vector<uint8_t> ifd, tail;
    put(ifd, static_cast<uint64_t>(e.size()));
    for (const Entry& x : e) {
      put(ifd, x.tag);
      put(ifd, x.type);
      put(ifd, x.count);
      const size_t n = static_cast<size_t>(x.count) * type_size(x.type);
      TW_ASSERT(x.data.size() == n);
      if (n <= 8) {
        std::vector<uint8_t> v = x.data;
        v.resize(8, 0);
        ifd.insert(ifd.end(), v.begin(), v.end());
      } else {
        put(ifd, extra + tail.size());
        tail.insert(tail.end(), x.data.begin(), x.data.end());
        if (tail.size() & 1) tail.push_back(0);
      }
    }
    const uint64_t next_field = start + ifd.size();
    put(ifd, uint64_t{0});
    ifd.insert(ifd.end(), tail.begin(), tail.end());
    append(ifd.data(), ifd.size());
    return {start, next_field};
  }

  void patch_u64(uint64_t at, uint64_t v) {
    if (::pwrite(fd, &v, 8, static_cast<off_t>(at)) != 8) fail(std::strerror(errno));
  }
};

PyramidTiffWriter::PyramidTiffWriter(const std::string& final_path, PixelFormat fmt,
                                     std::vector<PyramidLevelSpec> levels, PyramidWriterOptions opt)
    : impl_(std::make_unique<Impl>(final_path, fmt, std::move(levels), std::move(opt))) {
  auto& im = *impl_;
  TW_ASSERT(!im.levels.empty());
  for (const auto& l : im.levels) {
    if (l.width <= 0 || l.height <= 0 || l.width > 0xffffffffLL || l.height > 0xffffffffLL)
      throw InputError("cannot write a level of " + std::to_string(l.width) + "x" + std::to_string(l.height) +
                       " pixels");
    TW_ASSERT(l.format.tile_w > 0 && l.format.tile_h > 0 && l.format.tile_w % 16 == 0 && l.format.tile_h % 16 == 0);
  }
  TW_ASSERT(im.opt.planes >= 1 && (im.opt.planes == 1 || im.opt.layout == TiffLevelLayout::kSubIfds));
  im.fd = im.out.fd();
  // BigTIFF header, little-endian; the first IFD's offset is patched in finish().
  std::vector<uint8_t> h = {'I', 'I', 43, 0, 8, 0, 0, 0};
  put(h, uint64_t{0});
  if (::pwrite(im.fd, h.data(), h.size(), 0) != static_cast<ssize_t>(h.size())) im.fail(std::strerror(errno));
  im.state.assign(static_cast<size_t>(im.opt.planes), std::vector<Level>(im.levels.size()));
  for (auto& plane : im.state)
    for (size_t l = 0; l < im.levels.size(); ++l) {
      const size_t n = static_cast<size_t>(im.tile_count(static_cast<int>(l)));
      plane[l].offsets.assign(n, 0);
      plane[l].counts.assign(n, 0);
      plane[l].written.assign(n, false);
    }
}

PyramidTiffWriter::~PyramidTiffWriter() = default;

uint64_t PyramidTiffWriter::bytes_written() const {
  return impl_->bytes;
}
const std::string& PyramidTiffWriter::temp_path() const {
  return impl_->out.temp_path();
}

size_t PyramidTiffWriter::index_bytes(const std::vector<PyramidLevelSpec>& levels, int planes) {
  double tiles = 0;
  for (const auto& l : levels)
    tiles += std::ceil(double(l.width) / double(std::max<int64_t>(1, l.format.tile_w))) *
             std::ceil(double(l.height) / double(std::max<int64_t>(1, l.format.tile_h)));
  return static_cast<size_t>(std::min(tiles * 17.0 * std::max(1, planes), 1e18));
}

void PyramidTiffWriter::write_tile(int plane, int level, int64_t tx, int64_t ty, const uint8_t* data, size_t n) {
  auto& im = *impl_;
  TW_ASSERT(level >= 0 && level < static_cast<int>(im.levels.size()) && !im.finished);
  TW_ASSERT(plane >= 0 && plane < im.opt.planes);
  const int64_t index = ty * im.tiles_across(level) + tx;
  TW_ASSERT(tx >= 0 && ty >= 0 && tx < im.tiles_across(level) && index < im.tile_count(level));
  Level& st = im.state[static_cast<size_t>(plane)][static_cast<size_t>(level)];
  TW_ASSERT(!st.written[static_cast<size_t>(index)]);
  st.offsets[static_cast<size_t>(index)] = im.append(data, n);
  st.counts[static_cast<size_t>(index)] = n;
  st.written[static_cast<size_t>(index)] = true;
  im.bytes += n;
}

void PyramidTiffWriter::add_associated(const std::string& name, const Image& img) {
  TW_ASSERT(img.fmt() == kRgb8 || img.fmt() == kGray8);
  Impl::Assoc a = Impl::compress_assoc(name, img);
  std::lock_guard<std::mutex> l(impl_->assoc_mu);
  impl_->assoc.push_back(std::move(a));
}

std::vector<StoredAssociated> PyramidTiffWriter::associated() const {
  std::lock_guard<std::mutex> l(impl_->assoc_mu);
  std::vector<StoredAssociated> r;
  for (const auto& a : impl_->assoc) r.push_back({a.name, a.width, a.height, a.channels});
  return r;
}

void PyramidTiffWriter::set_description(std::string description) {
  TW_ASSERT(!impl_->finished);
  impl_->opt.description = std::move(description);
}

void PyramidTiffWriter::finish() {
  auto& im = *impl_;
  TW_ASSERT(!im.finished);
  for (size_t p = 0; p < im.state.size(); ++p)
    for (size_t l = 0; l < im.levels.size(); ++l)
      for (size_t i = 0; i < im.state[p][l].written.size(); ++i)
        if (!im.state[p][l].written[i])
          throw InternalError("pyramid writer: tile " + std::to_string(i) + " of level " + std::to_string(l) +
                              " of plane " + std::to_string(p) + " missing");
  uint64_t link = 8;  // where the previous "next IFD" offset lives (the header's first)
  auto chain = [&](std::vector<Entry> e) {
    const auto [start, next] = im.write_ifd(std::move(e));
    im.patch_u64(link, start);
    link = next;
  };
  const int nlevels = static_cast<int>(im.levels.size());
  // Aperio's layout puts the thumbnail second, before the reduced levels:
  // OpenSlide names a stripped second directory "thumbnail" whatever it is.
  const auto thumb =
      std::find_if(im.assoc.begin(), im.assoc.end(), [](const Impl::Assoc& a) { return a.name == "thumbnail"; });
  const bool thumb_second = im.opt.aperio && im.opt.layout == TiffLevelLayout::kChain && thumb != im.assoc.end();
  if (im.opt.layout == TiffLevelLayout::kChain) {
    for (int l = 0; l < nlevels; ++l) {
      chain(im.level_entries(0, l));
      if (l == 0 && thumb_second) chain(im.assoc_entries(*thumb));
    }
  } else {
    // A plane's reduced levels are written before it, so its SubIFDs tag can
    // point at them; their own next-IFD offsets stay 0 (readers follow the
    // SubIFDs array, as libtiff writes it).
    for (int p = 0; p < im.opt.planes; ++p) {
      std::vector<uint64_t> subs;
      for (int l = 1; l < nlevels; ++l) subs.push_back(im.write_ifd(im.level_entries(p, l)).first);
      std::vector<Entry> e = im.level_entries(p, 0);
      if (!subs.empty()) e.push_back(long8s(330, subs, kIfd8));
      chain(std::move(e));
    }
  }
  for (auto a = im.assoc.begin(); a != im.assoc.end(); ++a)
    if (!(thumb_second && a == thumb)) chain(im.assoc_entries(*a));
  {
    TraceSpan span("close", 0);
    if (::close(im.fd) != 0) {
      im.fd = -1;
      im.fail(std::strerror(errno));
    }
  }
  im.fd = -1;
  TraceSpan span("rename", 0);
  im.out.commit();
  im.finished = true;
}

}  // namespace tw
