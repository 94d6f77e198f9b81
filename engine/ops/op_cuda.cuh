#pragma once
// The CUDA backend of the op API. Include only from .cu files: an op's folder
// has a one-line .cu that instantiates the GPU runner for its functor
// (TW_CUDA_OP(MyOp)); the functor itself is the same source as on the CPU.
//
// A read of the result takes a lane (stream + pinned and device buffers),
// reads the input tile with its halo into pinned memory, copies it up, runs
// the op's kernel(s), and copies the result back; several reader threads use
// several lanes, so copies and kernels of different tiles overlap.
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <type_traits>

#include "engine/byte_counters.hpp"
#include "engine/cuda/cuda_check.hpp"
#include "engine/cuda/lanes.hpp"
#include "engine/memory.hpp"
#include "engine/ops/device_chain.hpp"
#include "engine/ops/device_tiles.hpp"
#include "engine/ops/op.hpp"
#include "engine/ops/op_source.hpp"
#include "engine/ops/run_op.hpp"
#include "engine/read_pieces.hpp"
#include "engine/trace.hpp"

namespace tw::ops {
namespace cuda_detail {

constexpr int kMaxTaps = 2 * kMaxSeparableRadius + 1;
struct Taps {
  float t[kMaxTaps];
};

template <class Op>
__global__ void pixel_kernel(Op op, const typename Op::In* src, typename Op::Out* dst, int w, int h) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x >= w || y >= h) return;
  const int64_t i = static_cast<int64_t>(y) * w + x;
  op(src + i * Op::kIn, dst + i * Op::kOut);
}

// One thread per output pixel; the neighbours come through L1. (Staging the
// block and its halo in shared memory first, for every op, was slower for
// Canny's suppression on the H100: 0.70 ms against 0.55 ms at 8192^2. Ops
// whose pixels share work, like that one, bring their own kernel:
// has_cuda_block below; Canny's takes 0.29 ms.)
template <class Op>
__global__ void neighborhood_kernel(Op op, const typename Op::In* src, typename Op::Out* dst, int w, int h, int R,
                                    int64_t x0, int64_t y0, int64_t W, int64_t H) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x >= w || y >= h) return;
  const int64_t stride = static_cast<int64_t>(w + 2 * R) * Op::kIn;
  Window<typename Op::In> win{
      src + (y + R) * stride + static_cast<int64_t>(x + R) * Op::kIn, stride, Op::kIn, x0 + x, y0 + y, W, H};
  op(win, dst + (static_cast<int64_t>(y) * w + x) * Op::kOut);
}

// Whether a neighbourhood op brings its own GPU kernel (where the functor per
// pixel would recompute what its neighbours share):
//   void cuda_block(const In* src, Out* dst, int w, int h, int64_t x0, int64_t y0,
//                   int64_t W, int64_t H, cudaStream_t s) const;
// the same contract as launch_neighborhood below; defined in the op's .cu.
template <class Op, class = void>
struct has_cuda_block : std::false_type {};
template <class Op>
struct has_cuda_block<Op, std::void_t<decltype(std::declval<const Op&>().cuda_block(
                              std::declval<const typename Op::In*>(), std::declval<typename Op::Out*>(), int{}, int{},
                              int64_t{}, int64_t{}, int64_t{}, int64_t{}, cudaStream_t{}))>> : std::true_type {};

// Launches the neighbourhood op over a w x h output whose input (with a halo
// of R) is at src; (x0, y0) is the output's place in the W x H image.
template <class Op>
void launch_neighborhood(const Op& op, const typename Op::In* src, typename Op::Out* dst, int w, int h, int R,
                         int64_t x0, int64_t y0, int64_t W, int64_t H, cudaStream_t s) {
  if constexpr (has_cuda_block<Op>::value) {
    op.cuda_block(src, dst, w, h, x0, y0, W, H, s);
  } else {
    const dim3 block(32, 8), grid((w + 31) / 32, (h + 7) / 8);
    neighborhood_kernel<Op><<<grid, block, 0, s>>>(op, src, dst, w, h, R, x0, y0, W, H);
  }
}

// Horizontal pass: mid (w*C x h+2R floats) from src ((w+2R)*C x h+2R).
template <class Op>
__global__ void separable_rows(Taps taps, int R, const typename Op::In* src, float* mid, int wc, int rows) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x, j = blockIdx.y;
  if (i >= wc || j >= rows) return;
  const typename Op::In* s = src + static_cast<int64_t>(j) * (wc + 2 * R * Op::kIn) + i;
  float acc = 0.f;
  for (int k = 0; k <= 2 * R; ++k) acc = mul_add(taps.t[k], static_cast<float>(s[k * Op::kIn]), acc);
  mid[static_cast<int64_t>(j) * wc + i] = acc;
}

template <class Op>
__global__ void separable_cols(Op op, Taps taps, int R, const float* mid, typename Op::Out* dst, int wc, int h) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x, j = blockIdx.y;
  if (i >= wc || j >= h) return;
  const float* m = mid + static_cast<int64_t>(j) * wc + i;
  float acc = 0.f;
  for (int k = 0; k <= 2 * R; ++k) acc = mul_add(taps.t[k], m[static_cast<int64_t>(k) * wc], acc);
  dst[static_cast<int64_t>(j) * wc + i] = op.finish(acc);
}

inline int blocks(int64_t n, int b) {
  return static_cast<int>((n + b - 1) / b);
}

// Fills the pixels of a w x h buffer (its top-left at (x0, y0) of a W x H
// image) outside `inside` (buffer coordinates) by the border rule, from the
// pixels inside: the device's fill_border, for a chain's halos at the edge.
struct ConstPixel {
  uint8_t b[16];
};
template <class Dummy = void>
__global__ void fill_border_kernel(uint8_t* buf, size_t pitch, int w, int h, int64_t x0, int64_t y0, int ix, int iy,
                                   int iw, int ih, int64_t W, int64_t H, BorderMode mode, int bpp, ConstPixel cv) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x >= w || y >= h) return;
  if (x >= ix && x < ix + iw && y >= iy && y < iy + ih) return;
  uint8_t* out = buf + y * pitch + static_cast<size_t>(x) * bpp;
  if (mode == BorderMode::kConstant) {
    for (int k = 0; k < bpp; ++k) out[k] = cv.b[k];
    return;
  }
  const int64_t mx = border_index(x0 + x, W, mode) - x0, my = border_index(y0 + y, H, mode) - y0;
  const uint8_t* src = buf + my * pitch + static_cast<size_t>(mx) * bpp;
  for (int k = 0; k < bpp; ++k) out[k] = src[k];
}

// The bytes of one pixel of value v, as TileSource's constant border makes it.
inline ConstPixel const_pixel(PixelFormat f, double v) {
  ConstPixel c{};
  fill_constant(c.b, 1, f, v);
  return c;
}

// The chain's next staged input (`sr` of format f) sent up through the
// lane's pinned buffer, packed, into the chain's scratch memory. The pinned
// buffer is one per lane: an op that uploads a second staged input in one
// read must wait for the first upload before (the stream's order does not
// cover the host's copy into it).
inline uint8_t* upload_staged(DeviceChain& c, PixelFormat f, const Rect& sr) {
  const size_t row = static_cast<size_t>(sr.w) * f.bytes_per_pixel(), bytes = row * static_cast<size_t>(sr.h);
  c.lane->reserve(bytes, 0);
  const ImageView host_in{f, sr, row, c.lane->host_in.get()};
  {
    TraceSpan phase("gpu-op-stage-in", sr.h);
    copy_overlap(c.host->next().view(), host_in);
  }
  uint8_t* d = c.scratch.alloc(bytes);
  TW_CUDA_CHECK(cudaMemcpyAsync(d, c.lane->host_in.get(), bytes, cudaMemcpyHostToDevice, c.stream));
  count_uploaded(bytes);
  return d;
}

// read_chain_piece: engine/ops/device_chain.hpp (plain C++ reads chains too).
using ::tw::read_chain_piece;

template <class Op>
class CudaOpSource final : public TileSource, public DeviceTiles {
  using In = typename Op::In;
  using Out = typename Op::Out;

 public:
  CudaOpSource(std::shared_ptr<const TileSource> in, const Op& op, int device, const std::string& name)
      : in_(std::move(in)), op_(op), pool_(cuda::shared_lanes(device)) {
    require_format(*in_, in_format<Op>(), name);
    info_ = result_info(*in_, out_format<Op>(), name);
    if constexpr (std::is_same_v<typename Op::Category, Separable>) {
      if (op_.radius() > kMaxSeparableRadius)
        throw InputError(name + ": filter radius over " + std::to_string(kMaxSeparableRadius));
      for (int k = 0; k < 2 * op_.radius() + 1; ++k) taps_.t[k] = op_.taps()[k];
    }
  }

  const DeviceTiles* device_tiles() const override { return this; }
  int device() const override { return pool_.device(); }

  void stage(const Rect& r, StagedInputs& host) const override {
    const Rect sr = r.grown(op_radius(op_));
    if (fed_on_device(sr))
      in_->device_tiles()->stage(sr.intersect(in_->level(0).bounds()), host);
    else
      host.add() = in_->read(0, sr, op_border(op_));
  }

  void compute(const Rect& r, uint8_t* dst, size_t pitch, DeviceChain& c) const override {
    const int R = op_radius(op_);
    const Rect sr = r.grown(R);
    const PixelFormat fi = in_format<Op>(), fo = out_format<Op>();
    const size_t ipx = fi.bytes_per_pixel(), in_row = static_cast<size_t>(sr.w) * ipx;
    const cudaStream_t s = c.stream;
    uint8_t* din = nullptr;
    if (fed_on_device(sr)) {
      // The op below computes the part inside the image straight into this
      // op's input; the halo outside it is made up here, on the device.
      din = c.scratch.alloc(in_row * static_cast<size_t>(sr.h));
      const LevelInfo& l0 = in_->level(0);
      const Rect inside = sr.intersect(l0.bounds());
      in_->device_tiles()->compute(
          inside, din + static_cast<size_t>(inside.y - sr.y) * in_row + static_cast<size_t>(inside.x - sr.x) * ipx,
          in_row, c);
      if (inside != sr) {
        const Border b = op_border(op_);
        fill_border_kernel<><<<dim3(blocks(sr.w, 32), blocks(sr.h, 8)), dim3(32, 8), 0, s>>>(
            din, in_row, static_cast<int>(sr.w), static_cast<int>(sr.h), sr.x, sr.y, static_cast<int>(inside.x - sr.x),
            static_cast<int>(inside.y - sr.y), static_cast<int>(inside.w), static_cast<int>(inside.h), l0.width,
            l0.height, b.mode, static_cast<int>(ipx), const_pixel(fi, b.value));
        TW_CUDA_CHECK(cudaGetLastError());
      }
    } else {
      din = upload_staged(c, fi, sr);  // the chain's first op: its input, read by stage(), goes up once
    }
    const size_t out_row = static_cast<size_t>(r.w) * fo.bytes_per_pixel();
    auto* dout = reinterpret_cast<Out*>(pitch == out_row ? dst : c.scratch.alloc(out_row * static_cast<size_t>(r.h)));
    run_kernels(r, reinterpret_cast<const In*>(din), dout, c);
    if (reinterpret_cast<uint8_t*>(dout) != dst)
      TW_CUDA_CHECK(
          cudaMemcpy2DAsync(dst, pitch, dout, out_row, out_row, static_cast<size_t>(r.h), cudaMemcpyDeviceToDevice, s));
  }

 protected:
  void read_inside(int, const ImageView& whole) const override {
    // Pieces of up to 16 MB of the chain's input: large enough to fill the
    // GPU, bounded whatever the read (a writer's band across the image), and
    // smaller under a small --memory (the lanes' pinned buffers hold them).
    for_each_read_piece(
        whole, std::max(in_format<Op>().bytes_per_pixel(), out_format<Op>().bytes_per_pixel()), op_radius(op_),
        [&](const ImageView& piece) { read_piece(piece); }, gpu_read_piece_bytes());
  }

  void read_piece(const ImageView& dst) const { read_chain_piece(*this, pool_, dst); }

 private:
  // Whether this op's input for `sr` comes from the op below on the device:
  // it is a GPU op on this device, and the border rule maps every pixel of
  // the halo onto the part of `sr` inside the image (always, but for halos
  // wider than the image; those take the host path).
  bool fed_on_device(const Rect& sr) const {
    const DeviceTiles* d = in_->device_tiles();
    if (!d || d->device() != pool_.device()) return false;
    const LevelInfo& l0 = in_->level(0);
    const Rect inside = sr.intersect(l0.bounds());
    if (inside.empty()) return false;
    const BorderMode m = op_border(op_).mode;
    if (m == BorderMode::kConstant || inside == sr) return true;
    for (const int64_t x : {sr.x, sr.x1() - 1}) {
      const int64_t mx = border_index(x, l0.width, m);
      if (mx < inside.x || mx >= inside.x1()) return false;
    }
    for (const int64_t y : {sr.y, sr.y1() - 1}) {
      const int64_t my = border_index(y, l0.height, m);
      if (my < inside.y || my >= inside.y1()) return false;
    }
    // Reflection is monotone between the ends and the edge: the ends bound it.
    return true;
  }

  // The op's kernels from din (the input with its halo) into dout (w x h).
  void run_kernels(const Rect& r, const In* din, Out* dout, DeviceChain& c) const {
    using Cat = typename Op::Category;
    const int R = op_radius(op_);
    const Rect sr = r.grown(R);
    const int w = static_cast<int>(r.w), h = static_cast<int>(r.h);
    const cudaStream_t s = c.stream;
    if constexpr (std::is_same_v<Cat, Pixel>) {
      pixel_kernel<Op><<<dim3(blocks(w, 32), blocks(h, 8)), dim3(32, 8), 0, s>>>(op_, din, dout, w, h);
    } else if constexpr (std::is_same_v<Cat, Neighborhood>) {
      const LevelInfo& l0 = info_.levels[0];
      launch_neighborhood(op_, din, dout, w, h, R, r.x, r.y, l0.width, l0.height, s);
    } else {
      const int wc = w * Op::kIn;
      auto* mid = reinterpret_cast<float*>(c.scratch.alloc(static_cast<size_t>(wc) * sr.h * sizeof(float)));
      separable_rows<Op><<<dim3(blocks(wc, 128), static_cast<unsigned>(sr.h)), 128, 0, s>>>(taps_, R, din, mid, wc,
                                                                                            static_cast<int>(sr.h));
      separable_cols<Op>
          <<<dim3(blocks(wc, 128), static_cast<unsigned>(h)), 128, 0, s>>>(op_, taps_, R, mid, dout, wc, h);
    }
    TW_CUDA_CHECK(cudaGetLastError());
  }

  std::shared_ptr<const TileSource> in_;
  Op op_;
  Taps taps_{};
  cuda::LanePool& pool_;
};

}  // namespace cuda_detail

template <class Op>
std::shared_ptr<const TileSource> make_cuda_op_source(std::shared_ptr<const TileSource> in, const Op& op, int device,
                                                      const std::string& name) {
  return std::make_shared<cuda_detail::CudaOpSource<Op>>(std::move(in), op, device, name);
}

}  // namespace tw::ops

// In an op's .cu file: compiles the GPU runner for that op.
#define TW_CUDA_OP(...)                                                                       \
  template std::shared_ptr<const ::tw::TileSource> tw::ops::make_cuda_op_source<__VA_ARGS__>( \
      std::shared_ptr<const ::tw::TileSource>, const __VA_ARGS__&, int, const std::string&)
