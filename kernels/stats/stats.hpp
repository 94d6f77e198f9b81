#pragma once
// Whole-slide statistics of 8-bit gray or RGB images: min, max and sum per
// channel (reduce -> scalar, exact integer sums) and per-channel histograms
// with any number of bins (reduce -> vector); Otsu's threshold from a
// 256-bin histogram.
#include <cstdint>
#include <vector>

#include "engine/ops/reduce.hpp"

namespace tw::ops {

template <int C>
struct Stats {
  using Category = ops::Reduce;
  using In = uint8_t;
  static constexpr int kIn = C;
  struct Acc {
    uint32_t lo[C], hi[C];
    unsigned long long sum[C];
  };
  TW_HD Acc identity() const {
    Acc a;
    for (int c = 0; c < C; ++c) a.lo[c] = 255, a.hi[c] = 0, a.sum[c] = 0;
    return a;
  }
  TW_HD void add(Acc& a, const In* px) const {
    for (int c = 0; c < C; ++c) {
      const uint32_t v = px[c];
      a.lo[c] = v < a.lo[c] ? v : a.lo[c];
      a.hi[c] = v > a.hi[c] ? v : a.hi[c];
      a.sum[c] += v;
    }
  }
  TW_HD void merge(Acc& a, const Acc& b) const {
    for (int c = 0; c < C; ++c) {
      a.lo[c] = b.lo[c] < a.lo[c] ? b.lo[c] : a.lo[c];
      a.hi[c] = b.hi[c] > a.hi[c] ? b.hi[c] : a.hi[c];
      a.sum[c] += b.sum[c];
    }
  }
};

// Bin k of n covers the values v with v * n / 256 == k (n <= 256 splits
// 0..255 evenly; 256 bins: one per value).
template <int C>
struct ChannelHistogram {
  using Category = ops::Histogram;
  using In = uint8_t;
  static constexpr int kIn = C;
  int channel = 0, n = 256;
  int bins() const { return n; }
  TW_HD int bin(const In* px) const { return px[channel] * n / 256; }
};

// OpenCV's THRESH_OTSU on a 256-bin histogram: the value t maximising the
// between-class variance (the first such t); foreground is v > t.
int otsu_threshold(const std::vector<uint64_t>& hist256);

}  // namespace tw::ops
