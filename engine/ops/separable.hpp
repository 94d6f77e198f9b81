#pragma once
// Separable filters (a category of neighborhood op that runs as two 1-D
// passes): the op gives its taps, the same along both axes, and how a
// filtered value becomes an output sample.
//
//   struct Blur {
//     using Category = tw::ops::Separable;
//     using In = uint8_t;  static constexpr int kIn = 1;   // kOut == kIn
//     using Out = uint8_t; static constexpr int kOut = 1;
//     int radius() const;                 // taps() has 2 * radius + 1 entries
//     const float* taps() const;
//     tw::Border border() const;
//     TW_HD Out finish(float v) const;    // e.g. round and clamp
//   };
//
// Both passes accumulate in float32, tap by tap in index order, on both
// backends, so the CPU and the GPU give the same bits.
#include <algorithm>
#include <vector>

#include <tbb/parallel_for.h>

#include "engine/ops/op.hpp"
#include "engine/tile_source.hpp"

namespace tw::ops {

// Up to 129 taps (a Gaussian of sigma 21 at 3 sigma).
constexpr int kMaxSeparableRadius = 64;

// Runs the filter over dst.rect, reading `in` with the op's halo.
template <class Op>
void separable_cpu(const Op& op, const TileSource& in, const ImageView& dst) {
  using In = typename Op::In;
  using Out = typename Op::Out;
  constexpr int C = Op::kIn;
  static_assert(Op::kOut == Op::kIn, "a separable op keeps the channel count");
  const int R = op.radius();
  const float* t = op.taps();
  const Rect r = dst.rect;
  // Rows of the input band: the output rows and R above and below; columns
  // likewise. The horizontal pass produces w x (h + 2R) floats.
  const Image src = in.read(0, r.grown(R), op.border());
  const int64_t w = r.w * C, hh = r.h + 2 * R;
  std::vector<float> mid(static_cast<size_t>(w * hh));
  tbb::parallel_for(int64_t{0}, hh, [&](int64_t j) {
    const In* s = src.row<In>(r.y - R + j);  // starts R pixels left of r.x
    std::vector<float> row(static_cast<size_t>((r.w + 2 * R) * C));
    for (size_t i = 0; i < row.size(); ++i) row[i] = static_cast<float>(s[i]);
    float* m = mid.data() + j * w;
    std::fill(m, m + w, 0.f);
    for (int k = 0; k <= 2 * R; ++k) {
      const float tk = t[k];
      const float* q = row.data() + k * C;
      for (int64_t i = 0; i < w; ++i) m[i] = mul_add(tk, q[i], m[i]);
    }
  });
  tbb::parallel_for(int64_t{0}, r.h, [&](int64_t j) {
    std::vector<float> acc(static_cast<size_t>(w), 0.f);
    for (int k = 0; k <= 2 * R; ++k) {
      const float tk = t[k];
      const float* q = mid.data() + (j + k) * w;
      for (int64_t i = 0; i < w; ++i) acc[i] = mul_add(tk, q[i], acc[i]);
    }
    Out* o = dst.row<Out>(r.y + j);
    for (int64_t i = 0; i < w; ++i) o[i] = op.finish(acc[i]);
  });
}

}  // namespace tw::ops
