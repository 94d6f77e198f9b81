#include "jobs/region/region_job.hpp"

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <vector>

#include "engine/error.hpp"
#include "engine/memory.hpp"
#include "engine/output_file.hpp"
#include "engine/text.hpp"
#include "io/codec/png_codec.hpp"
#include "io/dzi/dzi_tile_encoder.hpp"

namespace tw {
namespace {

bool is_png(const std::string& path) {
  return ends_with_nocase(path, ".png");
}

bool is_jpeg(const std::string& path) {
  return ends_with_nocase(path, ".jpg") || ends_with_nocase(path, ".jpeg");
}

// Source pixels [first, first + weights.size()) of one output pixel, each
// weighted by the fraction of it the output pixel covers (summing to 1).
struct Taps {
  int64_t first = 0;
  std::vector<double> weights;
};

std::vector<Taps> area_taps(int64_t in, int64_t out) {
  const double scale = static_cast<double>(in) / static_cast<double>(out);
  std::vector<Taps> taps(static_cast<size_t>(out));
  for (int64_t o = 0; o < out; ++o) {
    const double a = o * scale, b = std::min<double>((o + 1) * scale, static_cast<double>(in));
    Taps& t = taps[static_cast<size_t>(o)];
    t.first = static_cast<int64_t>(std::floor(a));
    const int64_t last = std::min<int64_t>(in, static_cast<int64_t>(std::ceil(b)));
    for (int64_t i = t.first; i < last; ++i)
      t.weights.push_back((std::min<double>(i + 1, b) - std::max<double>(i, a)) / (b - a));
  }
  return taps;
}

template <class T>
void thumbnail_rows(const TileSource& src, int level, const std::vector<Taps>& xs, const std::vector<Taps>& ys,
                    const Image& out, int64_t y0, int64_t y1) {
  const LevelInfo& li = src.level(level);
  const int ch = out.fmt().channels;
  const double maxv = static_cast<double>(std::numeric_limits<T>::max());
  std::vector<double> acc(static_cast<size_t>(out.rect().w * ch));
  for (int64_t y = y0; y < y1; ++y) {
    const Taps& ty = ys[static_cast<size_t>(y)];
    const Image band = src.read(level, Rect{0, ty.first, li.width, static_cast<int64_t>(ty.weights.size())});
    std::fill(acc.begin(), acc.end(), 0.0);
    for (size_t k = 0; k < ty.weights.size(); ++k) {
      const T* row = band.ptr<T>(0, ty.first + static_cast<int64_t>(k));
      const double wy = ty.weights[k];
      for (size_t x = 0; x < xs.size(); ++x) {
        const Taps& tx = xs[x];
        for (size_t j = 0; j < tx.weights.size(); ++j) {
          const T* p = row + (tx.first + static_cast<int64_t>(j)) * ch;
          const double w = wy * tx.weights[j];
          for (int c = 0; c < ch; ++c) acc[x * ch + c] += w * p[c];
        }
      }
    }
    T* dst = out.ptr<T>(0, y);
    for (size_t i = 0; i < acc.size(); ++i) dst[i] = static_cast<T>(std::min(maxv, std::max(0.0, std::round(acc[i]))));
  }
}

}  // namespace

Image read_region(const TileSource& src, const RegionRequest& r, size_t memory) {
  const SourceInfo& info = src.info();
  if (r.level < 0 || r.level >= src.level_count())
    throw InputError(info.path + " has levels 0 to " + std::to_string(src.level_count() - 1) + ", not " +
                     std::to_string(r.level));
  if (r.w < 1 || r.h < 1)
    throw InputError("region size " + std::to_string(r.w) + "x" + std::to_string(r.h) + " is empty");
  const double bytes =
      static_cast<double>(r.w) * static_cast<double>(r.h) * static_cast<double>(info.fmt.bytes_per_pixel());
  if (bytes > static_cast<double>(memory))
    throw InputError("region " + std::to_string(r.w) + "x" + std::to_string(r.h) + " of " + info.fmt.str() + " needs " +
                     format_bytes(static_cast<size_t>(bytes)) + ", more than --memory " + format_bytes(memory));
  const double ds = src.level(r.level).downsample;
  // 1e-9: a level-0 coordinate that is a multiple of the downsample must not
  // fall a pixel short through the division's rounding.
  const int64_t lx = static_cast<int64_t>(std::floor(static_cast<double>(r.x) / ds + 1e-9));
  const int64_t ly = static_cast<int64_t>(std::floor(static_cast<double>(r.y) / ds + 1e-9));
  Image out(info.fmt, Rect{lx, ly, r.w, r.h});
  const Border zero{BorderMode::kConstant, 0};
  // Bands read in parallel: a reader decodes its tiles on the thread that asks.
  constexpr int64_t kBand = 256;
  tbb::parallel_for(int64_t{0}, (r.h + kBand - 1) / kBand, [&](int64_t b) {
    const int64_t y = ly + b * kBand;
    src.read(r.level, out.view().sub(Rect{lx, y, r.w, std::min(kBand, ly + r.h - y)}), zero);
  });
  return out;
}

Image make_thumbnail(const TileSource& src, int64_t size, size_t memory) {
  const SourceInfo& info = src.info();
  const LevelInfo& l0 = src.level(0);
  if (size < 1) throw InputError("--size must be at least 1, not " + std::to_string(size));
  const int64_t longer = std::max(l0.width, l0.height);
  if (size > longer)
    throw InputError("--size " + std::to_string(size) + " is larger than " + info.path + " (" +
                     std::to_string(l0.width) + "x" + std::to_string(l0.height) + "): a thumbnail never enlarges");
  const double scale = static_cast<double>(size) / static_cast<double>(longer);
  const int64_t w = l0.width >= l0.height ? size : std::max<int64_t>(1, std::llround(l0.width * scale));
  const int64_t h = l0.height > l0.width ? size : std::max<int64_t>(1, std::llround(l0.height * scale));
  // The smallest level still at least as large as the thumbnail.
  int level = 0;
  for (int l = 1; l < src.level_count(); ++l)
    if (src.level(l).width >= w && src.level(l).height >= h) level = l;
  const LevelInfo& li = src.level(level);
  const std::vector<Taps> xs = area_taps(li.width, w), ys = area_taps(li.height, h);
  const size_t bpp = info.fmt.bytes_per_pixel();
  const size_t threads = static_cast<size_t>(tbb::this_task_arena::max_concurrency());
  const double band = static_cast<double>(ys.front().weights.size() + 2) * static_cast<double>(li.width) * bpp;
  const double need = static_cast<double>(w * h) * bpp + band * static_cast<double>(threads);
  if (need > static_cast<double>(memory))
    throw InputError("a " + std::to_string(w) + "x" + std::to_string(h) + " thumbnail from level " +
                     std::to_string(level) + " (" + std::to_string(li.width) + "x" + std::to_string(li.height) +
                     ") needs " + format_bytes(static_cast<size_t>(need)) + ", more than --memory " +
                     format_bytes(memory));
  Image out(info.fmt, Rect{0, 0, w, h});
  tbb::parallel_for(tbb::blocked_range<int64_t>(0, h, 4), [&](const tbb::blocked_range<int64_t>& rows) {
    switch (info.fmt.type) {
      case SampleType::kU8:
        thumbnail_rows<uint8_t>(src, level, xs, ys, out, rows.begin(), rows.end());
        break;
      case SampleType::kU16:
        thumbnail_rows<uint16_t>(src, level, xs, ys, out, rows.begin(), rows.end());
        break;
      default:
        throw InputError("thumbnail: " + info.fmt.str() + " pixels are not 8- or 16-bit");
    }
  });
  return out;
}

void check_image_file_output(const std::string& path, PixelFormat fmt) {
  if (is_png(path)) {
    if (!png_can_store(fmt))
      throw InputError(path + ": PNG holds 8- or 16-bit images of 1 to 4 channels, not " + fmt.str() +
                       " (pick channels with `tilewave filter channel`, or convert with `tilewave filter convert`)");
  } else if (is_jpeg(path)) {
    if (fmt.type != SampleType::kU8 || (fmt.channels != 1 && fmt.channels != 3))
      throw InputError(path + ": JPEG holds 8-bit gray or RGB, not " + fmt.str() + " (write a .png)");
  } else {
    throw InputError(path + ": the output must be a .png, .jpg or .jpeg file");
  }
}

void write_image_file(const std::string& path, const ImageView& img, int jpeg_quality) {
  check_image_file_output(path, img.fmt);
  std::vector<uint8_t> bytes;
  DziTileFormat f;
  f.codec = is_png(path) ? Codec::kPng : Codec::kJpeg;
  f.quality = jpeg_quality;
  f.fmt = img.fmt;
  DziTileEncoder(f).encode(img, bytes);
  OutputFile out(path);
  const uint8_t* p = bytes.data();
  size_t n = bytes.size();
  while (n > 0) {
    const ssize_t k = ::write(out.fd(), p, n);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) throw InputError("cannot write " + path + ": " + std::strerror(errno));
    p += k, n -= static_cast<size_t>(k);
  }
  out.commit();
}

}  // namespace tw
