#pragma once
// Reductions of the op API, computed from per-band partials (so memory stays
// bounded whatever the image size) that are merged in band order (so the
// result does not depend on thread timing).
//
//   struct MinMax {                                  // reduce -> scalar
//     using Category = tw::ops::Reduce;
//     using In = uint8_t; static constexpr int kIn = 1;
//     struct Acc { uint32_t lo, hi; };               // trivially copyable
//     TW_HD Acc identity() const { return {255, 0}; }
//     TW_HD void add(Acc& a, const In* px) const { ... }
//     TW_HD void merge(Acc& a, const Acc& b) const { ... }
//   };
//
//   struct Hist {                                    // reduce -> vector (histogram)
//     using Category = tw::ops::Histogram;
//     using In = uint8_t; static constexpr int kIn = 1;
//     int bins() const;
//     TW_HD int bin(const In* px) const;             // 0 .. bins-1, or -1 to skip
//   };
//
// On the GPU each block privatises the histogram in shared memory (one copy
// per warp when it fits), so a flat image does not serialise on one counter.
#include <tbb/parallel_for.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "engine/backend.hpp"
#include "engine/ops/op.hpp"
#include "engine/tile_source.hpp"

namespace tw::ops {

struct Reduce {};
struct Histogram {};

void require_format(const TileSource& in, PixelFormat want, const std::string& op_name);

// The budget of a reduction when the caller gives none.
constexpr size_t kDefaultReduceMemory = size_t{256} << 20;

// The cells a reduction reads, in raster order: bands of full-width rows,
// or pieces of rows where one row alone is too large, so that the cells
// read at once by all threads fit `memory`.
std::vector<Rect> reduce_cells(const TileSource& in, size_t memory);

template <class Op>
typename Op::Acc reduce_cpu(const TileSource& in, const Op& op, size_t memory) {
  using In = typename Op::In;
  const std::vector<Rect> cells = reduce_cells(in, memory);
  const int64_t n = static_cast<int64_t>(cells.size());
  std::vector<typename Op::Acc> part(static_cast<size_t>(n), op.identity());
  tbb::parallel_for(int64_t{0}, n, [&](int64_t b) {
    const Rect& r = cells[static_cast<size_t>(b)];
    const Image img = in.read(0, r);
    typename Op::Acc a = op.identity();
    for (int64_t y = r.y; y < r.y1(); ++y) {
      const In* s = img.row<In>(y) + r.x * Op::kIn;
      for (int64_t x = 0; x < r.w; ++x) op.add(a, s + x * Op::kIn);
    }
    part[static_cast<size_t>(b)] = a;
  });
  typename Op::Acc total = op.identity();
  for (const auto& p : part) op.merge(total, p);
  return total;
}

template <class Op>
std::vector<uint64_t> histogram_cpu(const TileSource& in, const Op& op, size_t memory) {
  using In = typename Op::In;
  const int bins = op.bins();
  const std::vector<Rect> cells = reduce_cells(in, memory);
  const int64_t n = static_cast<int64_t>(cells.size());
  std::vector<std::vector<uint64_t>> part(static_cast<size_t>(n));
  tbb::parallel_for(int64_t{0}, n, [&](int64_t b) {
    const Rect& r = cells[static_cast<size_t>(b)];
    const Image img = in.read(0, r);
    // Four histograms, taken in turn: runs of one value (a slide's glass)
    // would make every increment wait for the one before in one histogram.
    const size_t nb = static_cast<size_t>(bins);
    std::vector<uint64_t> h4(4 * nb, 0);
    const Op o = op;
    const int64_t w = r.w;
    for (int64_t y = r.y; y < r.y1(); ++y) {
      const In* s = img.row<In>(y) + r.x * Op::kIn;
      for (int64_t x = 0; x < w; ++x) {
        const int k = o.bin(s + x * Op::kIn);
        if (k >= 0) ++h4[static_cast<size_t>(x & 3) * nb + static_cast<size_t>(k)];
      }
    }
    std::vector<uint64_t> hist(nb);
    for (size_t k = 0; k < nb; ++k) hist[k] = h4[k] + h4[nb + k] + h4[2 * nb + k] + h4[3 * nb + k];
    part[static_cast<size_t>(b)] = std::move(hist);
  });
  std::vector<uint64_t> total(static_cast<size_t>(bins), 0);
  for (const auto& p : part)
    for (int k = 0; k < bins; ++k) total[static_cast<size_t>(k)] += p[static_cast<size_t>(k)];
  return total;
}

// GPU versions: engine/ops/reduce_cuda.cuh, instantiated by TW_CUDA_REDUCE /
// TW_CUDA_HISTOGRAM in the op's .cu file.
template <class Op>
typename Op::Acc reduce_cuda(const TileSource& in, const Op& op, int device, size_t memory);
template <class Op>
std::vector<uint64_t> histogram_cuda(const TileSource& in, const Op& op, int device, size_t memory);

// memory: host bytes the cells read at once may take (--memory).
template <class Op>
typename Op::Acc reduce(const TileSource& in, const Op& op, const Backend& backend, const std::string& name,
                        size_t memory = kDefaultReduceMemory) {
  require_format(in, in_format<Op>(), name);
#if TW_HAVE_CUDA
  if (backend.is_cuda()) return reduce_cuda(in, op, backend.device, memory);
#else
  (void)backend;
#endif
  return reduce_cpu(in, op, memory);
}

template <class Op>
std::vector<uint64_t> histogram(const TileSource& in, const Op& op, const Backend& backend, const std::string& name,
                                size_t memory = kDefaultReduceMemory) {
  require_format(in, in_format<Op>(), name);
#if TW_HAVE_CUDA
  if (backend.is_cuda()) return histogram_cuda(in, op, backend.device, memory);
#else
  (void)backend;
#endif
  return histogram_cpu(in, op, memory);
}

}  // namespace tw::ops
