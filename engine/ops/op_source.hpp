#pragma once
// The CPU backend of the op API: an op over a TileSource is itself a
// TileSource (level 0 only) whose reads compute the op, tile by tile, rows in
// parallel (oneTBB). Neighborhood and separable ops read their input with a
// halo of the op's radius, so any tiling gives the whole-image result.
#include <tbb/parallel_for.h>

#include <algorithm>
#include <array>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "engine/ops/op.hpp"
#include "engine/ops/separable.hpp"
#include "engine/read_pieces.hpp"
#include "engine/tile_source.hpp"

namespace tw::ops {

// Level 0 of `in` with format `out`: the description of an op's result.
SourceInfo result_info(const TileSource& in, PixelFormat out, const std::string& name);
// An InputError unless `in` has the sample type and channels the op reads.
void require_format(const TileSource& in, PixelFormat want, const std::string& op_name);

// Whether a neighbourhood op brings its own CPU kernel:
//   void cpu_block(const Image& src, const ImageView& dst, int64_t W, int64_t H) const;
// src covers dst.rect grown by radius(), with the border made up; W x H is
// the image. The engine calls it on blocks of kBlockRows rows of a tile, in
// parallel: the kernel itself is serial.
constexpr int64_t kBlockRows = 32;
// Whether a pixel op of u8 samples maps each sample alone, by
//   Out one(In) const,  static constexpr bool kLookup = true;
// then the CPU looks its samples up in a table of the 256 results (a
// conversion's double arithmetic per sample cost ~2 ns).
template <class Op, class = void>
struct has_lookup : std::false_type {};
template <class Op>
struct has_lookup<Op, std::enable_if_t<Op::kLookup>> : std::true_type {};
// Whether a pixel op is a few integer instructions a sample (declared by
//   static constexpr bool kLight = true;):
// over an input made on the host, the CPU computes it for less than the
// trip to the device and back costs (run_op, engine/ops/run_op.hpp).
template <class Op, class = void>
struct is_light : std::false_type {};
template <class Op>
struct is_light<Op, std::enable_if_t<Op::kLight>> : std::true_type {};
template <class Op, class = void>
struct has_cpu_block : std::false_type {};
template <class Op>
struct has_cpu_block<Op, std::void_t<decltype(std::declval<const Op&>().cpu_block(
                             std::declval<const Image&>(), std::declval<const ImageView&>(), int64_t{}, int64_t{}))>>
    : std::true_type {};

template <class Op>
class CpuOpSource final : public TileSource {
  using In = typename Op::In;
  using Out = typename Op::Out;

 public:
  CpuOpSource(std::shared_ptr<const TileSource> in, const Op& op, const std::string& name)
      : in_(std::move(in)), op_(op) {
    require_format(*in_, in_format<Op>(), name);
    info_ = result_info(*in_, out_format<Op>(), name);
  }

 protected:
  void read_inside(int, const ImageView& dst) const override {
    const size_t bpp = std::max(in_format<Op>().bytes_per_pixel(), out_format<Op>().bytes_per_pixel());
    for_each_read_piece(dst, bpp, op_radius(op_), [&](const ImageView& piece) { compute(piece); });
  }

 private:
  void compute(const ImageView& dst) const {
    using Cat = typename Op::Category;
    const LevelInfo& l0 = info_.levels[0];
    const Rect r = dst.rect;
    if constexpr (std::is_same_v<Cat, Pixel> && has_lookup<Op>::value) {
      static_assert(std::is_same_v<In, uint8_t> && Op::kIn == Op::kOut, "a lookup maps u8 samples one to one");
      std::array<Out, 256> lut;
      for (int v = 0; v < 256; ++v) lut[static_cast<size_t>(v)] = op_.one(static_cast<uint8_t>(v));
      const Image src = in_->read(0, r);
      const int64_t n = r.w * Op::kIn;
      tbb::parallel_for(r.y, r.y1(), [&](int64_t y) {
        const In* s = src.row<In>(y);
        Out* o = dst.row<Out>(y);
        for (int64_t i = 0; i < n; ++i) o[i] = lut[s[i]];
      });
    } else if constexpr (std::is_same_v<Cat, Pixel>) {
      const Image src = in_->read(0, r);
      tbb::parallel_for(r.y, r.y1(), [&](int64_t y) {
        const In* s = src.row<In>(y);
        Out* o = dst.row<Out>(y);
        // The op and the width local to the row: a u8 store may alias
        // anything reached through a pointer, so through op_ and r the
        // compiler reloaded both for every pixel and did not vectorise.
        const Op op = op_;
        const int64_t w = r.w;
        for (int64_t i = 0; i < w; ++i) op(s + i * Op::kIn, o + i * Op::kOut);
      });
    } else if constexpr (std::is_same_v<Cat, Neighborhood> && has_cpu_block<Op>::value) {
      // The op's own CPU kernel for a block (where whole rows vectorise far
      // better than a functor called per pixel); the GPU still uses the functor.
      const Image src = in_->read(0, r.grown(op_.radius()), op_.border());
      tbb::parallel_for(int64_t{0}, ceil_div(r.h, kBlockRows), [&](int64_t b) {
        const int64_t y0 = r.y + b * kBlockRows;
        op_.cpu_block(src, dst.sub(Rect(r.x, y0, r.w, std::min(kBlockRows, r.y1() - y0))), l0.width, l0.height);
      });
    } else if constexpr (std::is_same_v<Cat, Neighborhood>) {
      const int R = op_.radius();
      const Image src = in_->read(0, r.grown(R), op_.border());
      const int64_t stride = static_cast<int64_t>(src.view().stride / sizeof(In));
      tbb::parallel_for(r.y, r.y1(), [&](int64_t y) {
        Out* o = dst.row<Out>(y);
        Window<In> w{src.ptr<In>(r.x, y), stride, Op::kIn, r.x, y, l0.width, l0.height};
        const Op op = op_;  // local, as above
        const int64_t n = r.w;
        for (int64_t i = 0; i < n; ++i, w.center += Op::kIn, ++w.x) op(w, o + i * Op::kOut);
      });
    } else {
      static_assert(std::is_same_v<Cat, Separable>, "unknown op category");
      separable_cpu(op_, *in_, dst);
    }
  }

  std::shared_ptr<const TileSource> in_;
  Op op_;
};

}  // namespace tw::ops
