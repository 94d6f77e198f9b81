#include "jobs/edt/edt_job.hpp"

#include <tbb/enumerable_thread_specific.h>
#include <tbb/parallel_for.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>
#include <vector>

#include "engine/error.hpp"
#include "engine/memory_source.hpp"
#include "jobs/edt/edt_support.hpp"
#include "kernels/edt/edt_row.hpp"

namespace tw {

std::shared_ptr<const TileSource> euclidean_distance(const TileSource& src, const EdtParams& p, size_t memory,
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
  const int64_t band =
      std::max<int64_t>(1, std::min<int64_t>(256, static_cast<int64_t>(memory / 2 / std::max<size_t>(per_row, 1))));

  // Both rasters (the column distances and the result) stay in memory when
  // they fit a quarter of the budget each; beyond that they spill to files.
  const size_t pixels = static_cast<size_t>(W) * static_cast<size_t>(H);
  Spillable below(gfmt, W, H, pixels * gfmt.bytes_per_pixel() <= memory / 4, scratch_near);
  std::vector<int64_t> down(static_cast<size_t>(W), kInf);
  std::atomic<uint64_t> n_fg{0}, n_bg{0};
  // Columns are independent: both column passes run over chunks of columns.
  const int64_t chunk = std::max<int64_t>(64, W / 64);
  auto column_chunks = [&](auto&& fn) {
    tbb::parallel_for(int64_t{0}, ceil_div(W, chunk), [&](int64_t c) { fn(c * chunk, std::min(W, (c + 1) * chunk)); });
  };
  // Bottom-up: distance to the nearest background at or below, per column.
  // 0 marks background, so the second pass needs no second read of the input.
  Image fgb(kGray8, Rect(0, 0, W, band)), gtmp;
  double read_s = 0;
  for (int64_t y1 = H; y1 > 0; y1 -= band) {
    const int64_t y0 = std::max<int64_t>(0, y1 - band), rows = y1 - y0;
    const auto r0 = std::chrono::steady_clock::now();
    const Image in = src.read(0, Rect(0, y0, W, rows));
    read_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - r0).count();
    fgb.set_origin(0, y0);
    tbb::parallel_for(int64_t{0}, rows,
                      [&](int64_t r) { foreground_row(in, p.threshold, fgb.row<uint8_t>(y0 + r), r); });
    const ImageView g = below.window(Rect(0, y0, W, rows), gtmp);
    column_chunks([&](int64_t x0, int64_t x1) {
      uint64_t f = 0;
      auto scan = [&](auto* tag) {
        using G = std::remove_pointer_t<decltype(tag)>;
        for (int64_t y = y1 - 1; y >= y0; --y) {
          const uint8_t* fg = fgb.row<uint8_t>(y);
          G* out = g.row<G>(y);
          for (int64_t x = x0; x < x1; ++x) {
            int64_t& d = down[static_cast<size_t>(x)];
            d = fg[x] ? std::min<int64_t>(d + 1, kInf) : 0;
            out[x] = static_cast<G>(d);
            f += fg[x];
          }
        }
      };
      if (narrow)
        scan(static_cast<uint16_t*>(nullptr));
      else
        scan(static_cast<int32_t*>(nullptr));
      n_fg += f;
    });
    below.commit(g);
  }
  n_bg = static_cast<uint64_t>(W * H) - n_fg.load();

  Spillable out(PixelFormat{SampleType::kF32, 1}, W, H, pixels * 4 <= memory / 4, scratch_near);
  std::vector<int64_t> up(static_cast<size_t>(W), kInf);
  // Larger than any squared distance in the image; with sides under 2^30
  // every sum in the row pass stays below 2^63.
  const int64_t inf2 = W * W + H * H + 1;
  // 32-bit row pass when 4 inf2 fits (sums of two squares and a difference).
  const bool small = inf2 < (int64_t{1} << 29);
  struct Scratch {
    std::vector<int64_t> g2, d2, s, t;
    std::vector<int32_t> g2s, d2s, ss, ts;
  };
  tbb::enumerable_thread_specific<Scratch> scratch;
  Image col(PixelFormat{SampleType::kI32, 1}, Rect(0, 0, W, band)), dtmp;  // col: min(up, down) per pixel
  for (int64_t y0 = 0; y0 < H; y0 += band) {
    const int64_t rows = std::min(band, H - y0);
    const ImageView g = below.peek(Rect(0, y0, W, rows), gtmp);
    col.set_origin(0, y0);
    column_chunks([&](int64_t x0, int64_t x1) {
      auto scan = [&](auto* tag) {
        using G = std::remove_pointer_t<decltype(tag)>;
        for (int64_t y = y0; y < y0 + rows; ++y) {
          int32_t* c = col.row<int32_t>(y);
          const G* gd = g.row<G>(y);
          for (int64_t x = x0; x < x1; ++x) {
            const int64_t d = gd[x];
            int64_t& u = up[static_cast<size_t>(x)];
            u = d != 0 ? std::min<int64_t>(u + 1, kInf) : 0;
            c[x] = static_cast<int32_t>(std::min(u, d));
          }
        }
      };
      if (narrow)
        scan(static_cast<const uint16_t*>(nullptr));
      else
        scan(static_cast<const int32_t*>(nullptr));
    });
    const ImageView dist = out.window(Rect(0, y0, W, rows), dtmp);
    tbb::parallel_for(y0, y0 + rows, [&](int64_t y) {
      Scratch& sc = scratch.local();
      const int32_t* c = col.row<int32_t>(y);
      float* o = dist.row<float>(y);
      const size_t w = static_cast<size_t>(W);
      auto finish = [&](auto* d2) {
        for (int64_t x = 0; x < W; ++x) {
          const int64_t v = d2[x];
          o[x] = v >= inf2 ? std::numeric_limits<float>::infinity()
                           : static_cast<float>(std::sqrt(static_cast<double>(v)));
        }
      };
      if (small) {
        sc.g2s.resize(w), sc.d2s.resize(w), sc.ss.resize(w), sc.ts.resize(w);
        for (int64_t x = 0; x < W; ++x) sc.g2s[x] = c[x] >= kInf ? static_cast<int32_t>(inf2) : c[x] * c[x];
        edt::row_pass<int32_t>(sc.g2s.data(), W, sc.d2s.data(), sc.ss.data(), sc.ts.data());
        finish(sc.d2s.data());
      } else {
        sc.g2.resize(w), sc.d2.resize(w), sc.s.resize(w), sc.t.resize(w);
        for (int64_t x = 0; x < W; ++x) sc.g2[x] = c[x] >= kInf ? inf2 : int64_t{c[x]} * c[x];
        edt::row_pass<int64_t>(sc.g2.data(), W, sc.d2.data(), sc.s.data(), sc.t.data());
        finish(sc.d2.data());
      }
    });
    out.commit(dist);
  }
  if (stats) {
    stats->seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    stats->read_seconds = read_s;
    stats->foreground = n_fg.load(), stats->background = n_bg.load();
  }
  return out.source();
}

}  // namespace tw
