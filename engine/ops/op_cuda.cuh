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

#include <cstring>
#include <memory>
#include <string>
#include <type_traits>

#include "engine/byte_counters.hpp"
#include "engine/cuda/cuda_check.hpp"
#include "engine/cuda/lanes.hpp"
#include "engine/ops/op.hpp"
#include "engine/ops/op_source.hpp"
#include "engine/ops/run_op.hpp"
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

template <class Op>
class CudaOpSource final : public TileSource {
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
      for (int k = 0; k <= 2 * op_.radius(); ++k) taps_.t[k] = op_.taps()[k];
    }
  }

 protected:
  void read_inside(int, const ImageView& dst) const override {
    using Cat = typename Op::Category;
    const int R = op_radius(op_);
    const Rect r = dst.rect, sr = r.grown(R);
    const PixelFormat fi = in_format<Op>(), fo = out_format<Op>();
    const size_t in_bytes = static_cast<size_t>(sr.w * sr.h) * fi.bytes_per_pixel();
    const size_t out_bytes = static_cast<size_t>(r.w * r.h) * fo.bytes_per_pixel();
    size_t mid_bytes = 0;
    if constexpr (std::is_same_v<Cat, Separable>) mid_bytes = static_cast<size_t>(r.w * Op::kIn * sr.h) * sizeof(float);
    // The input is read before a lane is taken: it may itself be a GPU op
    // drawing on the same shared pool, and holding a lane while waiting for
    // another could leave every lane waiting.
    const Image input = in_->read(0, sr, op_border(op_));
    TraceSpan span("gpu-op", r.h);
    cuda::DeviceScope scope(pool_.device());
    auto lane = pool_.acquire();
    {
      TraceSpan phase("gpu-op-reserve", r.h);
      lane->reserve(in_bytes, out_bytes, mid_bytes);
    }
    const ImageView host_in{fi, sr, static_cast<size_t>(sr.w) * fi.bytes_per_pixel(), lane->host_in.get()};
    {
      TraceSpan phase("gpu-op-stage-in", r.h);
      copy_overlap(input.view(), host_in);
    }
    const cudaStream_t s = lane->stream.get();
    TW_CUDA_CHECK(cudaMemcpyAsync(lane->dev_in.get(), lane->host_in.get(), in_bytes, cudaMemcpyHostToDevice, s));
    count_uploaded(in_bytes);
    const auto* din = reinterpret_cast<const In*>(lane->dev_in.get());
    auto* dout = reinterpret_cast<Out*>(lane->dev_out.get());
    const int w = static_cast<int>(r.w), h = static_cast<int>(r.h);
    if constexpr (std::is_same_v<Cat, Pixel>) {
      pixel_kernel<Op><<<dim3(blocks(w, 32), blocks(h, 8)), dim3(32, 8), 0, s>>>(op_, din, dout, w, h);
    } else if constexpr (std::is_same_v<Cat, Neighborhood>) {
      const LevelInfo& l0 = info_.levels[0];
      launch_neighborhood(op_, din, dout, w, h, R, r.x, r.y, l0.width, l0.height, s);
    } else {
      auto* mid = reinterpret_cast<float*>(lane->dev_mid.get());
      const int wc = w * Op::kIn;
      separable_rows<Op><<<dim3(blocks(wc, 128), static_cast<unsigned>(sr.h)), 128, 0, s>>>(taps_, R, din, mid, wc,
                                                                                            static_cast<int>(sr.h));
      separable_cols<Op>
          <<<dim3(blocks(wc, 128), static_cast<unsigned>(h)), 128, 0, s>>>(op_, taps_, R, mid, dout, wc, h);
    }
    TW_CUDA_CHECK(cudaGetLastError());
    TW_CUDA_CHECK(cudaMemcpyAsync(lane->host_out.get(), dout, out_bytes, cudaMemcpyDeviceToHost, s));
    count_downloaded(out_bytes);
    {
      TraceSpan phase("gpu-op-sync", r.h);
      lane->stream.sync();
    }
    TraceSpan out_span("gpu-op-copy-out", r.h);
    const size_t row = static_cast<size_t>(r.w) * fo.bytes_per_pixel();
    for (int64_t y = 0; y < r.h; ++y) std::memcpy(dst.row_bytes(r.y + y), lane->host_out.get() + y * row, row);
  }

 private:
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
