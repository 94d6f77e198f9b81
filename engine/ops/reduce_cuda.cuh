#pragma once
// GPU reductions (include only from .cu files). Bands of the image are read
// on the host by several threads, each band on its own lane (stream); a
// kernel turns a band into per-block partials (reduce -> scalar) or adds it
// into a device histogram privatised per warp in shared memory.
#include <cuda_runtime.h>

#include <vector>

#include "engine/cuda/cuda_check.hpp"
#include "engine/cuda/lanes.hpp"
#include "engine/ops/reduce.hpp"

namespace tw::ops {
namespace cuda_detail {

constexpr int kReduceThreads = 256, kReduceBlocks = 512;

template <class Op>
__global__ void reduce_kernel(Op op, const typename Op::In* px, int64_t n, typename Op::Acc* partial) {
  using Acc = typename Op::Acc;
  extern __shared__ unsigned char smem[];
  Acc* sh = reinterpret_cast<Acc*>(smem);
  Acc a = op.identity();
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n; i += int64_t{gridDim.x} * blockDim.x)
    op.add(a, px + i * Op::kIn);
  sh[threadIdx.x] = a;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s /= 2) {
    if (threadIdx.x < s) op.merge(sh[threadIdx.x], sh[threadIdx.x + s]);
    __syncthreads();
  }
  if (threadIdx.x == 0) partial[blockIdx.x] = sh[0];
}

// copies: how many private histograms per block (one per warp, or one).
template <class Op>
__global__ void histogram_kernel(Op op, const typename Op::In* px, int64_t n, int bins, int copies,
                                 unsigned long long* hist) {
  extern __shared__ unsigned int counts[];
  const int mine = copies > 1 ? static_cast<int>(threadIdx.x / 32) : 0;
  for (int k = threadIdx.x; k < bins * copies; k += blockDim.x) counts[k] = 0;
  __syncthreads();
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n; i += int64_t{gridDim.x} * blockDim.x) {
    const int b = op.bin(px + i * Op::kIn);
    if (b >= 0) atomicAdd(&counts[mine * bins + b], 1u);
  }
  __syncthreads();
  for (int k = threadIdx.x; k < bins; k += blockDim.x) {
    unsigned long long c = 0;
    for (int j = 0; j < copies; ++j) c += counts[j * bins + k];
    if (c) atomicAdd(&hist[k], c);
  }
}

// Runs fn(lane, y0, rows, device pixels, n) for each band, bands in parallel.
template <class Op, class Fn>
void for_each_band_on_device(const TileSource& in, cuda::LanePool& pool, Fn&& fn) {
  const LevelInfo& l0 = in.level(0);
  const PixelFormat f = in_format<Op>();
  const int64_t band = reduce_band_rows(in), nb = (l0.height + band - 1) / band;
  tbb::parallel_for(int64_t{0}, nb, [&](int64_t b) {
    const int64_t y0 = b * band, h = std::min(band, l0.height - y0);
    const size_t bytes = static_cast<size_t>(l0.width * h) * f.bytes_per_pixel();
    // Read before taking a lane (the input may be a GPU op on the same pool).
    const Image band_px = in.read(0, Rect(0, y0, l0.width, h));
    cuda::DeviceScope scope(pool.device());
    auto lane = pool.acquire();
    lane->reserve(bytes, 0);
    const ImageView v{f, Rect(0, y0, l0.width, h), static_cast<size_t>(l0.width) * f.bytes_per_pixel(),
                      lane->host_in.get()};
    copy_overlap(band_px.view(), v);
    TW_CUDA_CHECK(cudaMemcpyAsync(lane->dev_in.get(), lane->host_in.get(), bytes, cudaMemcpyHostToDevice,
                                  lane->stream.get()));
    fn(*lane, b, reinterpret_cast<const typename Op::In*>(lane->dev_in.get()), l0.width * h);
  });
}

}  // namespace cuda_detail

template <class Op>
typename Op::Acc reduce_cuda(const TileSource& in, const Op& op, int device) {
  using Acc = typename Op::Acc;
  using namespace cuda_detail;
  cuda::LanePool& pool = cuda::shared_lanes(device);
  const int64_t nb = (in.level(0).height + reduce_band_rows(in) - 1) / reduce_band_rows(in);
  std::vector<std::vector<Acc>> part(static_cast<size_t>(nb));
  for_each_band_on_device<Op>(in, pool, [&](cuda::Lane& lane, int64_t b, const typename Op::In* px, int64_t n) {
    const int grid = static_cast<int>(std::min<int64_t>(kReduceBlocks, (n + kReduceThreads - 1) / kReduceThreads));
    lane.reserve(0, grid * sizeof(Acc));
    reduce_kernel<Op><<<grid, kReduceThreads, kReduceThreads * sizeof(Acc), lane.stream.get()>>>(
        op, px, n, reinterpret_cast<Acc*>(lane.dev_out.get()));
    TW_CUDA_CHECK(cudaGetLastError());
    TW_CUDA_CHECK(cudaMemcpyAsync(lane.host_out.get(), lane.dev_out.get(), grid * sizeof(Acc),
                                  cudaMemcpyDeviceToHost, lane.stream.get()));
    lane.stream.sync();
    const Acc* p = reinterpret_cast<const Acc*>(lane.host_out.get());
    part[static_cast<size_t>(b)].assign(p, p + grid);
  });
  Acc total = op.identity();
  for (const auto& bp : part)
    for (const Acc& a : bp) op.merge(total, a);
  return total;
}

template <class Op>
std::vector<uint64_t> histogram_cuda(const TileSource& in, const Op& op, int device) {
  using namespace cuda_detail;
  const int bins = op.bins();
  int copies = 1;
  if (static_cast<size_t>(bins) * (kReduceThreads / 32) * 4 <= 32768) copies = kReduceThreads / 32;
  else if (static_cast<size_t>(bins) * 4 > 48 * 1024) throw InputError("at most 12288 histogram bins on the GPU");
  cuda::LanePool& pool = cuda::shared_lanes(device);
  cuda::DeviceScope scope(device);
  cuda::DeviceBuffer<unsigned long long> hist(static_cast<size_t>(bins));
  TW_CUDA_CHECK(cudaMemset(hist.get(), 0, hist.bytes()));
  for_each_band_on_device<Op>(in, pool, [&](cuda::Lane& lane, int64_t, const typename Op::In* px, int64_t n) {
    const int grid = static_cast<int>(std::min<int64_t>(kReduceBlocks, (n + kReduceThreads - 1) / kReduceThreads));
    histogram_kernel<Op><<<grid, kReduceThreads, static_cast<size_t>(bins) * copies * 4, lane.stream.get()>>>(
        op, px, n, bins, copies, hist.get());
    TW_CUDA_CHECK(cudaGetLastError());
    lane.stream.sync();
  });
  std::vector<unsigned long long> h(static_cast<size_t>(bins));
  TW_CUDA_CHECK(cudaMemcpy(h.data(), hist.get(), hist.bytes(), cudaMemcpyDeviceToHost));
  return std::vector<uint64_t>(h.begin(), h.end());
}

}  // namespace tw::ops

#define TW_CUDA_REDUCE(...) \
  template typename __VA_ARGS__::Acc tw::ops::reduce_cuda<__VA_ARGS__>(const ::tw::TileSource&, const __VA_ARGS__&, int)
#define TW_CUDA_HISTOGRAM(...)                                                                             \
  template std::vector<uint64_t> tw::ops::histogram_cuda<__VA_ARGS__>(const ::tw::TileSource&, const __VA_ARGS__&, \
                                                                       int)
