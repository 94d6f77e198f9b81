#include <cub/block/block_reduce.cuh>

#include "engine/cuda/cuda_check.hpp"
#include "engine/error.hpp"
#include "engine/jpeg_coefs.hpp"
#include "io/codec/jpeg_transform/jpeg_segments_cuda.hpp"

namespace tw {
namespace {

constexpr int kThreads = 256;

__device__ __forceinline__ uint64_t packed_bytes(uint32_t size, size_t room) {
  const uint64_t n = size == kJpegTileAsCoefficients ? room : size;
  return (n + kJpegSegmentAlign - 1) / kJpegSegmentAlign * kJpegSegmentAlign;
}

// One thread block per tile: its place is the packed bytes of the tiles
// before it (a band has at most a few thousand tiles, so each block sums
// them again rather than waiting for a scan), then its bytes go out 16 at a
// time, consecutive threads on consecutive addresses, as PCIe writes like.
__global__ void gather(JpegSegmentsLaunch a) {
  using Reduce = cub::BlockReduce<uint64_t, kThreads>;
  __shared__ typename Reduce::TempStorage tmp;
  __shared__ uint64_t at;
  const int t = blockIdx.x;
  uint64_t before = 0;
  for (int j = threadIdx.x; j < t; j += kThreads) before += packed_bytes(a.sizes[j], a.room);
  before = Reduce(tmp).Sum(before);
  if (threadIdx.x == 0) {
    at = before;
    a.out_offsets[t] = before;
    a.out_sizes[t] = a.sizes[t];
  }
  __syncthreads();
  const uint64_t n = packed_bytes(a.sizes[t], a.room) / kJpegSegmentAlign;
  const auto* src = reinterpret_cast<const uint4*>(a.rooms + static_cast<size_t>(t) * a.room);
  auto* dst = reinterpret_cast<uint4*>(a.out + at);
  for (uint64_t i = threadIdx.x; i < n; i += kThreads) dst[i] = src[i];
}

}  // namespace

void jpeg_gather_segments_cuda(const JpegSegmentsLaunch& a, cudaStream_t stream) {
  if (a.tiles <= 0) return;
  TW_ASSERT(a.room % kJpegSegmentAlign == 0);
  gather<<<static_cast<unsigned>(a.tiles), kThreads, 0, stream>>>(a);
  TW_CUDA_CHECK_LAUNCH();
}

}  // namespace tw
