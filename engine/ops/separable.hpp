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
#include <tbb/parallel_for.h>

#include <algorithm>
#include <type_traits>
#include <vector>

#include "engine/ops/fir.hpp"
#include "engine/ops/op.hpp"
#include "engine/tile_source.hpp"

namespace tw::ops {

// Up to 129 taps (a Gaussian of sigma 21 at 3 sigma).
constexpr int kMaxSeparableRadius = 64;

// Ops whose finish() is round_u8 (half up, clamped to 0..255) say so with
// `static constexpr bool kRoundsHalfUp = true`; the CPU then rounds whole
// rows with the vectorised round_half_up_u8 (same results).
template <class Op, class = void>
struct rounds_half_up : std::false_type {};
template <class Op>
struct rounds_half_up<Op, std::void_t<decltype(Op::kRoundsHalfUp)>> : std::bool_constant<Op::kRoundsHalfUp> {};

// Runs the filter over dst.rect, reading `in` with the op's halo. Columns
// are cut into strips so that the horizontal pass's output stays in cache
// for the vertical pass; strips run in parallel.
template <class Op>
void separable_cpu(const Op& op, const TileSource& in, const ImageView& dst) {
  using In = typename Op::In;
  using Out = typename Op::Out;
  constexpr int C = Op::kIn;
  static_assert(Op::kOut == Op::kIn, "a separable op keeps the channel count");
  const int R = op.radius(), taps = 2 * R + 1;
  const float* t = op.taps();
  const Rect r = dst.rect;
  const Image src = in.read(0, r.grown(R), op.border());
  const int64_t hh = r.h + 2 * R;
  constexpr int64_t kStrip = 512;  // output samples per strip row
  const int64_t wc = r.w * C, strips = (wc + kStrip - 1) / kStrip;
  tbb::parallel_for(int64_t{0}, strips, [&](int64_t sidx) {
    const int64_t s0 = sidx * kStrip, sw = std::min(kStrip, wc - s0);
    // Scratch reused by each thread across reads (fresh pages cost more
    // than the filter's arithmetic on them).
    thread_local std::vector<float> row, mid, acc;
    row.resize(static_cast<size_t>(sw + 2 * R * C)), mid.resize(static_cast<size_t>(sw * hh)),
        acc.resize(static_cast<size_t>(sw));
    for (int64_t j = 0; j < hh; ++j) {
      // The strip's samples and R pixels either side, from the halo'd read.
      const In* s = src.row<In>(r.y - R + j) + s0;
      if constexpr (std::is_same_v<In, uint8_t>)
        u8_to_float(s, row.data(), sw + 2 * R * C);
      else
        for (int64_t i = 0; i < sw + 2 * R * C; ++i) row[static_cast<size_t>(i)] = static_cast<float>(s[i]);
      fir(mid.data() + j * sw, row.data(), sw, t, taps, C);
    }
    for (int64_t j = 0; j < r.h; ++j) {
      fir(acc.data(), mid.data() + j * sw, sw, t, taps, sw);
      Out* o = dst.row<Out>(r.y + j) + s0;
      if constexpr (rounds_half_up<Op>::value)
        round_half_up_u8(acc.data(), o, sw);
      else
        for (int64_t i = 0; i < sw; ++i) o[i] = op.finish(acc[static_cast<size_t>(i)]);
    }
  });
}

}  // namespace tw::ops
