#pragma once
// Canny edges, "classic" variant: the image smoothed exactly as `filter
// gaussian --sigma` smooths it (8-bit), then Canny as OpenCV computes it on
// that 8-bit image with L2gradient: 3x3 Sobel (BORDER_REPLICATE), squared
// L2 magnitude, non-maximum suppression in four directions (OpenCV's
// tan(22.5) fixed-point sectors; magnitudes outside the image count as 0),
// double threshold on the squared thresholds, then hysteresis with
// 8-connectivity. The first three steps are a neighborhood op (radius 2 on
// the smoothed image); hysteresis is a morphological reconstruction on the
// wavefront engine, so an edge chain may wind through any number of tiles.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <memory>

#include "engine/error.hpp"
#include "engine/image.hpp"
#include "engine/ops/op.hpp"
#include "engine/tile_source.hpp"

struct CUstream_st;  // cudaStream_t, without CUDA's headers

namespace tw::ops {

constexpr uint8_t kCannyWeak = 128, kCannyStrong = 255;

// Per pixel: 0 (not an edge), kCannyWeak (a local maximum above the low
// threshold) or kCannyStrong (above the high one).
struct CannyNms {
  using Category = ops::Neighborhood;
  using In = uint8_t;
  using Out = uint8_t;
  static constexpr int kIn = 1, kOut = 1;
  int64_t low2 = 0, high2 = 0;  // squared thresholds, floored (OpenCV's L2gradient convention)
  int radius() const { return 2; }
  Border border() const { return {BorderMode::kReplicate, 0}; }

  TW_HD static void gradient(const ops::Window<In>& w, int ox, int oy, int& gx, int& gy) {
    auto p = [&](int dx, int dy) { return static_cast<int>(w(ox + dx, oy + dy)); };
    gx = (p(1, -1) + 2 * p(1, 0) + p(1, 1)) - (p(-1, -1) + 2 * p(-1, 0) + p(-1, 1));
    gy = (p(-1, 1) + 2 * p(0, 1) + p(1, 1)) - (p(-1, -1) + 2 * p(0, -1) + p(1, -1));
  }
  TW_HD static int magnitude(const ops::Window<In>& w, int ox, int oy) {
    if (!w.inside(ox, oy)) return 0;
    int gx, gy;
    gradient(w, ox, oy, gx, gy);
    return gx * gx + gy * gy;
  }
  // The class of a pixel from its gradient and magnitude; mag(dx, dy) gives a
  // neighbour's magnitude (0 outside the image).
  template <class Mag>
  TW_HD uint8_t classify(int gx, int gy, int m, Mag&& mag) const {
    if (m <= low2) return 0;
    constexpr int kShift = 15, kTg22 = 13573;  // round(tan(22.5 deg) * 2^15)
    const int ax = gx < 0 ? -gx : gx, ay = (gy < 0 ? -gy : gy) << kShift;
    const int tg22x = ax * kTg22;
    bool peak;
    if (ay < tg22x) {
      peak = m > mag(-1, 0) && m >= mag(1, 0);
    } else if (ay > tg22x + (ax << (kShift + 1))) {
      peak = m > mag(0, -1) && m >= mag(0, 1);
    } else {
      const int s = (gx ^ gy) < 0 ? -1 : 1;
      peak = m > mag(-s, -1) && m > mag(s, 1);
    }
    return peak ? (m > high2 ? kCannyStrong : kCannyWeak) : 0;
  }
  TW_HD void operator()(const ops::Window<In>& w, Out* out) const {
    int gx, gy;
    gradient(w, 0, 0, gx, gy);
    out[0] = classify(gx, gy, gx * gx + gy * gy, [&](int dx, int dy) { return magnitude(w, dx, dy); });
  }
  // The CPU computes gradients and magnitudes once per pixel, in rows that
  // vectorise, then classifies (engine/ops/op_source.hpp, has_cpu_block).
  void cpu_block(const Image& src, const ImageView& dst, int64_t W, int64_t H) const;
  // The GPU likewise keeps each block's magnitudes in shared memory, computed
  // once instead of once per neighbour that looks at them (canny_cuda.cu,
  // engine/ops/op_cuda.cuh, has_cuda_block).
  void cuda_block(const In* src, Out* dst, int w, int h, int64_t x0, int64_t y0, int64_t W, int64_t H,
                  CUstream_st* s) const;
};

struct CannyParams {
  double sigma = 1.4;
  double low = 0, high = 0;  // on the gradient magnitude; swapped if low > high
};

// OpenCV's convention: thresholds swapped if low > high, capped at 32767,
// squared, floored.
inline CannyNms make_canny_nms(double low, double high) {
  if (!(low >= 0) || !(high >= 0)) throw InputError("Canny thresholds must be >= 0");
  if (low > high) std::swap(low, high);
  low = std::min(32767.0, low), high = std::min(32767.0, high);
  CannyNms op;
  op.low2 = static_cast<int64_t>(std::floor(low * low));
  op.high2 = static_cast<int64_t>(std::floor(high * high));
  return op;
}

}  // namespace tw::ops
