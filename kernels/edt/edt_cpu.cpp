#include <tbb/enumerable_thread_specific.h>
#include <tbb/parallel_for.h>

#include <chrono>
#include <cmath>
#include <limits>
#include <vector>

#include "engine/error.hpp"
#include "kernels/edt/edt.hpp"

namespace tw {
namespace {

int64_t floor_div(int64_t a, int64_t b) {  // b > 0
  const int64_t q = a / b;
  return (a % b != 0 && a < 0) ? q - 1 : q;
}

// Foreground flags of a band: value > threshold (RGB: BT.601 luma).
void foreground(const Image& band, double thr, std::vector<uint8_t>& fg, int64_t row) {
  const int64_t w = band.rect().w;
  const PixelFormat f = band.fmt();
  const int64_t y = band.rect().y + row;
  const uint8_t* p = band.row_bytes(y);
  for (int64_t x = 0; x < w; ++x) {
    double v = 0;
    auto sample = [&](int c) -> double {
      switch (f.type) {
        case SampleType::kU8: return p[x * f.channels + c];
        case SampleType::kU16: return reinterpret_cast<const uint16_t*>(p)[x * f.channels + c];
        case SampleType::kI32: return reinterpret_cast<const int32_t*>(p)[x * f.channels + c];
        case SampleType::kF32: return reinterpret_cast<const float*>(p)[x * f.channels + c];
      }
      return 0;
    };
    if (f.channels >= 3) v = 0.299 * sample(0) + 0.587 * sample(1) + 0.114 * sample(2);
    else v = sample(0);
    fg[static_cast<size_t>(x)] = v > thr;
  }
}

}  // namespace

void edt_row(const int64_t* g2, int64_t n, int64_t inf2, int64_t* out, int64_t* s, int64_t* t) {
  (void)inf2;
  auto f = [&](int64_t x, int64_t i) { return (x - i) * (x - i) + g2[i]; };
  // Where the parabola of u overtakes the one of i (Meijster's Sep).
  auto sep = [&](int64_t i, int64_t u) { return floor_div(u * u - i * i + g2[u] - g2[i], 2 * (u - i)); };
  int64_t q = 0;
  s[0] = 0, t[0] = 0;
  for (int64_t u = 1; u < n; ++u) {
    while (q >= 0 && f(t[q], s[q]) > f(t[q], u)) --q;
    if (q < 0) {
      q = 0, s[0] = u;
    } else {
      const int64_t w = 1 + sep(s[q], u);
      if (w < n) ++q, s[q] = u, t[q] = w;
    }
  }
  for (int64_t u = n - 1; u >= 0; --u) {
    out[u] = f(u, s[q]);
    if (u == t[q]) --q;
  }
}

std::unique_ptr<RawRasterFile> euclidean_distance(const TileSource& src, const EdtParams& p, size_t memory,
                                                  const std::string& scratch_near, EdtStats* stats) {
  const auto t0 = std::chrono::steady_clock::now();
  const LevelInfo& l0 = src.level(0);
  const int64_t W = l0.width, H = l0.height;
  if (W > (int64_t{1} << 30) || H > (int64_t{1} << 30))
    throw InputError("the distance transform handles images up to 2^30 pixels a side");
  // Column distances below each pixel, in 16 bits where the height allows
  // (65535 = no background below).
  const bool narrow = H < 65535;
  const PixelFormat gfmt{narrow ? SampleType::kU16 : SampleType::kI32, 1};
  const int64_t kInf = narrow ? 65535 : std::numeric_limits<int32_t>::max();
  // Bands: whatever the budget holds (source rows, g rows, output rows,
  // row-pass scratch), at least one row.
  const size_t per_row = static_cast<size_t>(W) * (src.info().fmt.bytes_per_pixel() + 4 + 4 + 4 * 8);
  const int64_t band = std::max<int64_t>(1, std::min<int64_t>(256, static_cast<int64_t>(memory / 2 / std::max<size_t>(per_row, 1))));

  RawRasterFile below(scratch_near, gfmt, W, H);
  std::vector<int64_t> down(static_cast<size_t>(W), kInf);
  std::vector<uint8_t> fg(static_cast<size_t>(W));
  uint64_t n_fg = 0, n_bg = 0;
  // Bottom-up: distance to the nearest background at or below, per column.
  for (int64_t y1 = H; y1 > 0; y1 -= band) {
    const int64_t y0 = std::max<int64_t>(0, y1 - band);
    const Image in = src.read(0, Rect(0, y0, W, y1 - y0));
    Image g(gfmt, Rect(0, y0, W, y1 - y0));
    for (int64_t y = y1 - 1; y >= y0; --y) {
      foreground(in, p.threshold, fg, y - y0);
      for (int64_t x = 0; x < W; ++x) {
        int64_t& d = down[static_cast<size_t>(x)];
        if (!fg[static_cast<size_t>(x)]) d = 0, ++n_bg;
        else d = d >= kInf ? kInf : std::min<int64_t>(d + 1, kInf), ++n_fg;
        if (narrow) g.row<uint16_t>(y)[x] = static_cast<uint16_t>(d);
        else g.row<int32_t>(y)[x] = static_cast<int32_t>(d);
      }
    }
    below.write(g.view());
  }

  auto out = std::make_unique<RawRasterFile>(scratch_near, PixelFormat{SampleType::kF32, 1}, W, H);
  std::vector<int64_t> up(static_cast<size_t>(W), kInf);
  // Larger than any squared distance in the image; with sides under 2^30
  // every sum in the row pass stays below 2^63.
  const int64_t inf2 = W * W + H * H + 1;
  struct Scratch {
    std::vector<int64_t> g2, d2, s, t;
  };
  tbb::enumerable_thread_specific<Scratch> scratch;
  for (int64_t y0 = 0; y0 < H; y0 += band) {
    const int64_t rows = std::min(band, H - y0);
    const Image in = src.read(0, Rect(0, y0, W, rows));
    const Image g = below.read(0, Rect(0, y0, W, rows));
    Image col(PixelFormat{SampleType::kI32, 1}, Rect(0, y0, W, rows));  // min(up, down) per pixel
    for (int64_t y = y0; y < y0 + rows; ++y) {
      foreground(in, p.threshold, fg, y - y0);
      int32_t* c = col.row<int32_t>(y);
      for (int64_t x = 0; x < W; ++x) {
        int64_t& u = up[static_cast<size_t>(x)];
        u = fg[static_cast<size_t>(x)] ? (u >= kInf ? kInf : std::min<int64_t>(u + 1, kInf)) : 0;
        const int64_t d = narrow ? g.row<uint16_t>(y)[x] : g.row<int32_t>(y)[x];
        c[x] = static_cast<int32_t>(std::min(u, d));
      }
    }
    Image dist(PixelFormat{SampleType::kF32, 1}, Rect(0, y0, W, rows));
    tbb::parallel_for(y0, y0 + rows, [&](int64_t y) {
      Scratch& sc = scratch.local();
      sc.g2.resize(static_cast<size_t>(W)), sc.d2.resize(static_cast<size_t>(W));
      sc.s.resize(static_cast<size_t>(W)), sc.t.resize(static_cast<size_t>(W));
      const int32_t* c = col.row<int32_t>(y);
      for (int64_t x = 0; x < W; ++x) {
        const int64_t v = c[x] >= kInf ? kInf : c[x];
        sc.g2[static_cast<size_t>(x)] = v >= kInf ? inf2 : v * v;
      }
      edt_row(sc.g2.data(), W, inf2, sc.d2.data(), sc.s.data(), sc.t.data());
      float* o = dist.row<float>(y);
      for (int64_t x = 0; x < W; ++x) {
        const int64_t d2 = sc.d2[static_cast<size_t>(x)];
        o[x] = d2 >= inf2 ? std::numeric_limits<float>::infinity() : static_cast<float>(std::sqrt(static_cast<double>(d2)));
      }
    });
    out->write(dist.view());
  }
  if (stats) {
    stats->seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    stats->foreground = n_fg, stats->background = n_bg;
  }
  return out;
}

}  // namespace tw
