// Block-based union-find labelling of one tile (kernels/label/label_cuda.hpp
// has the scheme and the papers). Every union keeps the smaller linear index
// as the root, so a component's root is its first pixel in raster order;
// the tile's labels are then the roots' ranks, identical to the CPU's.
#include <algorithm>
#include <cstring>
#include <cub/device/device_scan.cuh>

#include "engine/cuda/cuda_check.hpp"
#include "engine/cuda/resources.hpp"
#include "engine/error.hpp"
#include "kernels/label/label_cuda.hpp"

namespace tw::label {
namespace {

using cuda::DeviceBuffer;
using cuda::DeviceScope;
using cuda::Event;
using cuda::PinnedBuffer;
using cuda::Stream;

// A block of 32 x 8 pixels, one thread each: a warp per row, and a shared
// union-find of 256 entries.
constexpr int kBw = 32, kBh = 8;

__device__ unsigned root_of(const unsigned* l, unsigned x) {
  unsigned p;
  while ((p = l[x]) != x) x = p;
  return x;
}

// Playne & Hawick's lock-free union: hook the larger root under the smaller
// with atomicMin, retry if another thread hooked it first.
__device__ void unite(unsigned* l, unsigned a, unsigned b) {
  for (;;) {
    a = root_of(l, a), b = root_of(l, b);
    if (a == b) return;
    if (a < b) {
      const unsigned old = atomicMin(&l[b], a);
      if (old == b) return;
      b = old;
    } else {
      const unsigned old = atomicMin(&l[a], b);
      if (old == a) return;
      a = old;
    }
  }
}

// Within each block, in shared memory; writes each pixel's block root as a
// linear index of the tile.
__global__ void local_merge(const uint8_t* __restrict__ fg, int w, int h, bool eight, unsigned* __restrict__ l) {
  __shared__ unsigned s[kBw * kBh];
  const int lx = threadIdx.x, ly = threadIdx.y;
  const int x = blockIdx.x * kBw + lx, y = blockIdx.y * kBh + ly;
  const int li = ly * kBw + lx;
  const bool in = x < w && y < h;
  const size_t i = static_cast<size_t>(y) * w + x;
  const bool f = in && fg[i];
  s[li] = li;
  __syncthreads();
  if (f) {
    if (lx > 0 && fg[i - 1]) unite(s, li, li - 1);
    if (ly > 0) {
      // With the pixel above set, the diagonals are joined to it through
      // the row above (by its own threads, within the block).
      if (fg[i - w])
        unite(s, li, li - kBw);
      else if (eight) {
        if (lx > 0 && fg[i - w - 1]) unite(s, li, li - kBw - 1);
        if (lx + 1 < kBw && x + 1 < w && fg[i - w + 1]) unite(s, li, li - kBw + 1);
      }
    }
  }
  __syncthreads();
  if (in) {
    const unsigned r = f ? root_of(s, li) : li;
    const int rx = blockIdx.x * kBw + static_cast<int>(r % kBw), ry = blockIdx.y * kBh + static_cast<int>(r / kBw);
    l[i] = static_cast<unsigned>(ry) * w + rx;
  }
}

// Pixels on a block's left column and top row join their neighbours in the
// blocks to the left and above (the pairs across the other block borders
// are these seen from the other side).
__global__ void border_merge(const uint8_t* __restrict__ fg, int w, int h, bool eight, unsigned* l) {
  const int x = blockIdx.x * kBw + threadIdx.x, y = blockIdx.y * kBh + threadIdx.y;
  if (x >= w || y >= h) return;
  const unsigned i = static_cast<unsigned>(y) * w + x;
  if (!fg[i]) return;
  if (threadIdx.x == 0 && x > 0) {
    if (fg[i - 1]) unite(l, i, i - 1);
    if (eight && y > 0 && fg[i - w - 1]) unite(l, i, i - w - 1);
    if (eight && y + 1 < h && fg[i + w - 1]) unite(l, i, i + w - 1);
  }
  if (threadIdx.y == 0 && y > 0) {
    if (fg[i - w]) unite(l, i, i - w);
    if (eight && x > 0 && fg[i - w - 1]) unite(l, i, i - w - 1);
    if (eight && x + 1 < w && fg[i - w + 1]) unite(l, i, i - w + 1);
  }
}

// Every set pixel pointed at its root; roots flagged for the scan.
__global__ void compress(const uint8_t* __restrict__ fg, size_t n, unsigned* l, unsigned* __restrict__ is_root) {
  const size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
  if (i >= n) return;
  const bool f = fg[i];
  unsigned r = 0;
  if (f) {
    r = root_of(l, static_cast<unsigned>(i));
    l[i] = r;
  }
  is_root[i] = f && r == i;
}

__global__ void number(const uint8_t* __restrict__ fg, size_t n, const unsigned* __restrict__ l,
                       const unsigned* __restrict__ rank, unsigned* __restrict__ out, unsigned* __restrict__ first) {
  const size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
  if (i >= n) return;
  if (!fg[i]) {
    out[i] = 0;
    return;
  }
  const unsigned r = l[i];
  out[i] = rank[r] + 1;
  if (first && r == i) first[rank[r]] = static_cast<unsigned>(i);
}

__global__ void total(const uint8_t* __restrict__ fg, size_t n, const unsigned* __restrict__ l,
                      const unsigned* __restrict__ rank, unsigned* count) {
  const size_t last = n - 1;
  *count = rank[last] + (fg[last] && l[last] == last ? 1u : 0u);
}

size_t scan_bytes(size_t n) {
  size_t bytes = 0;
  TW_CUDA_CHECK(cub::DeviceScan::ExclusiveSum(nullptr, bytes, static_cast<const unsigned*>(nullptr),
                                              static_cast<unsigned*>(nullptr), static_cast<int>(n)));
  return bytes;
}

size_t align_up(size_t b) {
  return (b + 255) & ~size_t{255};
}

// The whole labelling on device buffers; the count lands in d_count.
// Scratch: roots (4 B a pixel), flags/ranks (4 B), the scan's storage.
void run(const uint8_t* d_fg, int w, int h, int connectivity, unsigned* d_out, unsigned* d_first, uint8_t* scratch,
         unsigned* d_count, cudaStream_t s) {
  const size_t n = static_cast<size_t>(w) * h;
  unsigned* l = reinterpret_cast<unsigned*>(scratch);
  unsigned* rank = reinterpret_cast<unsigned*>(scratch + align_up(n * 4));
  uint8_t* tmp = scratch + 2 * align_up(n * 4);
  size_t tmp_bytes = scan_bytes(n);
  const bool eight = connectivity == 8;
  const dim3 block(kBw, kBh), grid((w + kBw - 1) / kBw, (h + kBh - 1) / kBh);
  local_merge<<<grid, block, 0, s>>>(d_fg, w, h, eight, l);
  TW_CUDA_CHECK_LAUNCH();
  border_merge<<<grid, block, 0, s>>>(d_fg, w, h, eight, l);
  TW_CUDA_CHECK_LAUNCH();
  const unsigned lin = static_cast<unsigned>((n + 255) / 256);
  // The flags go to d_out (rewritten by `number`), the ranks to `rank`.
  compress<<<lin, 256, 0, s>>>(d_fg, n, l, d_out);
  TW_CUDA_CHECK_LAUNCH();
  TW_CUDA_CHECK(cub::DeviceScan::ExclusiveSum(tmp, tmp_bytes, d_out, rank, static_cast<int>(n), s));
  total<<<1, 1, 0, s>>>(d_fg, n, l, rank, d_count);
  TW_CUDA_CHECK_LAUNCH();
  number<<<lin, 256, 0, s>>>(d_fg, n, l, rank, d_out, d_first);
  TW_CUDA_CHECK_LAUNCH();
}

class Labeler final : public CudaTileLabeler {
 public:
  Labeler(int device, int64_t max_w, int64_t max_h)
      : device_(device), scope_(device), cap_(static_cast<size_t>(max_w * max_h)) {
    if (max_w * max_h >= (int64_t{1} << 31)) throw InputError("GPU labelling tiles must hold fewer than 2^31 pixels");
    fg_ = DeviceBuffer<uint8_t>(cap_);
    out_ = DeviceBuffer<unsigned>(cap_);
    first_ = DeviceBuffer<unsigned>(cap_);
    scratch_ = DeviceBuffer<uint8_t>(label_device_scratch_bytes(max_w, max_h) + 256);
    host_count_ = PinnedBuffer<unsigned>(1);
    host_fg_ = PinnedBuffer<uint8_t>(cap_);
    host_out_ = PinnedBuffer<unsigned>(cap_);
  }

  uint32_t label(const uint8_t* fg, size_t fg_stride, int64_t w, int64_t h, int connectivity, uint32_t* out,
                 size_t out_stride, std::vector<uint32_t>& first) override {
    TW_ASSERT(static_cast<size_t>(w * h) <= cap_);
    DeviceScope scope(device_);
    const cudaStream_t s = stream_.get();
    const size_t n = static_cast<size_t>(w * h);
    // Both ways through pinned buffers: a copy from pageable memory is
    // staged by the driver one chunk at a time and serialises the callers
    // of several labelers; these run at the bus's rate, and the host copies
    // on each side run on the calling threads, in parallel.
    for (int64_t y = 0; y < h; ++y)
      std::memcpy(host_fg_.get() + static_cast<size_t>(y * w), fg + static_cast<size_t>(y) * fg_stride,
                  static_cast<size_t>(w));
    t0_.record(s);
    TW_CUDA_CHECK(cudaMemcpyAsync(fg_.get(), host_fg_.get(), n, cudaMemcpyHostToDevice, s));
    t1_.record(s);
    unsigned* d_count = reinterpret_cast<unsigned*>(scratch_.get() + scratch_.size() - 256);
    run(fg_.get(), static_cast<int>(w), static_cast<int>(h), connectivity, out_.get(), first_.get(), scratch_.get(),
        d_count, s);
    t2_.record(s);
    TW_CUDA_CHECK(cudaMemcpyAsync(host_count_.get(), d_count, 4, cudaMemcpyDeviceToHost, s));
    TW_CUDA_CHECK(cudaMemcpyAsync(host_out_.get(), out_.get(), n * 4, cudaMemcpyDeviceToHost, s));
    stream_.sync();
    for (int64_t y = 0; y < h; ++y)
      std::memcpy(out + static_cast<size_t>(y) * out_stride, host_out_.get() + static_cast<size_t>(y * w),
                  static_cast<size_t>(w) * 4);
    const uint32_t count = host_count_.get()[0];
    first.resize(count);
    // host_out_ is free again: the first pixels come through it too.
    if (count) TW_CUDA_CHECK(cudaMemcpyAsync(host_out_.get(), first_.get(), count * 4, cudaMemcpyDeviceToHost, s));
    t3_.record(s);
    stream_.sync();
    if (count) std::memcpy(first.data(), host_out_.get(), static_cast<size_t>(count) * 4);
    stats_.kernel_seconds += t2_.ms_since(t1_) * 1e-3;
    stats_.transfer_seconds += (t1_.ms_since(t0_) + t3_.ms_since(t2_)) * 1e-3;
    ++stats_.tiles;
    return count;
  }

  CudaLabelStats stats() const override { return stats_; }

 private:
  int device_;
  DeviceScope scope_;
  size_t cap_;
  Stream stream_;
  Event t0_{true}, t1_{true}, t2_{true}, t3_{true};
  DeviceBuffer<uint8_t> fg_;
  DeviceBuffer<unsigned> out_, first_;
  DeviceBuffer<uint8_t> scratch_;
  PinnedBuffer<unsigned> host_count_;
  PinnedBuffer<uint8_t> host_fg_;
  PinnedBuffer<unsigned> host_out_;
  CudaLabelStats stats_;
};

}  // namespace

size_t label_device_scratch_bytes(int64_t w, int64_t h) {
  const size_t n = static_cast<size_t>(w * h);
  return 2 * align_up(n * 4) + align_up(scan_bytes(n)) + 256;
}

uint32_t label_device(const uint8_t* d_fg, int64_t w, int64_t h, int connectivity, uint32_t* d_labels, void* d_scratch,
                      void* stream) {
  const auto s = static_cast<cudaStream_t>(stream);
  auto* scratch = static_cast<uint8_t*>(d_scratch);
  unsigned* d_count = reinterpret_cast<unsigned*>(scratch + label_device_scratch_bytes(w, h) - 256);
  run(d_fg, static_cast<int>(w), static_cast<int>(h), connectivity, d_labels, nullptr, scratch, d_count, s);
  unsigned count = 0;
  TW_CUDA_CHECK(cudaMemcpyAsync(&count, d_count, 4, cudaMemcpyDeviceToHost, s));
  TW_CUDA_CHECK(cudaStreamSynchronize(s));
  return count;
}

std::unique_ptr<CudaTileLabeler> make_cuda_tile_labeler(int device, int64_t max_w, int64_t max_h) {
  return std::make_unique<Labeler>(device, max_w, max_h);
}

}  // namespace tw::label
