#pragma once
// GPU reductions (include only from .cu files). Bands of the image are read
// on the host by several threads, each band on its own lane (stream); a
// kernel turns a band into per-block partials (reduce -> scalar) or adds it
// into a device histogram privatised per warp in shared memory.
#include <cuda_runtime.h>

#include <vector>

#include "engine/byte_counters.hpp"
#include "engine/cuda/cuda_check.hpp"
#include "engine/cuda/lanes.hpp"
#include "engine/ops/device_chain.hpp"
#include "engine/ops/device_tiles.hpp"
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

// Runs fn(lane, cell index, device pixels, n) for each of `cells`
// (reduce_cells), in parallel; a cell's pixels reach the device packed.
// Where the input gives its tiles on this device (a GPU chain, a result
// left in device memory), a cell is made there: nothing crosses the bus.
template <class Op, class Fn>
void for_each_cell_on_device(const TileSource& in, const std::vector<Rect>& cells, cuda::LanePool& pool, Fn&& fn) {
  const PixelFormat f = in_format<Op>();
  const DeviceTiles* chain = in.device_tiles();
  const bool on_device = chain && chain->device() == pool.device();
  tbb::parallel_for(int64_t{0}, static_cast<int64_t>(cells.size()), [&](int64_t b) {
    const Rect& r = cells[static_cast<size_t>(b)];
    const size_t bytes = static_cast<size_t>(r.area()) * f.bytes_per_pixel();
    if (on_device) {
      StagedInputs host;
      chain->stage(r, host);  // before taking a lane, as a GPU op's read does
      cuda::DeviceScope scope(pool.device());
      auto lane = pool.acquire();
      const cudaStream_t s = lane->stream.get();
      DeviceChain c{s, &*lane, &host, cuda::StreamScratch(s)};
      uint8_t* px = c.scratch.alloc(bytes);
      chain->compute(r, px, static_cast<size_t>(r.w) * f.bytes_per_pixel(), c);
      fn(*lane, b, reinterpret_cast<const typename Op::In*>(px), r.area());  // waits for its stream
      return;
    }
    // Read before taking a lane (the input may be a GPU op on the same pool).
    const Image px = in.read(0, r);
    cuda::DeviceScope scope(pool.device());
    auto lane = pool.acquire();
    lane->reserve(bytes, 0);
    const ImageView v{f, r, static_cast<size_t>(r.w) * f.bytes_per_pixel(), lane->host_in.get()};
    copy_overlap(px.view(), v);
    TW_CUDA_CHECK(
        cudaMemcpyAsync(lane->dev_in.get(), lane->host_in.get(), bytes, cudaMemcpyHostToDevice, lane->stream.get()));
    count_uploaded(bytes);
    fn(*lane, b, reinterpret_cast<const typename Op::In*>(lane->dev_in.get()), r.area());
  });
}

}  // namespace cuda_detail

template <class Op>
typename Op::Acc reduce_cuda(const TileSource& in, const Op& op, int device, size_t memory) {
  using Acc = typename Op::Acc;
  using namespace cuda_detail;
  cuda::LanePool& pool = cuda::shared_lanes(device);
  const std::vector<Rect> cells = reduce_cells(in, memory);
  std::vector<std::vector<Acc>> part(cells.size());
  for_each_cell_on_device<Op>(in, cells, pool, [&](cuda::Lane& lane, int64_t b, const typename Op::In* px, int64_t n) {
    const int grid = static_cast<int>(std::min<int64_t>(kReduceBlocks, (n + kReduceThreads - 1) / kReduceThreads));
    lane.reserve(0, grid * sizeof(Acc));
    reduce_kernel<Op><<<grid, kReduceThreads, kReduceThreads * sizeof(Acc), lane.stream.get()>>>(
        op, px, n, reinterpret_cast<Acc*>(lane.dev_out.get()));
    TW_CUDA_CHECK(cudaGetLastError());
    TW_CUDA_CHECK(cudaMemcpyAsync(lane.host_out.get(), lane.dev_out.get(), grid * sizeof(Acc), cudaMemcpyDeviceToHost,
                                  lane.stream.get()));
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
std::vector<uint64_t> histogram_cuda(const TileSource& in, const Op& op, int device, size_t memory) {
  using namespace cuda_detail;
  const int bins = op.bins();
  int copies = 1;
  if (static_cast<size_t>(bins) * (kReduceThreads / 32) * 4 <= 32768)
    copies = kReduceThreads / 32;
  else if (static_cast<size_t>(bins) * 4 > 48 * 1024)
    throw InputError("at most 12288 histogram bins on the GPU");
  cuda::LanePool& pool = cuda::shared_lanes(device);
  cuda::DeviceScope scope(device);
  cuda::DeviceBuffer<unsigned long long> hist(static_cast<size_t>(bins));
  TW_CUDA_CHECK(cudaMemset(hist.get(), 0, hist.bytes()));
  for_each_cell_on_device<Op>(
      in, reduce_cells(in, memory), pool, [&](cuda::Lane& lane, int64_t, const typename Op::In* px, int64_t n) {
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

#define TW_CUDA_REDUCE(...)                                                                                         \
  template typename __VA_ARGS__::Acc tw::ops::reduce_cuda<__VA_ARGS__>(const ::tw::TileSource&, const __VA_ARGS__&, \
                                                                       int, size_t)
#define TW_CUDA_HISTOGRAM(...)                                                                                     \
  template std::vector<uint64_t> tw::ops::histogram_cuda<__VA_ARGS__>(const ::tw::TileSource&, const __VA_ARGS__&, \
                                                                      int, size_t)
