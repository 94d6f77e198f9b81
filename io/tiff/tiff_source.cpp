#include "io/tiff/tiff_source.hpp"

#include <fcntl.h>
#include <openslide.h>
#include <sys/stat.h>
#include <tbb/parallel_for.h>
#include <tiffio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <limits>
#include <mutex>

#include "engine/byte_lru.hpp"
#include "engine/error.hpp"
#include "engine/memory.hpp"
#include "io/codec/jpeg_codec.hpp"
#include "io/tiff/ome_xml_reader.hpp"
#include "io/tiff/tiff_dir.hpp"
#include "io/tiff/tiff_error.hpp"
#include "io/vendor_metadata.hpp"

namespace tw {
namespace {

// One decoder per thread: it keeps libjpeg's state (and memory) between tiles.
JpegDecoder& thread_jpeg_decoder() {
  thread_local JpegDecoder dec;
  return dec;
}

// Decode buffers up to this size are kept per thread and taken without the
// budget's lock (they are part of the fixed overhead per thread); larger
// ones, which only a file's header can ask for, wait for room in the budget.
constexpr size_t kSmallUnitBytes = size_t{4} << 20;
constexpr size_t kDefaultDecodeBudget = size_t{1} << 30;

}  // namespace

struct TiffSource::Impl {
  std::string path;
  int fd = -1;
  uint64_t file_size = 0;
  std::vector<Dir> levels;
  // OME-TIFF channels stored one IFD per channel: every level's IFD of each
  // channel plane (plane 0 is levels[l]); empty where a level is one IFD.
  std::vector<std::vector<Dir>> plane_dirs;
  PixelFormat fmt;  // what a read yields: all planes' samples interleaved
  std::vector<Dir> assoc;
  std::vector<std::string> assoc_names;

  // libtiff handles are not thread-safe: a pool, one handle per reader.
  std::mutex pool_mu;
  std::vector<std::pair<TIFF*, int>> pool;  // handle, dir_key it is set to (-1 none)
  std::mutex scan_mu;                       // row-by-row reads of big strips share one handle
  ByteLru<Image> cache;                     // decoded chunks, keyed by (level, chunk index)
  mutable ByteBudget decode_budget{kDefaultDecodeBudget};

  // Room for a decode of `bytes` (nothing to wait for when small); refuses
  // one that could never fit.
  ByteBudget::Hold reserve(size_t bytes, int level, int64_t ci) const {
    if (bytes <= kSmallUnitBytes) return {};
    if (bytes > decode_budget.capacity())
      throw InputError(chunk_name(level, levels[level], ci) + " takes " + format_bytes(bytes) +
                       " to decode, more than the reader's budget of " + format_bytes(decode_budget.capacity()) +
                       " (a quarter of --memory)");
    return decode_budget.acquire(bytes);
  }

  // Refuses a chunk whose compressed bytes cannot hold the pixels its
  // header declares (see max_decoded_bytes).
  void check_plausible(const Dir& d, int level, int64_t ci, uint64_t decoded) const {
    const uint64_t n = d.counts[ci];
    if (decoded > max_decoded_bytes(d.compression, n))
      throw InputError("damaged TIFF: " + chunk_name(level, d, ci) + " holds " + std::to_string(n) + " bytes of " +
                       compression_name(d.compression) + " data, too few for the " + std::to_string(decoded) +
                       " bytes of pixels it declares");
  }

  void classify(const std::vector<Dir>& dirs, const std::vector<Dir>& sub_dirs, bool aperio);
  std::vector<size_t> read_ome(std::vector<Dir>& dirs, std::vector<std::string>& names);
  void add_planes(TIFF* t, const std::vector<Dir>& channel_dirs, const std::vector<std::vector<uint64_t>>& subifds,
                  const std::vector<size_t>& ifds);
  void check_within_file(const Dir& d, int level) const;

  int planes(int level) const {
    return plane_dirs.empty() || plane_dirs[level].empty() ? 1 : static_cast<int>(plane_dirs[level].size());
  }
  const Dir& dir(int level, int plane) const { return plane == 0 ? levels[level] : plane_dirs[level][plane]; }
  // A pool handle's directory: a level and a plane of it.
  static int dir_key(int level, int plane) { return level * (kMaxChannels + 1) + plane; }

  ~Impl() {
    for (auto& h : pool) TIFFClose(h.first);
    if (fd >= 0) ::close(fd);
  }

  TIFF* open_handle() {
    clear_tiff_error();
    // "m": no memory mapping, or every byte read would count against RSS.
    TIFF* t = TIFFOpen(path.c_str(), "rm");
    if (!t) throw InputError("cannot read TIFF " + path + ": " + take_tiff_error());
    return t;
  }

  // A handle borrowed from the pool, set to one level; returned on scope exit.
  class Lease {
   public:
    Lease(Impl* impl, TIFF* t) : impl_(impl), t_(t) {}
    Lease(Lease&& o) noexcept : impl_(o.impl_), t_(o.t_), level_(o.level_) { o.t_ = nullptr; }
    Lease(const Lease&) = delete;
    Lease& operator=(const Lease&) = delete;
    Lease& operator=(Lease&&) = delete;
    ~Lease() {
      if (!t_) return;
      std::lock_guard<std::mutex> l(impl_->pool_mu);
      impl_->pool.emplace_back(t_, level_);
    }
    TIFF* t() const { return t_; }
    void set_level(int level) { level_ = level; }

   private:
    Impl* impl_;
    TIFF* t_;
    int level_ = -1;
  };

  Lease lease(int level, int plane) {
    const int key = dir_key(level, plane);
    TIFF* t = nullptr;
    int cur = -1;
    {
      std::lock_guard<std::mutex> l(pool_mu);
      for (size_t i = 0; i < pool.size(); ++i)
        if (pool[i].second == key) {
          t = pool[i].first, cur = key;
          pool.erase(pool.begin() + static_cast<long>(i));
          break;
        }
      if (!t && !pool.empty()) {
        t = pool.back().first, cur = pool.back().second;
        pool.pop_back();
      }
    }
    if (!t) t = open_handle();
    Lease ls(this, t);
    if (cur != key) set_dir(t, dir(level, plane));
    ls.set_level(key);
    return ls;
  }

  void set_dir(TIFF* t, const Dir& d) {
    clear_tiff_error();
    const int ok = d.subifd ? TIFFSetSubDirectory(t, d.subifd) : TIFFSetDirectory(t, d.index);
    if (!ok)
      throw InputError("cannot read directory " + std::to_string(d.index) + " of " + path + ": " + take_tiff_error());
  }

  std::string chunk_name(int level, const Dir& d, int64_t ci) const {
    return std::string(d.tiled ? "tile " : "strip ") + std::to_string(ci) + " of level " + std::to_string(level) +
           " of " + path;
  }

  std::vector<uint8_t> read_raw(const Dir& d, int level, int64_t ci) const {
    const uint64_t off = d.offsets[ci], n = d.counts[ci];
    std::vector<uint8_t> buf(n);
    size_t got = 0;
    while (got < n) {
      const ssize_t r = ::pread(fd, buf.data() + got, n - got, static_cast<off_t>(off + got));
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0)
        throw InputError("cannot read " + chunk_name(level, d, ci) + ": " +
                         (r < 0 ? std::strerror(errno) : "file ends early"));
      got += static_cast<size_t>(r);
    }
    return buf;
  }

  // Converts decoded rows of plane p (packed, libtiff's layout) into the
  // part of dst they cover.
  void convert_into(const Dir& d, const uint8_t* packed, const Rect& chunk, int plane, const ImageView& dst) const {
    const Rect o = chunk.intersect(dst.rect);
    if (o.empty()) return;
    const size_t in_bpp = d.plane_bytes_per_pixel();
    const size_t in_stride = static_cast<size_t>(chunk.w) * in_bpp;
    const size_t out_bpp = dst.fmt.bytes_per_pixel();
    for (int64_t y = o.y; y < o.y1(); ++y) {
      const uint8_t* in =
          packed + static_cast<size_t>(y - chunk.y) * in_stride + static_cast<size_t>(o.x - chunk.x) * in_bpp;
      uint8_t* out = dst.ptr_bytes(o.x, y);
      if (d.photometric == PHOTOMETRIC_PALETTE) {
        for (int64_t x = 0; x < o.w; ++x)
          for (int c = 0; c < 3; ++c) out[x * 3 + c] = static_cast<uint8_t>(d.cmap[c][in[x]] >> 8);
      } else if (d.planar == PLANARCONFIG_SEPARATE) {
        const size_t sb = d.bits / 8;
        for (int64_t x = 0; x < o.w; ++x) std::memcpy(out + x * out_bpp + plane * sb, in + x * sb, sb);
      } else {
        std::memcpy(out, in, static_cast<size_t>(o.w) * out_bpp);
      }
      if (d.photometric == PHOTOMETRIC_MINISWHITE) {
        // Only the gray sample inverts; an alpha sample keeps its meaning.
        // read_dir refuses MinIsWhite of other than 8 or 16 bits.
        if (d.bits == 8) {
          for (int64_t x = 0; x < o.w; ++x) out[x * out_bpp] = static_cast<uint8_t>(255 - out[x * out_bpp]);
        } else {
          auto* o16 = reinterpret_cast<uint16_t*>(out);
          const int ch = dst.fmt.channels;
          for (int64_t x = 0; x < o.w; ++x) o16[x * ch] = static_cast<uint16_t>(65535 - o16[x * ch]);
        }
      }
    }
  }

  // The stream must be no larger than the stored tile (strip: its rows), so
  // a header claiming more cannot size libjpeg's buffers.
  void decode_jpeg(const Dir& d, int level, int64_t ci, const uint8_t* data, size_t n, const Rect& chunk,
                   const ImageView& dst) const {
    JpegDecoder& dec = thread_jpeg_decoder();
    const Rect o = chunk.intersect(dst.rect);
    if (o.empty()) return;
    // The stream is at most the tile or strip the directory declares (an
    // edge tile is stored whole; a last strip cut short, or padded).
    const int64_t sw = d.chunk_w, sh = d.chunk_h;
    if (o.x == chunk.x && o.y == chunk.y) {
      dec.decode(data, n, d.jpeg_tables, d.photometric, sw, sh, dst.sub(o), chunk_name(level, d, ci));
      return;
    }
    Image tmp(dst.fmt, chunk);
    dec.decode(data, n, d.jpeg_tables, d.photometric, sw, sh, tmp.view(), chunk_name(level, d, ci));
    copy_overlap(tmp.view(), dst);
  }

  // Decodes chunk (cx, cy) of a level and writes what overlaps dst.
  void read_chunk(int level, int64_t cx, int64_t cy, const ImageView& dst) {
    const Dir& d = levels[level];
    const int64_t ci = cy * d.across() + cx;
    const Rect chunk = d.chunk_rect(cx, cy);
    const uint64_t key = (static_cast<uint64_t>(level) << 48) | static_cast<uint64_t>(ci);
    if (cache.enabled()) {
      if (auto hit = cache.get(key)) {
        copy_overlap(hit->view(), dst);
        return;
      }
    }
    // A chunk read in part (a neighbour's halo) is cached, evicting the
    // least recently used: its other parts are read soon. A chunk read
    // whole is cached only into free room, evicting nothing: a later pass
    // over the image (a pipeline reads its input again for its output or
    // its features) then finds what fitted, where under LRU a pass over an
    // image larger than the cache would evict each chunk before its turn.
    const bool part = !dst.rect.contains(chunk);
    const size_t chunk_bytes = static_cast<size_t>(chunk.w * chunk.h) * dst.fmt.bytes_per_pixel();
    if (cache.enabled() && !chunk.intersect(dst.rect).empty() && (part || cache.has_room(chunk_bytes))) {
      auto img = std::make_shared<Image>(dst.fmt, chunk);
      decode_chunk(level, cx, cy, img->view());
      copy_overlap(img->view(), dst);
      const size_t bytes = img->size_bytes();
      if (part)
        cache.put(key, std::move(img), bytes);
      else
        cache.put_if_room(key, std::move(img), bytes);
      return;
    }
    decode_chunk(level, cx, cy, dst);
  }

  void decode_chunk(int level, int64_t cx, int64_t cy, const ImageView& dst) {
    if (planes(level) == 1) return decode_plane(level, 0, cx, cy, dst);
    // Channels one IFD each (OME-TIFF): each plane's chunk is decoded
    // alone and its samples put in their place among all the channels.
    // The chunks of one position share their grid (checked on opening).
    const Rect o = levels[level].chunk_rect(cx, cy).intersect(dst.rect);
    if (o.empty()) return;
    const PixelFormat pf = levels[level].out_fmt;
    Image tmp(pf, o);
    const size_t pb = pf.bytes_per_pixel(), db = dst.fmt.bytes_per_pixel();
    for (int p = 0; p < planes(level); ++p) {
      decode_plane(level, p, cx, cy, tmp.view());
      for (int64_t y = o.y; y < o.y1(); ++y) {
        const uint8_t* in = tmp.view().ptr_bytes(o.x, y);
        uint8_t* out = dst.ptr_bytes(o.x, y) + static_cast<size_t>(p) * pb;
        for (int64_t x = 0; x < o.w; ++x)
          std::memcpy(out + static_cast<size_t>(x) * db, in + static_cast<size_t>(x) * pb, pb);
      }
    }
  }

  // Plane `plane` of chunk (cx, cy) into dst (of that plane's format).
  void decode_plane(int level, int plane, int64_t cx, int64_t cy, const ImageView& dst) {
    const Dir& d = dir(level, plane);
    const int64_t ci = cy * d.across() + cx;
    const Rect chunk = d.chunk_rect(cx, cy);
    if (d.counts[ci] == 0) {
      // Sparse file: an absent tile reads as zeros (GDAL's convention).
      const Rect o = chunk.intersect(dst.rect);
      for (int64_t y = o.y; y < o.y1(); ++y)
        std::memset(dst.ptr_bytes(o.x, y), 0, static_cast<size_t>(o.w) * dst.fmt.bytes_per_pixel());
      return;
    }
    const int64_t full_h = d.tiled ? d.chunk_h : chunk.h;
    const int64_t full_w = d.tiled ? d.chunk_w : chunk.w;
    const size_t size = static_cast<size_t>(full_w) * d.plane_bytes_per_pixel() * static_cast<size_t>(full_h);
    if (d.own_jpeg) {
      check_plausible(d, level, ci, static_cast<uint64_t>(full_w) * full_h * dst.fmt.bytes_per_pixel());
      const auto hold = reserve(d.unit_bytes, level, ci);
      const auto raw = read_raw(d, level, ci);
      decode_jpeg(d, level, ci, raw.data(), raw.size(), chunk, dst);
      return;
    }
    if (d.row_by_row()) {
      check_plausible(d, level, ci, size);
      read_scanlines(level, plane, chunk.intersect(dst.rect), dst);
      return;
    }
    // PlanarConfiguration separate: every plane's chunk must be plausible
    // before any is decoded.
    for (int p = 0; p < d.planes(); ++p) check_plausible(d, level, ci + p * d.per_plane(), size);
    // Buffers of ordinary tiles stay with their thread; one a header made
    // large is held under the budget and freed after the decode.
    const auto hold = reserve(d.unit_bytes, level, ci);
    thread_local std::vector<uint8_t> small;
    std::vector<uint8_t> large;
    std::vector<uint8_t>& buf = size <= kSmallUnitBytes ? small : large;
    if (buf.size() < size) buf.resize(size);
    Lease ls = lease(level, plane);
    for (int p = 0; p < d.planes(); ++p) {
      const uint32_t index = static_cast<uint32_t>(ci + p * d.per_plane());
      // libtiff may report success without writing the whole buffer (4.5's
      // deflate decoder accepts a stream that decodes to more than the tile
      // and stops before the match that overflows; fuzz_tiff_source): what it
      // leaves must be zeros, not pixels of the last chunk, or of another
      // file, this thread decoded.
      std::memset(buf.data(), 0, size);
      clear_tiff_error();
      const tmsize_t got = d.tiled ? TIFFReadEncodedTile(ls.t(), index, buf.data(), static_cast<tmsize_t>(size))
                                   : TIFFReadEncodedStrip(ls.t(), index, buf.data(), static_cast<tmsize_t>(size));
      if (got < 0) throw InputError("cannot decode " + chunk_name(level, d, ci) + ": " + take_tiff_error());
      // Tiles are stored full size; the packed row length is the tile's.
      const Rect full(chunk.x, chunk.y, full_w, full_h);
      convert_into(d, buf.data(), full, p, dst);
    }
  }

  void read_scanlines(int level, int plane, const Rect& r, const ImageView& dst) {
    const Dir& d = dir(level, plane);
    const auto hold = reserve(d.unit_bytes, level, r.y / d.chunk_h * d.across());
    std::lock_guard<std::mutex> l(scan_mu);
    Lease ls = lease(level, plane);
    const size_t row_bytes = static_cast<size_t>(d.width) * d.plane_bytes_per_pixel();
    std::vector<uint8_t> row(row_bytes);
    for (int p = 0; p < d.planes(); ++p)
      for (int64_t y = r.y; y < r.y1(); ++y) {
        std::memset(row.data(), 0, row.size());  // as in decode_chunk: nothing of the last row
        clear_tiff_error();
        if (TIFFReadScanline(ls.t(), row.data(), static_cast<uint32_t>(y), static_cast<uint16_t>(p)) < 0)
          throw InputError("cannot decode row " + std::to_string(y) + " of level " + std::to_string(level) + " of " +
                           path + ": " + take_tiff_error());
        convert_into(d, row.data(), Rect(0, y, d.width, 1), p, dst);
      }
  }
};

bool TiffSource::looks_like_tiff(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0) return false;
  unsigned char m[4] = {0, 0, 0, 0};
  const ssize_t n = ::read(fd, m, 4);
  ::close(fd);
  if (n != 4) return false;
  const bool le = m[0] == 'I' && m[1] == 'I' && (m[2] == 42 || m[2] == 43) && m[3] == 0;
  const bool be = m[0] == 'M' && m[1] == 'M' && m[2] == 0 && (m[3] == 42 || m[3] == 43);
  return le || be;
}

namespace {

std::vector<Dir> read_sub_dirs(TIFF* t, const std::vector<uint64_t>& offsets) {
  std::vector<Dir> out;
  for (uint64_t off : offsets)
    if (TIFFSetSubDirectory(t, off)) out.push_back(read_dir(t, 0, off));
  return out;
}

// Same pixels and the same chunk grid: planes of one level interleave chunk
// by chunk (TiffSource::Impl::decode_chunk).
bool same_grid(const Dir& a, const Dir& b) {
  return a.unsupported.empty() && b.unsupported.empty() && a.width == b.width && a.height == b.height &&
         a.out_fmt == b.out_fmt && a.tiled == b.tiled && a.chunk_w == b.chunk_w && a.chunk_h == b.chunk_h;
}

// Every directory of the main chain, and the SubIFDs of the first; the
// SubIFD offsets of each (OME-TIFF keeps a channel's levels there).
void read_directories(TIFF* t, const std::string& path, std::vector<Dir>& dirs, std::vector<Dir>& sub_dirs,
                      std::vector<std::vector<uint64_t>>& subifd_offsets) {
  do {
    dirs.push_back(read_dir(t, TIFFCurrentDirectory(t), 0));
    uint16_t n = 0;
    uint64_t* offs = nullptr;
    subifd_offsets.emplace_back();
    if (TIFFGetField(t, TIFFTAG_SUBIFD, &n, &offs) && offs) subifd_offsets.back().assign(offs, offs + n);
    if (dirs.size() > 4096) break;  // a loop libtiff failed to notice
    if (TIFFLastDirectory(t)) break;
    clear_tiff_error();
    // A next directory that cannot be read means a cut or damaged file, not
    // the end of the chain: better refused than silently shortened.
    if (!TIFFReadDirectory(t))
      throw InputError("truncated or damaged TIFF " + path + ": directory " + std::to_string(dirs.size()) +
                       " cannot be read (" + take_tiff_error() + ")");
  } while (true);
  sub_dirs = read_sub_dirs(t, subifd_offsets.front());
}

}  // namespace

// Levels: directory 0, then smaller directories of the same pixel format
// (SubIFDs first, OME style), tiled or flagged reduced-resolution; the
// others are associated images, or pages a reader of page 0 would drop.
void TiffSource::Impl::classify(const std::vector<Dir>& dirs, const std::vector<Dir>& sub_dirs, bool aperio) {
  const Dir& d0 = dirs.front();
  levels.push_back(d0);
  auto is_named_assoc = [&](const Dir& d) { return associated_name(d, false, false).rfind("image-", 0) != 0; };
  auto try_level = [&](const Dir& d) {
    const Dir& prev = levels.back();
    return d.unsupported.empty() && d.out_fmt == d0.out_fmt && d.width < prev.width && d.height <= prev.height &&
           (d.tiled || (d.subfile_type & FILETYPE_REDUCEDIMAGE)) && !is_named_assoc(d);
  };
  for (const Dir& d : sub_dirs)
    if (try_level(d)) levels.push_back(d);
  bool first_assoc = true;
  int full_size_pages = 1;
  for (size_t i = 1; i < dirs.size(); ++i) {
    const Dir& d = dirs[i];
    if (sub_dirs.empty() && try_level(d)) {
      levels.push_back(d);
      continue;
    }
    // Another image as large as the first, not a label or macro: a stack,
    // or channels stored one per page (OME-TIFF). Reading page 0 alone would
    // drop the others without a word.
    if (d.width == d0.width && d.height == d0.height && !is_named_assoc(d)) ++full_size_pages;
    if (d.unsupported.empty() || d.width > 0) {
      // Names are how images are asked for: a second "label" would never be
      // read (the first one would be, twice). It keeps its directory's name.
      std::string name = associated_name(d, aperio, first_assoc);
      if (std::find(assoc_names.begin(), assoc_names.end(), name) != assoc_names.end())
        name = "image-" + std::to_string(d.index);
      assoc.push_back(d);
      assoc_names.push_back(name);
      first_assoc = false;
    }
  }
  if (full_size_pages > 1)
    throw UnsupportedFormat(path + " holds " + std::to_string(full_size_pages) + " full-size images (a stack, or " +
                            "channels stored one per page); only single-image files and pyramids are supported");
  for (size_t l = 0; l < levels.size(); ++l) check_within_file(levels[l], static_cast<int>(l));
}

// A truncated file shows as chunks that end past the end of the file:
// refused on opening, before any output is written.
void TiffSource::Impl::check_within_file(const Dir& d, int level) const {
  for (size_t i = 0; i < d.offsets.size(); ++i)
    if (d.counts[i] > 0 && (d.offsets[i] > file_size || d.counts[i] > file_size - d.offsets[i]))
      throw InputError("truncated TIFF " + path + ": " + (d.tiled ? "tile " : "strip ") + std::to_string(i) +
                       " of level " + std::to_string(level) + " ends at byte " +
                       std::to_string(d.offsets[i] + d.counts[i]) + ", past the end of the file (" +
                       std::to_string(file_size) + " bytes)");
}

// OME-TIFF: the OME-XML says which IFD holds which channel. Channels one
// IFD each become one image of all their samples; their IFDs leave `dirs`
// (they are no stack). Z stacks, time series, several images and planes in
// other files are refused by name. Returns the channels' IFDs (main-chain
// indices; one entry where the image is a single IFD).
std::vector<size_t> TiffSource::Impl::read_ome(std::vector<Dir>& dirs, std::vector<std::string>& names) {
  const Dir& d0 = dirs.front();
  OmePixels px;
  try {
    px = parse_ome_xml(d0.description, path, d0.spp);
  } catch (const InputError&) {
    // Broken XML over one full-size image (with or without its label and
    // levels) loses nothing but names; over several full-size IFDs it is
    // the only map of them.
    const auto full_size = std::count_if(dirs.begin(), dirs.end(),
                                         [&](const Dir& d) { return d.width == d0.width && d.height == d0.height; });
    if (full_size == 1) return {0};
    throw;
  }
  const std::string what = path + ": OME-TIFF with ";
  // Images after the first that are a label, macro or thumbnail (as
  // Bio-Formats and our writer store them) are associated images: their
  // IFDs take the Image's name. Any other is a series of its own.
  for (const OmeOtherImage& o : px.others) {
    Dir named;
    named.description = o.name;
    const std::string kind = associated_name(named, false, false);
    if (kind.rfind("image-", 0) == 0 || o.ifd <= 0 || static_cast<uint64_t>(o.ifd) >= dirs.size())
      throw UnsupportedFormat(what + std::to_string(px.images) +
                              " images (series): only single-image OME-TIFF files (and their label and macro "
                              "images) are supported");
    dirs[static_cast<size_t>(o.ifd)].description = kind;
  }
  if (px.size_z > 1)
    throw UnsupportedFormat(what + "SizeZ=" + std::to_string(px.size_z) +
                            " (a Z stack): only a single plane per channel is supported");
  if (px.size_t_ > 1)
    throw UnsupportedFormat(what + "SizeT=" + std::to_string(px.size_t_) +
                            " (a time series): only a single plane per channel is supported");
  if (!px.other_file.empty())
    throw UnsupportedFormat(what + "planes in another file (" + px.other_file +
                            "): only single-file OME-TIFF is supported");
  if (px.size_x != d0.width || px.size_y != d0.height)
    throw InputError("OME-XML of " + path + " says the image is " + std::to_string(px.size_x) + "x" +
                     std::to_string(px.size_y) + ", its first IFD is " + std::to_string(d0.width) + "x" +
                     std::to_string(d0.height));
  const size_t planes = px.plane_ifd.size();  // one per channel IFD: Z = T = 1
  std::vector<size_t> ifds;
  for (size_t c = 0; c < planes; ++c) {
    const int64_t ifd = px.plane_ifd[c];
    if (ifd < 0 || static_cast<uint64_t>(ifd) >= dirs.size())
      throw InputError("OME-XML of " + path + " puts channel " + std::to_string(c) + " in IFD " +
                       (ifd < 0 ? std::string("(none)") : std::to_string(ifd)) + "; the file has " +
                       std::to_string(dirs.size()));
    if (std::find(ifds.begin(), ifds.end(), static_cast<size_t>(ifd)) != ifds.end())
      throw InputError("OME-XML of " + path + " puts two channels in IFD " + std::to_string(ifd));
    ifds.push_back(static_cast<size_t>(ifd));
  }
  if (ifds.front() != 0) throw UnsupportedFormat(path + ": OME-TIFF whose first channel is not in the first IFD");
  const int64_t channels = static_cast<int64_t>(planes) * d0.spp;
  if (channels > kMaxChannels)
    throw UnsupportedFormat(path + ": OME-TIFF with " + std::to_string(channels) + " channels (at most " +
                            std::to_string(kMaxChannels) + " are supported)");
  if (planes > 1 && d0.out_fmt.type == SampleType::kU32)
    throw UnsupportedFormat(path + ": OME-TIFF with " + std::to_string(planes) +
                            " channels of 32-bit unsigned samples (32-bit unsigned is read as one channel of labels)");
  for (size_t c = 1; c < planes; ++c) {
    const Dir& d = dirs[ifds[c]];
    if (!d.unsupported.empty()) throw UnsupportedFormat(path + ": channel " + std::to_string(c) + ": " + d.unsupported);
    if (!same_grid(d0, d))
      throw UnsupportedFormat(path + ": OME-TIFF whose channel " + std::to_string(c) + " (IFD " +
                              std::to_string(ifds[c]) + ") differs from channel 0 in size, pixel type or tiles");
  }
  if (static_cast<int64_t>(px.channels.size()) == channels &&
      std::any_of(px.channels.begin(), px.channels.end(), [](const OmeChannel& c) { return !c.name.empty(); }))
    for (const OmeChannel& c : px.channels) names.push_back(c.name);
  return ifds;
}

TiffSource::TiffSource(const std::string& path) : impl_(std::make_unique<Impl>()) {
  install_tiff_handlers();
  auto& im = *impl_;
  im.path = path;
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) throw InputError("cannot open " + path + ": " + std::strerror(errno));
  if (!S_ISREG(st.st_mode)) throw InputError(path + " is not a regular file");
  if (!looks_like_tiff(path)) throw InputError(path + " is not a TIFF file");
  im.file_size = static_cast<uint64_t>(st.st_size);
  im.fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (im.fd < 0) throw InputError("cannot open " + path + ": " + std::strerror(errno));

  take_tiff_warnings();  // another file's, on this thread
  TIFF* t = im.open_handle();
  im.pool.emplace_back(t, -1);  // closed with the source, whatever happens next
  std::vector<Dir> dirs, sub_dirs;
  std::vector<std::vector<uint64_t>> subifds;
  read_directories(t, path, dirs, sub_dirs, subifds);
  const bool big = TIFFIsBigTIFF(t) != 0;

  if (!dirs.front().unsupported.empty()) throw UnsupportedFormat(path + ": " + dirs.front().unsupported);
  std::vector<size_t> ifds{0};
  if (looks_like_ome(dirs.front().description)) ifds = im.read_ome(dirs, info_.channel_names);
  std::vector<Dir> channel_dirs;
  if (ifds.size() > 1) {
    // The channels' IFDs are one image, not pages of a stack.
    for (size_t i : ifds) channel_dirs.push_back(dirs[i]);
    std::vector<Dir> rest;
    for (size_t i = 0; i < dirs.size(); ++i)
      if (i == 0 || std::find(ifds.begin(), ifds.end(), i) == ifds.end()) rest.push_back(std::move(dirs[i]));
    dirs = std::move(rest);
  }
  const Dir& d0 = dirs.front();
  const char* vendor = openslide_detect_vendor(path.c_str());
  const bool aperio = (vendor && std::string(vendor) == "aperio") || d0.description.rfind("Aperio", 0) == 0;
  im.classify(dirs, sub_dirs, aperio);
  im.fmt = d0.out_fmt;
  if (ifds.size() > 1) im.add_planes(t, channel_dirs, subifds, ifds);
  fill_info(big ? "BigTIFF" : "TIFF", vendor ? vendor : "", aperio);
}

// The other channels' IFDs of every level: level 0 from the main chain,
// the others from each channel's SubIFDs, matched by size. Levels that not
// every channel has (or levels of the main chain, which belong to channel 0
// alone) are dropped: the pyramid computes them again.
void TiffSource::Impl::add_planes(TIFF* t, const std::vector<Dir>& channel_dirs,
                                  const std::vector<std::vector<uint64_t>>& subifds, const std::vector<size_t>& ifds) {
  const int n = static_cast<int>(ifds.size());
  std::vector<std::vector<Dir>> subs(static_cast<size_t>(n));
  for (int p = 1; p < n; ++p) subs[p] = read_sub_dirs(t, subifds[ifds[p]]);
  plane_dirs.assign(1, channel_dirs);
  for (size_t l = 1; l < levels.size(); ++l) {
    std::vector<Dir> row{levels[l]};
    for (int p = 1; p < n && levels[l].subifd != 0; ++p)
      for (const Dir& d : subs[p])
        if (same_grid(levels[l], d)) {
          row.push_back(d);
          break;
        }
    if (static_cast<int>(row.size()) != n) {
      levels.resize(l);
      break;
    }
    plane_dirs.push_back(std::move(row));
  }
  fmt = PixelFormat{levels[0].out_fmt.type, levels[0].out_fmt.channels * n};
  for (size_t l = 0; l < levels.size(); ++l) {
    size_t unit = 0;
    for (const Dir& d : plane_dirs[l]) {
      check_within_file(d, static_cast<int>(l));
      unit = std::max(unit, d.unit_bytes);
    }
    // One plane decoded at a time, into a chunk of that plane's samples.
    const Dir& d = levels[l];
    levels[l].unit_bytes = plane_dirs[l][0].unit_bytes =
        unit + static_cast<size_t>(d.chunk_w) * static_cast<size_t>(d.chunk_h) * d.out_fmt.bytes_per_pixel();
  }
}

void TiffSource::fill_info(const std::string& format, const std::string& vendor, bool aperio) {
  const auto& im = *impl_;
  const Dir& d0 = im.levels.front();
  info_.path = im.path;
  info_.format = format;
  info_.vendor = vendor;
  info_.fmt = im.fmt;
  info_.color = d0.photometric != PHOTOMETRIC_MINISBLACK && d0.photometric != PHOTOMETRIC_MINISWHITE;
  for (const Dir& d : im.levels) {
    LevelInfo li;
    li.width = d.width, li.height = d.height;
    li.tile_w = d.chunk_w, li.tile_h = d.chunk_h;
    li.downsample = static_cast<double>(d0.width) / static_cast<double>(d.width);
    li.compression = compression_name(d.compression) + (d.tiled ? "" : ", strips");
    if (d.compression == COMPRESSION_JPEG && d.photometric == PHOTOMETRIC_YCBCR)
      li.compression += " YCbCr " + std::to_string(d.sub_h) + "x" + std::to_string(d.sub_v);
    if (d.predictor == 2) li.compression += " +predictor";
    info_.levels.push_back(li);
  }
  for (size_t i = 0; i < im.assoc.size(); ++i)
    info_.associated.push_back({im.assoc_names[i], im.assoc[i].width, im.assoc[i].height});
  // The resolution tags, else an Aperio description's MPP; an absurd value
  // is no pixel size (io/vendor_metadata.hpp plausible_mpp).
  if (!set_pixel_size(info_, mpp_from(d0, d0.xres), mpp_from(d0, d0.yres), "XResolution/YResolution") && aperio) {
    const double mpp = aperio_mpp(d0.description);
    set_pixel_size(info_, mpp, mpp, "the Aperio description's MPP");
  }
  if (aperio) read_aperio_description(info_, d0.description);
  if (!d0.description.empty()) {
    std::string first = d0.description.substr(0, d0.description.find_first_of("\r\n"));
    if (first.size() > 200) first = first.substr(0, 200) + "...";
    info_.properties.emplace_back("tiff.ImageDescription", first);
  }
  if (d0.xres > 0) {
    info_.properties.emplace_back("tiff.XResolution", std::to_string(d0.xres));
    info_.properties.emplace_back("tiff.ResolutionUnit", d0.res_unit == RESUNIT_CENTIMETER ? "centimeter"
                                                         : d0.res_unit == RESUNIT_INCH     ? "inch"
                                                                                           : "none");
  }
}

TiffSource::~TiffSource() = default;

void TiffSource::set_cache_bytes(size_t n) {
  impl_->cache.set_capacity(n);
}
void TiffSource::set_read_cache(size_t bytes) const {
  impl_->cache.set_capacity(bytes);
}

size_t TiffSource::read_cache_for_level0() const {
  // In double, saturated: a header's sizes may multiply past 64 bits.
  const LevelInfo& l = level(0);
  const double b =
      static_cast<double>(l.width) * static_cast<double>(l.height) * static_cast<double>(info().fmt.bytes_per_pixel());
  return b >= 1.8e19 ? std::numeric_limits<size_t>::max() : static_cast<size_t>(b);
}

size_t TiffSource::decode_unit_bytes(int level) const {
  return impl_->levels.at(static_cast<size_t>(level)).unit_bytes;
}

void TiffSource::set_decode_budget(size_t bytes) const {
  impl_->decode_budget.set_capacity(bytes);
}

void TiffSource::read_inside(int level, const ImageView& dst) const {
  auto& im = *impl_;
  const Dir& d = im.levels[level];
  const int64_t cx0 = dst.rect.x / d.chunk_w, cx1 = (dst.rect.x1() - 1) / d.chunk_w;
  const int64_t cy0 = dst.rect.y / d.chunk_h, cy1 = (dst.rect.y1() - 1) / d.chunk_h;
  const int64_t nx = cx1 - cx0 + 1, n = nx * (cy1 - cy0 + 1);
  if (n == 1) {
    im.read_chunk(level, cx0, cy0, dst);
    return;
  }
  tbb::parallel_for(int64_t{0}, n, [&](int64_t i) { im.read_chunk(level, cx0 + i % nx, cy0 + i / nx, dst); });
}

const RawTileFormat* TiffSource::raw_format(int level) const {
  const Dir& d = impl_->levels.at(static_cast<size_t>(level));
  // A level of several IFDs has no one stored tile to copy.
  return d.raw_ok && impl_->planes(level) == 1 ? &d.raw : nullptr;
}

std::vector<uint8_t> TiffSource::read_raw_tile(int level, int64_t tx, int64_t ty) const {
  const Dir& d = impl_->levels.at(static_cast<size_t>(level));
  TW_ASSERT(d.tiled && tx >= 0 && ty >= 0 && tx < d.across() && ty < d.down());
  return impl_->read_raw(d, level, ty * d.across() + tx);
}

void TiffSource::decode_raw_tile(int level, int64_t tx, int64_t ty, const std::vector<uint8_t>& raw,
                                 const ImageView& dst) const {
  auto& im = *impl_;
  const Dir& d = im.levels.at(static_cast<size_t>(level));
  const int64_t ci = ty * d.across() + tx;
  if (d.own_jpeg && !raw.empty()) {
    im.decode_jpeg(d, level, ci, raw.data(), raw.size(), d.chunk_rect(tx, ty), dst);
    return;
  }
  // Other codecs decode through libtiff, which re-reads the (cached) bytes.
  im.read_chunk(level, tx, ty, dst);
}

bool TiffSource::decode_raw_tile_coefficients(int level, int64_t tx, int64_t ty, const std::vector<uint8_t>& raw,
                                              const JpegCoefLayout& layout, int16_t* coefs, uint16_t* quant) const {
  auto& im = *impl_;
  const Dir& d = im.levels.at(static_cast<size_t>(level));
  // Edge tiles too: TIFF stores every tile whole, padding included.
  if (!d.own_jpeg || raw.empty()) return false;
  const int64_t ci = ty * d.across() + tx;
  return thread_jpeg_decoder().decode_coefficients(raw.data(), raw.size(), d.jpeg_tables, layout, coefs, quant,
                                                   im.chunk_name(level, d, ci));
}

bool TiffSource::raw_tile_scan_head(int level, int64_t tx, int64_t ty, const std::vector<uint8_t>& raw,
                                    const JpegCoefLayout& layout, JpegScanHead& head) const {
  auto& im = *impl_;
  const Dir& d = im.levels.at(static_cast<size_t>(level));
  if (!d.own_jpeg || raw.empty()) return false;
  const int64_t ci = ty * d.across() + tx;
  return thread_jpeg_decoder().scan_head(raw.data(), raw.size(), d.jpeg_tables, layout, head,
                                         im.chunk_name(level, d, ci));
}

Image TiffSource::read_associated(const std::string& name) const {
  auto& im = *impl_;
  for (size_t i = 0; i < im.assoc.size(); ++i) {
    if (im.assoc_names[i] != name) continue;
    const Dir& d = im.assoc[i];
    // libtiff's RGBA reader would bring any other sample type down to 8 bits.
    if (!d.unsupported.empty() || d.bits != 8 || d.sample_format != SAMPLEFORMAT_UINT)
      throw InputError("associated image '" + name + "' of " + im.path + " is not 8-bit (" +
                       (d.unsupported.empty() ? std::to_string(d.bits) + "-bit samples" : d.unsupported) +
                       "): it is not copied");
    if (d.width > 16384 || d.height > 16384 || d.width * d.height > (int64_t{1} << 26))
      throw InputError("associated image '" + name + "' is too large to read whole (" + std::to_string(d.width) + "x" +
                       std::to_string(d.height) + ")");
    TIFF* t = im.open_handle();
    std::unique_ptr<TIFF, void (*)(TIFF*)> guard(t, TIFFClose);
    im.set_dir(t, d);
    std::vector<uint32_t> rgba(static_cast<size_t>(d.width * d.height));
    clear_tiff_error();
    if (!TIFFReadRGBAImageOriented(t, static_cast<uint32_t>(d.width), static_cast<uint32_t>(d.height), rgba.data(),
                                   ORIENTATION_TOPLEFT, 0))
      throw InputError("cannot decode associated image '" + name + "' of " + im.path + ": " + take_tiff_error());
    Image out(kRgb8, Rect(0, 0, d.width, d.height));
    for (int64_t y = 0; y < d.height; ++y) {
      uint8_t* o = out.row<uint8_t>(y);
      for (int64_t x = 0; x < d.width; ++x) {
        const uint32_t p = rgba[static_cast<size_t>(y * d.width + x)];
        o[3 * x] = static_cast<uint8_t>(TIFFGetR(p));
        o[3 * x + 1] = static_cast<uint8_t>(TIFFGetG(p));
        o[3 * x + 2] = static_cast<uint8_t>(TIFFGetB(p));
      }
    }
    return out;
  }
  return TileSource::read_associated(name);
}

}  // namespace tw
