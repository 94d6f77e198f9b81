#include "jobs/features/row_runs.hpp"

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <cstring>

#include "engine/next_nonzero.hpp"
#include "engine/sample_dispatch.hpp"
#include "jobs/features/object_stats.hpp"

namespace tw::features {
namespace {

// (mean, M2) of n values, two passes (the run is in cache).
template <class Get>
void run_moments(int64_t n, Get get, double& mean, double& m2) {
  double s = 0;
  for (int64_t i = 0; i < n; ++i) s += get(i);
  mean = s / static_cast<double>(n);
  double q = 0;
  for (int64_t i = 0; i < n; ++i) {
    const double d = get(i) - mean;
    q += d * d;
  }
  m2 = q;
}

template <class T>
void channel_moments(const uint8_t* row, int channels, int c, int64_t x0, int64_t n, double& mean, double& m2) {
  const T* p = reinterpret_cast<const T*>(row) + x0 * channels + c;
  run_moments(
      n, [&](int64_t i) { return static_cast<double>(p[i * channels]); }, mean, m2);
}

}  // namespace

RowScanner::RowScanner(int64_t width, PixelFormat ifmt, bool has_intensity, bool hed)
    : width_(width),
      ifmt_(ifmt),
      has_intensity_(has_intensity),
      hed_(hed),
      stat_channels_((has_intensity ? ifmt.channels : 0) + (hed ? 1 : 0)),
      hed_op_(ops::make_hed()) {}

size_t RowScanner::pixel_bytes_per_row() const {
  const size_t w = static_cast<size_t>(width_);
  return (w + 4) * 4 + (w + 2) + (has_intensity_ ? w * ifmt_.bytes_per_pixel() : 0);
}

size_t RowScanner::bytes_per_run() const {
  return sizeof(LabelRun) + 2 * sizeof(double) * static_cast<size_t>(stat_channels_);
}

void RowScanner::prepare(const ImageView& labels, int64_t y0, int64_t y1, std::vector<int64_t>& counts) {
  const int64_t rows = y1 - y0, bw = width_ + 2;
  // A pixel is on the border when a 4-neighbour holds another label (skimage:
  // the mask minus its erosion by a cross, outside = 0).
  border_.resize(static_cast<size_t>((rows + 2) * bw));
  border_y0_ = y0 - 1;
  counts.assign(static_cast<size_t>(rows), 0);
  tbb::parallel_for(tbb::blocked_range<int64_t>(y0 - 1, y1 + 1), [&](const tbb::blocked_range<int64_t>& range) {
    for (int64_t y = range.begin(); y < range.end(); ++y) {
      const uint32_t* up = labels.ptr<uint32_t>(0, y - 1);
      const uint32_t* mid = labels.ptr<uint32_t>(0, y);
      const uint32_t* dn = labels.ptr<uint32_t>(0, y + 1);
      uint8_t* b = border_.data() + (y - border_y0_) * bw;
      b[0] = b[bw - 1] = 0;
      ++b;
      int64_t runs = 0;
      for (int64_t x = 0; x < width_; ++x) {
        const int64_t next = next_nonzero(mid, x, width_);
        std::memset(b + x, 0, static_cast<size_t>(next - x));
        if (next == width_) break;
        x = next;
        const uint32_t l = mid[x];
        b[x] = mid[x - 1] != l || mid[x + 1] != l || up[x] != l || dn[x] != l;
        runs += mid[x - 1] != l;
      }
      if (y >= y0 && y < y1) counts[static_cast<size_t>(y - y0)] = runs;
    }
  });
}

void RowScanner::scan(const ImageView& labels, const ImageView* intensity, int64_t s0, int64_t s1,
                      const int64_t* offsets, LabelRun* runs, double* stats) const {
  const size_t per_run = 2 * static_cast<size_t>(stat_channels_);
  tbb::parallel_for(tbb::blocked_range<int64_t>(s0, s1), [&](const tbb::blocked_range<int64_t>& range) {
    for (int64_t y = range.begin(); y < range.end(); ++y) {
      const int64_t first = offsets[y - s0];
      scan_row(labels, intensity, y, runs + first, stats + static_cast<size_t>(first) * per_run);
    }
  });
}

void RowScanner::scan_row(const ImageView& labels, const ImageView* intensity, int64_t y, LabelRun* runs,
                          double* stats) const {
  const int64_t bw = width_ + 2;
  const uint32_t* L[3] = {labels.ptr<uint32_t>(0, y - 1), labels.ptr<uint32_t>(0, y), labels.ptr<uint32_t>(0, y + 1)};
  const uint8_t* B[3];
  for (int k = 0; k < 3; ++k) B[k] = border_.data() + (y - 1 + k - border_y0_) * bw + 1;
  const uint8_t* irow = intensity ? intensity->row_bytes(y) : nullptr;
  std::vector<float> hvals;
  int64_t x = 0;
  while (x < width_) {
    x = next_nonzero(L[1], x, width_);
    if (x == width_) break;
    const uint32_t l = L[1][x];
    LabelRun r;
    r.label = l, r.x0 = x;
    for (; x < width_ && L[1][x] == l; ++x) {
      if (!B[1][x]) continue;
      // skimage's code: 1 + 2 per border 4-neighbour + 10 per border
      // diagonal neighbour, counting only this object's pixels.
      auto on = [&](int dy, int64_t xx) { return B[1 + dy][xx] && L[1 + dy][xx] == l; };
      const int code = 1 + 2 * (on(0, x - 1) + on(0, x + 1) + on(-1, x) + on(1, x)) +
                       10 * (on(-1, x - 1) + on(-1, x + 1) + on(1, x - 1) + on(1, x + 1));
      const int cls = perimeter_class(code);
      if (cls != kPerimNone) ++r.perim[cls];
    }
    r.x1 = x;
    *runs++ = r;
    if (stat_channels_ == 0) continue;
    const int64_t n = r.x1 - r.x0;
    double mean = 0, m2 = 0;
    if (has_intensity_) {
      for (int c = 0; c < ifmt_.channels; ++c) {
        with_sample_type(ifmt_.type,
                         [&](auto t) { channel_moments<decltype(t)>(irow, ifmt_.channels, c, r.x0, n, mean, m2); });
        *stats++ = mean, *stats++ = m2;
      }
    }
    if (hed_) {
      // Colour deconvolution by the same functor as `filter hed`.
      hvals.resize(static_cast<size_t>(n));
      for (int64_t i = 0; i < n; ++i) {
        float hed[3];
        hed_op_(irow + (r.x0 + i) * 3, hed);
        hvals[static_cast<size_t>(i)] = hed[0];
      }
      run_moments(
          n, [&](int64_t i) { return static_cast<double>(hvals[static_cast<size_t>(i)]); }, mean, m2);
      *stats++ = mean, *stats++ = m2;
    }
  }
}

}  // namespace tw::features
