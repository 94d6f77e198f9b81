// IWPP-MP on the GPU (seed 001, alg. 5), one tile at a time.
//
// The working values live on the device as 32-bit words (the write-back is
// an atomic max, or min for erosion: the seed's atomicCAS loop reduced to one
// instruction). The tile's halo ring is part of the image but frozen.
//
// A persistent kernel: each resident block of one warp takes a 32x32
// megapixel from a global queue, loads it with its one-pixel apron into
// shared memory, sweeps lines in the four directions until a parallel check
// finds it stable (exact for 8-connectivity: each sweep reads the three
// neighbours behind the line), writes back, and enqueues each neighbouring megapixel whose apron it
// changed. A megapixel is queued at most once at a time (a flag). `pending`
// counts queued-or-in-work megapixels; successors are counted before their
// parent is released, so it reaches zero only when all work is done — the
// active-block counter that keeps blocks from quitting early.
#include <cuda_runtime.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "engine/byte_counters.hpp"
#include "engine/cuda/cuda_check.hpp"
#include "engine/cuda/resources.hpp"
#include "engine/parallel.hpp"
#include "kernels/reconstruct/mp_queue.cuh"
#include "kernels/reconstruct/reconstruct_cuda.hpp"

namespace tw {
namespace {

using mp_queue::dequeue;
using mp_queue::enqueue_warp;
using mp_queue::Queue;

constexpr int kMp = 32;

struct Geometry {
  uint32_t* j;        // (w + 2) x (h + 2) words: the core plus the frozen ring
  const uint32_t* i;  // mask, same layout
  int64_t pitch;      // in words
  int w, h;           // the core; core pixel (x, y) is at (x + 1, y + 1)
  int nbx, nby;
};

template <bool kDilate>
__device__ __forceinline__ uint32_t ahead(uint32_t a, uint32_t b) {
  return kDilate ? max(a, b) : min(a, b);
}
template <bool kDilate>
__device__ __forceinline__ uint32_t limit(uint32_t a, uint32_t b) {
  return kDilate ? min(a, b) : max(a, b);
}

template <bool kDilate, bool kEight>
__global__ void __launch_bounds__(32) iwpp_mp(Geometry g, Queue q) {
  __shared__ uint32_t sj[kMp + 2][kMp + 3];  // padded: column sweeps stay conflict-free
  __shared__ uint32_t si[kMp][kMp + 1];
  __shared__ uint32_t old[kMp][kMp + 1];
  const int lane = threadIdx.x;
  const uint32_t neutral = kDilate ? 0u : 0xffffffffu;
  unsigned long long visits = 0;
  for (;;) {
    int item = lane == 0 ? dequeue(q) : 0;
    item = __shfl_sync(0xffffffffu, item, 0);
    if (item < 0) break;
    ++visits;
    const int bx = item % g.nbx, by = item / g.nbx;
    const int x0 = bx * kMp, y0 = by * kMp;  // core coordinates of the megapixel
    // Load: buffer coordinates are core + 1. Pixels outside the buffer are
    // neutral; pixels of the megapixel outside the core (the frozen ring or
    // beyond) get mask = value, so they never change.
    for (int k = lane; k < (kMp + 2) * (kMp + 2); k += 32) {
      const int ly = k / (kMp + 2), lx = k % (kMp + 2);
      const int bxp = x0 + lx, byp = y0 + ly;  // buffer coordinates (core - 1 + l)
      uint32_t v = neutral;
      if (bxp >= 0 && byp >= 0 && bxp < g.w + 2 && byp < g.h + 2) v = __ldcg(&g.j[byp * g.pitch + bxp]);
      sj[ly][lx] = v;
    }
    __syncwarp();
    for (int k = lane; k < kMp * kMp; k += 32) {
      const int ly = k / kMp, lx = k % kMp;
      const int cx = x0 + lx, cy = y0 + ly;
      const uint32_t v = sj[ly + 1][lx + 1];
      si[ly][lx] = (cx < g.w && cy < g.h) ? __ldg(&g.i[(cy + 1) * g.pitch + cx + 1]) : v;
      old[ly][lx] = v;
    }
    __syncwarp();
    bool grew = false;
    for (;;) {
      // Stable? A parallel check is far cheaper than a confirming round of
      // sweeps, and most visits of an over-queued megapixel end here.
      bool c = false;
      for (int y = 0; y < kMp; ++y) {
        const int x = lane;
        const uint32_t cur = sj[y + 1][x + 1];
        uint32_t v = ahead<kDilate>(ahead<kDilate>(sj[y][x + 1], sj[y + 2][x + 1]),
                                    ahead<kDilate>(sj[y + 1][x], sj[y + 1][x + 2]));
        if (kEight)
          v = ahead<kDilate>(v, ahead<kDilate>(ahead<kDilate>(sj[y][x], sj[y][x + 2]),
                                               ahead<kDilate>(sj[y + 2][x], sj[y + 2][x + 2])));
        c |= limit<kDilate>(ahead<kDilate>(v, cur), si[y][x]) != cur;
      }
      if (!__any_sync(0xffffffffu, c)) break;
      grew = true;
      // Line sweeps in the four directions. Lane = the line; each step reads
      // the pixels behind it (exact for 8-connectivity).
      for (int dir = 0; dir < 4; ++dir) {
        for (int s = 0; s < kMp; ++s) {
          int x, y, bx1, by1, bx2, by2, bx3, by3;  // pixel and its (up to) three neighbours behind
          if (dir == 0)
            x = s, y = lane, bx1 = x - 1, by1 = y, bx2 = x - 1, by2 = y - 1, bx3 = x - 1, by3 = y + 1;
          else if (dir == 1)
            x = kMp - 1 - s, y = lane, bx1 = x + 1, by1 = y, bx2 = x + 1, by2 = y - 1, bx3 = x + 1, by3 = y + 1;
          else if (dir == 2)
            x = lane, y = s, bx1 = x, by1 = y - 1, bx2 = x - 1, by2 = y - 1, bx3 = x + 1, by3 = y - 1;
          else
            x = lane, y = kMp - 1 - s, bx1 = x, by1 = y + 1, bx2 = x - 1, by2 = y + 1, bx3 = x + 1, by3 = y + 1;
          const uint32_t cur = sj[y + 1][x + 1];
          uint32_t v = ahead<kDilate>(cur, sj[by1 + 1][bx1 + 1]);
          if (kEight) v = ahead<kDilate>(ahead<kDilate>(v, sj[by2 + 1][bx2 + 1]), sj[by3 + 1][bx3 + 1]);
          v = limit<kDilate>(v, si[y][x]);
          if (v != cur) sj[y + 1][x + 1] = v;
          __syncwarp();
        }
      }
    }
    // Write back what grew (reductions without a returned value: nothing to
    // wait for) and note which edges changed for the neighbours. A value some
    // other block already exceeded may queue a neighbour needlessly; harmless.
    bool e_top = false, e_bottom = false, e_left = false, e_right = false;
    bool c_tl = false, c_tr = false, c_bl = false, c_br = false;
    if (grew) {
      for (int k = lane; k < kMp * kMp; k += 32) {
        const int ly = k / kMp, lx = k % kMp;
        const int cx = x0 + lx, cy = y0 + ly;
        const uint32_t v = sj[ly + 1][lx + 1];
        if (v == old[ly][lx] || cx >= g.w || cy >= g.h) continue;
        uint32_t* p = &g.j[(cy + 1) * g.pitch + cx + 1];
        if (kDilate)
          atomicMax(p, v);
        else
          atomicMin(p, v);
        const bool last_x = lx == kMp - 1 || cx == g.w - 1, last_y = ly == kMp - 1 || cy == g.h - 1;
        e_top |= ly == 0, e_bottom |= last_y, e_left |= lx == 0, e_right |= last_x;
        c_tl |= ly == 0 && lx == 0, c_tr |= ly == 0 && last_x, c_bl |= last_y && lx == 0, c_br |= last_y && last_x;
      }
      __threadfence();  // our values are visible before anyone dequeues a neighbour
      e_top = __any_sync(0xffffffffu, e_top), e_bottom = __any_sync(0xffffffffu, e_bottom);
      e_left = __any_sync(0xffffffffu, e_left), e_right = __any_sync(0xffffffffu, e_right);
      c_tl = __any_sync(0xffffffffu, c_tl), c_tr = __any_sync(0xffffffffu, c_tr);
      c_bl = __any_sync(0xffffffffu, c_bl), c_br = __any_sync(0xffffffffu, c_br);
      // Lanes 0-7 queue the eight neighbours at once.
      const bool up = by > 0, down = by + 1 < g.nby, left = bx > 0, right = bx + 1 < g.nbx;
      bool want = false;
      int nb = item;
      switch (lane) {
        case 0:
          want = up && e_top, nb = item - g.nbx;
          break;
        case 1:
          want = down && e_bottom, nb = item + g.nbx;
          break;
        case 2:
          want = left && e_left, nb = item - 1;
          break;
        case 3:
          want = right && e_right, nb = item + 1;
          break;
        case 4:
          want = kEight && up && left && c_tl, nb = item - g.nbx - 1;
          break;
        case 5:
          want = kEight && up && right && c_tr, nb = item - g.nbx + 1;
          break;
        case 6:
          want = kEight && down && left && c_bl, nb = item + g.nbx - 1;
          break;
        case 7:
          want = kEight && down && right && c_br, nb = item + g.nbx + 1;
          break;
        default:
          break;
      }
      enqueue_warp(q, want, static_cast<uint32_t>(nb), lane);
      __syncwarp();
    }
    if (lane == 0) atomicSub(q.pending, 1);  // after the successors were counted
    __syncwarp();
  }
  if (lane == 0) atomicAdd(q.visits, visits);
}

// head, tail, pending and visits each on a 128-byte line of their own: a
// line's atomics serialise in one L2 slice.
constexpr int kCounterSpacing = 16;

__global__ void reset_counters(Queue q, int queued) {
  *q.head = 0, *q.tail = static_cast<unsigned long long>(queued), *q.pending = queued, *q.visits = 0;
}

__global__ void fill_queue(unsigned long long* slots, uint32_t* queued, int n) {
  const int k = blockIdx.x * blockDim.x + threadIdx.x;
  if (k < n) slots[k] = (1ull << 32) | static_cast<uint32_t>(k), queued[k] = 1u;
}

template <class T>
__global__ void widen(const T* in, size_t in_pitch, uint32_t* out, int64_t pitch, int w, int h) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y;
  if (x < w) out[y * pitch + x] = reinterpret_cast<const T*>(reinterpret_cast<const uint8_t*>(in) + y * in_pitch)[x];
}

template <class T>
__global__ void narrow(const uint32_t* in, int64_t pitch, T* out, size_t out_pitch, int w, int h) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y;
  if (x < w)
    reinterpret_cast<T*>(reinterpret_cast<uint8_t*>(out) + y * out_pitch)[x] =
        static_cast<T>(in[(y + 1) * pitch + x + 1]);
}

template <class T, bool kDilate, bool kEight>
class CudaRule : public TilePropagator {
 public:
  CudaRule(int device, GpuWavefrontStats* stats) : device_(device), stats_(stats), ws_(mp_queue::workspace(device)) {}

  void neutral(uint8_t* px) const override {
    const T v = kDilate ? T(0) : T(~T(0));
    std::memcpy(px, &v, sizeof v);
  }
  bool can_propagate(const uint8_t* from, const uint8_t* j, const uint8_t* i) const override {
    T f, q, m;
    std::memcpy(&f, from, sizeof f), std::memcpy(&q, j, sizeof q), std::memcpy(&m, i, sizeof m);
    return (kDilate ? q < f : q > f) && q != m;
  }

  bool propagate(const ImageView& jv, const ImageView& iv, const Rect& core) const override {
    std::lock_guard<std::mutex> lock(ws_.mu);
    cuda::DeviceScope scope(device_);
    if (!ws_.stream) ws_.stream = std::make_unique<cuda::Stream>();
    auto& j_ = ws_.j;
    auto& i_ = ws_.i;
    auto& staging_ = ws_.staging;
    cuda::Stream& stream_ = *ws_.stream;
    const int w = static_cast<int>(core.w), h = static_cast<int>(core.h);
    const int64_t pitch = (w + 2 + 31) / 32 * 32;
    const size_t words = static_cast<size_t>(pitch) * (h + 2);
    if (j_.size() < words) {
      j_ = cuda::DeviceBuffer<uint32_t>(words);
      i_ = cuda::DeviceBuffer<uint32_t>(words);
    }
    const int nbx = (w + kMp - 1) / kMp, nby = (h + kMp - 1) / kMp, n = nbx * nby;
    int per_sm = 0, sms = 0;
    TW_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, iwpp_mp<kDilate, kEight>, 32, 0));
    TW_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device_));
    // Persistent blocks must all be resident at once (they wait for each other).
    const int blocks = std::max(1, std::min(per_sm * sms, n));
    // Upload the tile with its halo, and the mask, as they are; widen on the
    // device. Both go through pinned buffers, filled by all threads: copies
    // straight from the (pageable) tile store ran at ~3 GB/s, 3.6 s of a
    // 2-GP h-dome whose kernels took 0.05 s.
    const size_t row = static_cast<size_t>(w + 2) * sizeof(T), mrow = static_cast<size_t>(w) * sizeof(T);
    const size_t jbytes = row * (h + 2), ibytes = mrow * h;
    if (staging_.size() < jbytes) staging_ = cuda::DeviceBuffer<uint8_t>(jbytes);
    if (ws_.host_j.size() < jbytes) {
      ws_.host_j = cuda::PinnedBuffer<uint8_t>(jbytes);
      ws_.host_i = cuda::PinnedBuffer<uint8_t>(jbytes);
      ws_.host_out = cuda::PinnedBuffer<uint8_t>(jbytes);
    }
    uint8_t* hj = ws_.host_j.get();
    uint8_t* hi = ws_.host_i.get();
    uint8_t* ho = ws_.host_out.get();
    const auto h0 = std::chrono::steady_clock::now();
    parallel_for_each(0, h + 2, [&](int64_t y) {
      std::memcpy(hj + y * row, jv.row_bytes(core.y - 1 + y), row);
      if (y < h) std::memcpy(hi + y * mrow, iv.row_bytes(core.y + y), mrow);
    });
    const auto h1 = std::chrono::steady_clock::now();
    cudaStream_t s = stream_.get();
    cuda::Event t0, t1, t2, t3;
    t0.record(s);
    TW_CUDA_CHECK(cudaMemcpyAsync(staging_.get(), hj, jbytes, cudaMemcpyHostToDevice, s));
    widen<T><<<dim3((w + 2 + 255) / 256, h + 2), 256, 0, s>>>(reinterpret_cast<const T*>(staging_.get()), row, j_.get(),
                                                              pitch, w + 2, h + 2);
    TW_CUDA_CHECK_LAUNCH();
    TW_CUDA_CHECK(cudaMemcpyAsync(staging_.get(), hi, ibytes, cudaMemcpyHostToDevice, s));
    widen<T><<<dim3((w + 255) / 256, h), 256, 0, s>>>(reinterpret_cast<const T*>(staging_.get()), mrow,
                                                      i_.get() + pitch + 1, pitch, w, h);
    TW_CUDA_CHECK_LAUNCH();
    t1.record(s);  // the queue's reset counts as kernel time
    const Queue q = mp_queue::reset_queue(ws_, n, blocks, true, s);
    Geometry geo{j_.get(), i_.get(), pitch, w, h, nbx, nby};
    iwpp_mp<kDilate, kEight><<<blocks, 32, 0, s>>>(geo, q);
    TW_CUDA_CHECK_LAUNCH();
    t2.record(s);
    const size_t orow = static_cast<size_t>(w) * sizeof(T);
    narrow<T>
        <<<dim3((w + 255) / 256, h), 256, 0, s>>>(j_.get(), pitch, reinterpret_cast<T*>(staging_.get()), orow, w, h);
    TW_CUDA_CHECK_LAUNCH();
    // Compare on the host: the tile changed if any core value differs.
    TW_CUDA_CHECK(cudaMemcpyAsync(ho, staging_.get(), orow * h, cudaMemcpyDeviceToHost, s));
    count_uploaded(jbytes + ibytes);
    count_downloaded(orow * h);
    unsigned long long visits = 0;
    TW_CUDA_CHECK(cudaMemcpyAsync(&visits, q.visits, sizeof visits, cudaMemcpyDeviceToHost, s));
    t3.record(s);
    stream_.sync();
    const auto h2 = std::chrono::steady_clock::now();
    std::atomic<bool> changed{false};
    parallel_for_each(0, h, [&](int64_t y) {
      uint8_t* dst = jv.ptr_bytes(core.x, core.y + y);
      const uint8_t* src = ho + orow * y;
      if (std::memcmp(dst, src, orow) != 0) changed.store(true, std::memory_order_relaxed), std::memcpy(dst, src, orow);
    });
    if (stats_) {
      stats_->megapixel_visits += static_cast<int64_t>(visits);
      stats_->kernel_seconds += t2.ms_since(t1) * 1e-3;
      stats_->transfer_seconds += (t1.ms_since(t0) + t3.ms_since(t2)) * 1e-3;
      stats_->host_seconds +=
          std::chrono::duration<double>((h1 - h0) + (std::chrono::steady_clock::now() - h2)).count();
    }
    return changed.load();
  }

 private:
  int device_;
  GpuWavefrontStats* stats_;
  mp_queue::Workspace& ws_;
};

template <class T>
std::unique_ptr<TilePropagator> make_typed(int device, const ReconstructParams& p, GpuWavefrontStats* st) {
  const bool dil = p.method == ReconstructMethod::kDilation, eight = p.connectivity == 8;
  if (dil && eight) return std::make_unique<CudaRule<T, true, true>>(device, st);
  if (dil) return std::make_unique<CudaRule<T, true, false>>(device, st);
  if (eight) return std::make_unique<CudaRule<T, false, true>>(device, st);
  return std::make_unique<CudaRule<T, false, false>>(device, st);
}

// The words of a whole image's reconstruction from its images: the marker
// (given, or made from the mask) and the mask, widened; a given marker out of
// order is clipped, or flagged.
struct GreyLoad {
  const uint8_t* mask;
  const uint8_t* marker;
  size_t pitch;
  int64_t w, h;
  int64_t minus;
  bool border, clip, dilate;
  uint32_t maxv;
};

template <class T>
__global__ void load_grey_whole(GreyLoad a, uint32_t* j, uint32_t* i, int64_t wp, int* out_of_order) {
  const int64_t x = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (x >= a.w) return;
  for (int64_t y = blockIdx.y; y < a.h; y += gridDim.y) {
    const uint32_t m = reinterpret_cast<const T*>(a.mask + y * a.pitch)[x];
    uint32_t k;
    if (a.marker)
      k = reinterpret_cast<const T*>(a.marker + y * a.pitch)[x];
    else if (a.border)
      k = (x == 0 || y == 0 || x == a.w - 1 || y == a.h - 1) ? m : a.maxv;
    else
      k = m > a.minus ? m - static_cast<uint32_t>(a.minus) : 0u;
    if (a.dilate ? k > m : k < m) {
      if (a.clip)
        k = m;
      else
        *out_of_order = 1;
    }
    j[(y + 1) * wp + x + 1] = k;
    i[(y + 1) * wp + x + 1] = m;
  }
}

// The result in the image's type; with `dome_of` (the mask), the mask minus
// it, saturating at 0 (h-dome).
template <class T>
__global__ void narrow_whole(const uint32_t* j, int64_t wp, const uint8_t* dome_of, uint8_t* out, size_t pitch,
                             int64_t w, int64_t h) {
  const int64_t x = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (x >= w) return;
  for (int64_t y = blockIdx.y; y < h; y += gridDim.y) {
    const uint32_t r = j[(y + 1) * wp + x + 1];
    if (dome_of) {
      const uint32_t m = reinterpret_cast<const T*>(dome_of + y * pitch)[x];
      reinterpret_cast<T*>(out + y * pitch)[x] = static_cast<T>(m > r ? m - r : 0);
    } else {
      reinterpret_cast<T*>(out + y * pitch)[x] = static_cast<T>(r);
    }
  }
}

int64_t whole_pitch(int64_t w) {
  return (w + 2 + 31) / 32 * 32;
}

template <bool kDilate, bool kEight>
void run_whole(const Geometry& g, mp_queue::Workspace& ws, int device, cudaStream_t s, int n) {
  int per_sm = 0, sms = 0;
  TW_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, iwpp_mp<kDilate, kEight>, 32, 0));
  TW_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  const int blocks = std::max(1, std::min(per_sm * sms, n));
  const Queue q = mp_queue::reset_queue(ws, n, blocks, true, s);
  iwpp_mp<kDilate, kEight><<<blocks, 32, 0, s>>>(g, q);
  TW_CUDA_CHECK_LAUNCH();
}

}  // namespace

namespace mp_queue {

Workspace& workspace(int device) {
  static std::mutex mu;
  static auto* all = new std::map<int, std::unique_ptr<Workspace>>();  // never freed: see engine/cuda/lanes.cpp
  std::lock_guard<std::mutex> l(mu);
  auto& w = (*all)[device];
  if (!w) w = std::make_unique<Workspace>();
  return *w;
}

Queue reset_queue(Workspace& ws, int n, int consumers, bool all_queued, cudaStream_t s) {
  const size_t capacity = static_cast<size_t>(n) + consumers + 1;
  if (ws.slots.size() < capacity) ws.slots = cuda::DeviceBuffer<unsigned long long>(capacity);
  if (ws.queued.size() < static_cast<size_t>(n)) ws.queued = cuda::DeviceBuffer<uint32_t>(static_cast<size_t>(n));
  if (!ws.counters.get()) ws.counters = cuda::DeviceBuffer<unsigned long long>(4 * kCounterSpacing);
  // Slot state 0 is "empty for lap 0"; with all_queued, tickets 0..n-1 hold
  // lap 0's items.
  TW_CUDA_CHECK(cudaMemsetAsync(ws.slots.get(), 0, capacity * sizeof(unsigned long long), s));
  TW_CUDA_CHECK(cudaMemsetAsync(ws.queued.get(), 0, n * sizeof(uint32_t), s));
  if (all_queued) {
    fill_queue<<<(n + 255) / 256, 256, 0, s>>>(ws.slots.get(), ws.queued.get(), n);
    TW_CUDA_CHECK_LAUNCH();
  }
  unsigned long long* c = ws.counters.get();
  const Queue q{
      ws.slots.get(),          ws.queued.get(), c, c + kCounterSpacing, reinterpret_cast<int*>(c + 2 * kCounterSpacing),
      c + 3 * kCounterSpacing, capacity};
  // A kernel, not a copy from the host's stack (pageable: that copy would
  // wait for the stream).
  reset_counters<<<1, 1, 0, s>>>(q, all_queued ? n : 0);
  TW_CUDA_CHECK_LAUNCH();
  return q;
}

}  // namespace mp_queue

size_t grey_whole_image_device_bytes(int64_t width, int64_t height) {
  return 2 * static_cast<size_t>(whole_pitch(width)) * static_cast<size_t>(height + 2) * sizeof(uint32_t);
}

bool reconstruct_grey_on_device(int device, const GreyWholeImage& a, GpuWavefrontStats* stats) {
  a.params.validate();
  const bool u16 = a.fmt == kGray16;
  if (!u16 && a.fmt != kGray8) throw InternalError("reconstruct_grey_on_device: 8- or 16-bit gray only");
  if (a.width <= 0 || a.height <= 0 || a.width > (int64_t{1} << 30) || a.height > (int64_t{1} << 30))
    throw InternalError("reconstruct_grey_on_device: bad size");
  const bool dil = a.params.method == ReconstructMethod::kDilation, eight = a.params.connectivity == 8;
  const int64_t wp = whole_pitch(a.width);
  const size_t words = static_cast<size_t>(wp) * static_cast<size_t>(a.height + 2);
  mp_queue::Workspace& ws = mp_queue::workspace(device);
  std::lock_guard<std::mutex> lock(ws.mu);  // the queue is the device's, shared with the tile rules
  cuda::DeviceScope scope(device);
  cuda::Stream stream;
  const cudaStream_t s = stream.get();
  cuda::DeviceBuffer<uint32_t> j(words), i(words), flag(1);
  // The ring round the core is neutral: no neighbour beyond the image.
  TW_CUDA_CHECK(cudaMemsetAsync(j.get(), dil ? 0 : 0xff, words * sizeof(uint32_t), s));
  TW_CUDA_CHECK(cudaMemsetAsync(flag.get(), 0, sizeof(uint32_t), s));
  GreyLoad ld{a.mask,       a.marker,      a.pitch, a.width, a.height,
              a.mask_minus, a.mask_border, a.clip,  dil,     u16 ? 65535u : 255u};
  const dim3 grid(static_cast<unsigned>((a.width + 255) / 256),
                  static_cast<unsigned>(std::min<int64_t>(a.height, 4096)));
  int* bad = reinterpret_cast<int*>(flag.get());
  if (u16)
    load_grey_whole<uint16_t><<<grid, 256, 0, s>>>(ld, j.get(), i.get(), wp, bad);
  else
    load_grey_whole<uint8_t><<<grid, 256, 0, s>>>(ld, j.get(), i.get(), wp, bad);
  TW_CUDA_CHECK_LAUNCH();
  int out_of_order = 0;
  TW_CUDA_CHECK(cudaMemcpyAsync(&out_of_order, bad, sizeof out_of_order, cudaMemcpyDeviceToHost, s));
  stream.sync();
  if (out_of_order) return false;
  const int w = static_cast<int>(a.width), h = static_cast<int>(a.height);
  const int nbx = (w + kMp - 1) / kMp, nby = (h + kMp - 1) / kMp;
  const Geometry g{j.get(), i.get(), wp, w, h, nbx, nby};
  cuda::Event t1, t2;
  t1.record(s);
  const int n = nbx * nby;
  if (dil && eight)
    run_whole<true, true>(g, ws, device, s, n);
  else if (dil)
    run_whole<true, false>(g, ws, device, s, n);
  else if (eight)
    run_whole<false, true>(g, ws, device, s, n);
  else
    run_whole<false, false>(g, ws, device, s, n);
  t2.record(s);
  const uint8_t* dome_of = a.dome ? a.mask : nullptr;
  if (u16)
    narrow_whole<uint16_t><<<grid, 256, 0, s>>>(j.get(), wp, dome_of, a.out, a.pitch, a.width, a.height);
  else
    narrow_whole<uint8_t><<<grid, 256, 0, s>>>(j.get(), wp, dome_of, a.out, a.pitch, a.width, a.height);
  TW_CUDA_CHECK_LAUNCH();
  unsigned long long visits = 0;
  TW_CUDA_CHECK(
      cudaMemcpyAsync(&visits, ws.counters.get() + 3 * kCounterSpacing, sizeof visits, cudaMemcpyDeviceToHost, s));
  stream.sync();
  if (stats) {
    stats->megapixel_visits += static_cast<int64_t>(visits);
    stats->kernel_seconds += t2.ms_since(t1) * 1e-3;
  }
  return true;
}

std::unique_ptr<TilePropagator> make_cuda_reconstruct_rule(int device, PixelFormat fmt, const ReconstructParams& p,
                                                           GpuWavefrontStats* stats) {
  p.validate();
  if (fmt.channels != 1)
    throw InputError("reconstruction works on single-channel images; this one has " + std::to_string(fmt.channels) +
                     " channels");
  if (fmt.type == SampleType::kU8) return make_typed<uint8_t>(device, p, stats);
  if (fmt.type == SampleType::kU16) return make_typed<uint16_t>(device, p, stats);
  throw InputError(std::string("reconstruction works on 8- and 16-bit images, not ") + sample_name(fmt.type));
}

}  // namespace tw
