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

#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "engine/cuda/cuda_check.hpp"
#include "engine/cuda/resources.hpp"
#include "kernels/reconstruct/reconstruct_cuda.hpp"

namespace tw {
namespace {

constexpr int kMp = 32;

// A ticket queue: producers and consumers draw indices with fetch-add (no
// retries, so thousands of idle blocks do not serialise on one word) and meet
// at slot index % capacity. A slot word is (state << 32 | item), state 2L =
// empty for lap L, 2L + 1 = holding lap L's item. The capacity exceeds the
// megapixels plus the blocks, so a producer never waits on a slot whose
// consumer has not drawn its ticket.
struct Queue {
  unsigned long long* slots;
  uint32_t* queued;    // per megapixel: 1 while in the queue
  unsigned long long* head;
  unsigned long long* tail;
  int* pending;
  unsigned long long* visits;
  unsigned long long capacity;
};

struct Geometry {
  uint32_t* j;        // (w + 2) x (h + 2) words: the core plus the frozen ring
  const uint32_t* i;  // mask, same layout
  int64_t pitch;      // in words
  int w, h;           // the core; core pixel (x, y) is at (x + 1, y + 1)
  int nbx, nby;
};

template <bool kDilate>
__device__ __forceinline__ uint32_t ahead(uint32_t a, uint32_t b) { return kDilate ? max(a, b) : min(a, b); }
template <bool kDilate>
__device__ __forceinline__ uint32_t limit(uint32_t a, uint32_t b) { return kDilate ? min(a, b) : max(a, b); }

template <class T>
__device__ __forceinline__ T load_relaxed(const T* p) { return *const_cast<const volatile T*>(p); }

template <class T>
__device__ __forceinline__ void store_relaxed(T* p, T v) { *const_cast<volatile T*>(p) = v; }

__device__ __forceinline__ uint32_t slot_state(unsigned long long word) { return static_cast<uint32_t>(word >> 32); }

// Warp-wide: each lane with `want` queues megapixel `mp` unless it is queued
// already. The new items are counted in `pending` before they are published,
// so the count cannot touch zero while work is about to appear. One leader
// reserves all the tickets: the chain of dependent atomics is what a
// propagation front waits on at every megapixel it crosses.
__device__ void enqueue_warp(const Queue& q, bool want, uint32_t mp, int lane) {
  const bool fresh = want && atomicExch(&q.queued[mp], 1u) == 0;
  const unsigned mask = __ballot_sync(0xffffffffu, fresh);
  if (!mask) return;
  const int leader = __ffs(mask) - 1, count = __popc(mask);
  unsigned long long base = 0;
  if (lane == leader) {
    atomicAdd(q.pending, count);
    __threadfence();
    base = atomicAdd(q.tail, static_cast<unsigned long long>(count));
  }
  base = __shfl_sync(0xffffffffu, base, leader);
  if (fresh) {
    const unsigned long long t = base + __popc(mask & ((1u << lane) - 1u));
    unsigned long long* slot = &q.slots[t % q.capacity];
    const uint32_t lap = static_cast<uint32_t>(t / q.capacity);
    // The previous lap's consumer may still be taking its item.
    while (slot_state(load_relaxed(slot)) != 2 * lap) __nanosleep(20);
    store_relaxed(slot, (static_cast<unsigned long long>(2 * lap + 1) << 32) | mp);
  }
}

// Lane 0 takes the next megapixel; -1 once no work is pending anywhere.
__device__ int dequeue(const Queue& q) {
  const unsigned long long h = atomicAdd(q.head, 1ull);
  unsigned long long* slot = &q.slots[h % q.capacity];
  const uint32_t lap = static_cast<uint32_t>(h / q.capacity);
  for (;;) {
    const unsigned long long word = load_relaxed(slot);
    if (slot_state(word) == 2 * lap + 1) {
      store_relaxed(slot, static_cast<unsigned long long>(2 * lap + 2) << 32);
      const uint32_t mp = static_cast<uint32_t>(word);
      // From here on it may be queued again; whoever queues it wrote its
      // values before, so our loads (after this fence) see them.
      atomicExch(&q.queued[mp], 0u);
      __threadfence();
      return static_cast<int>(mp);
    }
    if (load_relaxed(q.pending) == 0) return -1;
    __nanosleep(20);
  }
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
          if (dir == 0) x = s, y = lane, bx1 = x - 1, by1 = y, bx2 = x - 1, by2 = y - 1, bx3 = x - 1, by3 = y + 1;
          else if (dir == 1) x = kMp - 1 - s, y = lane, bx1 = x + 1, by1 = y, bx2 = x + 1, by2 = y - 1, bx3 = x + 1, by3 = y + 1;
          else if (dir == 2) x = lane, y = s, bx1 = x, by1 = y - 1, bx2 = x - 1, by2 = y - 1, bx3 = x + 1, by3 = y - 1;
          else x = lane, y = kMp - 1 - s, bx1 = x, by1 = y + 1, bx2 = x - 1, by2 = y + 1, bx3 = x + 1, by3 = y + 1;
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
        if (kDilate) atomicMax(p, v);
        else atomicMin(p, v);
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
        case 0: want = up && e_top, nb = item - g.nbx; break;
        case 1: want = down && e_bottom, nb = item + g.nbx; break;
        case 2: want = left && e_left, nb = item - 1; break;
        case 3: want = right && e_right, nb = item + 1; break;
        case 4: want = kEight && up && left && c_tl, nb = item - g.nbx - 1; break;
        case 5: want = kEight && up && right && c_tr, nb = item - g.nbx + 1; break;
        case 6: want = kEight && down && left && c_bl, nb = item + g.nbx - 1; break;
        case 7: want = kEight && down && right && c_br, nb = item + g.nbx + 1; break;
        default: break;
      }
      enqueue_warp(q, want, static_cast<uint32_t>(nb), lane);
      __syncwarp();
    }
    if (lane == 0) atomicSub(q.pending, 1);  // after the successors were counted
    __syncwarp();
  }
  if (lane == 0) atomicAdd(q.visits, visits);
}

template <class T>
__global__ void widen(const T* in, size_t in_pitch, uint32_t* out, int64_t pitch, int w, int h) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y;
  if (x < w) out[y * pitch + x] = reinterpret_cast<const T*>(reinterpret_cast<const uint8_t*>(in) + y * in_pitch)[x];
}

template <class T>
__global__ void narrow(const uint32_t* in, int64_t pitch, T* out, size_t out_pitch, int w, int h) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y;
  if (x < w) reinterpret_cast<T*>(reinterpret_cast<uint8_t*>(out) + y * out_pitch)[x] = static_cast<T>(in[(y + 1) * pitch + x + 1]);
}

// The device buffers of the reconstruction, one set per device for the
// whole process: a batch of images (or of wavefront tiles) reuses them
// instead of allocating ~10 bytes per pixel for every call. Calls on one
// device serialise on its mutex (one tile fills the GPU).
struct Workspace {
  std::mutex mu;
  std::unique_ptr<cuda::Stream> stream;
  cuda::DeviceBuffer<uint32_t> j, i, queued;
  cuda::DeviceBuffer<unsigned long long> slots, counters;
  cuda::DeviceBuffer<uint8_t> staging;
};

Workspace& workspace(int device) {
  static std::mutex mu;
  static auto* all = new std::map<int, std::unique_ptr<Workspace>>();  // never freed: see engine/cuda/lanes.cpp
  std::lock_guard<std::mutex> l(mu);
  auto& w = (*all)[device];
  if (!w) w = std::make_unique<Workspace>();
  return *w;
}

template <class T, bool kDilate, bool kEight>
class CudaRule : public TilePropagator {
 public:
  CudaRule(int device, GpuWavefrontStats* stats) : device_(device), stats_(stats), ws_(workspace(device)) {}

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
    auto& queued_ = ws_.queued;
    auto& slots_ = ws_.slots;
    auto& counters_ = ws_.counters;
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
    const size_t capacity = static_cast<size_t>(n) + blocks + 1;
    if (slots_.size() < capacity) slots_ = cuda::DeviceBuffer<unsigned long long>(capacity);
    if (queued_.size() < static_cast<size_t>(n)) queued_ = cuda::DeviceBuffer<uint32_t>(static_cast<size_t>(n));
    if (!counters_.get()) counters_ = cuda::DeviceBuffer<unsigned long long>(4);
    // Upload the tile with its halo, and the mask, as they are; widen on the device.
    const size_t row = static_cast<size_t>(w + 2) * sizeof(T);
    if (staging_.size() < row * (h + 2)) staging_ = cuda::DeviceBuffer<uint8_t>(row * (h + 2));
    cudaStream_t s = stream_.get();
    cuda::Event t0, t1, t2, t3;
    t0.record(s);
    TW_CUDA_CHECK(cudaMemcpy2DAsync(staging_.get(), row, jv.row_bytes(core.y - 1) , jv.stride, row, h + 2,
                                    cudaMemcpyHostToDevice, s));
    widen<T><<<dim3((w + 2 + 255) / 256, h + 2), 256, 0, s>>>(reinterpret_cast<const T*>(staging_.get()), row,
                                                               j_.get(), pitch, w + 2, h + 2);
    TW_CUDA_CHECK_LAUNCH();
    const size_t mrow = static_cast<size_t>(w) * sizeof(T);
    TW_CUDA_CHECK(cudaMemcpy2DAsync(staging_.get(), mrow, iv.row_bytes(core.y), iv.stride, mrow, h,
                                    cudaMemcpyHostToDevice, s));
    widen<T><<<dim3((w + 255) / 256, h), 256, 0, s>>>(reinterpret_cast<const T*>(staging_.get()), mrow,
                                                       i_.get() + pitch + 1, pitch, w, h);
    TW_CUDA_CHECK_LAUNCH();
    // Every megapixel starts queued: tickets 0..n-1 hold lap 0's items.
    std::vector<unsigned long long> slots(capacity, 0ull);
    for (int k = 0; k < n; ++k) slots[static_cast<size_t>(k)] = (1ull << 32) | static_cast<uint32_t>(k);
    TW_CUDA_CHECK(cudaMemcpyAsync(slots_.get(), slots.data(), capacity * sizeof slots[0], cudaMemcpyHostToDevice, s));
    const std::vector<uint32_t> all(static_cast<size_t>(n), 1u);
    TW_CUDA_CHECK(cudaMemcpyAsync(queued_.get(), all.data(), n * sizeof(uint32_t), cudaMemcpyHostToDevice, s));
    const unsigned long long init[4] = {0, static_cast<unsigned long long>(n), static_cast<unsigned long long>(n), 0};
    TW_CUDA_CHECK(cudaMemcpyAsync(counters_.get(), init, sizeof init, cudaMemcpyHostToDevice, s));
    t1.record(s);
    Geometry geo{j_.get(), i_.get(), pitch, w, h, nbx, nby};
    Queue q{slots_.get(), queued_.get(), counters_.get(), counters_.get() + 1,
            reinterpret_cast<int*>(counters_.get() + 2), counters_.get() + 3, capacity};
    iwpp_mp<kDilate, kEight><<<blocks, 32, 0, s>>>(geo, q);
    TW_CUDA_CHECK_LAUNCH();
    t2.record(s);
    const size_t orow = static_cast<size_t>(w) * sizeof(T);
    narrow<T><<<dim3((w + 255) / 256, h), 256, 0, s>>>(j_.get(), pitch, reinterpret_cast<T*>(staging_.get()), orow, w, h);
    TW_CUDA_CHECK_LAUNCH();
    // Compare on the host: the tile changed if any core value differs.
    std::vector<uint8_t> result(orow * h);
    TW_CUDA_CHECK(cudaMemcpy2DAsync(result.data(), orow, staging_.get(), orow, orow, h, cudaMemcpyDeviceToHost, s));
    unsigned long long counts[4];
    TW_CUDA_CHECK(cudaMemcpyAsync(counts, counters_.get(), sizeof counts, cudaMemcpyDeviceToHost, s));
    t3.record(s);
    stream_.sync();
    bool changed = false;
    for (int y = 0; y < h; ++y) {
      uint8_t* dst = jv.ptr_bytes(core.x, core.y + y);
      const uint8_t* src = result.data() + orow * y;
      if (std::memcmp(dst, src, orow) != 0) changed = true, std::memcpy(dst, src, orow);
    }
    if (stats_) {
      stats_->megapixel_visits += static_cast<int64_t>(counts[3]);
      stats_->kernel_seconds += t2.ms_since(t1) * 1e-3;
      stats_->transfer_seconds += (t1.ms_since(t0) + t3.ms_since(t2)) * 1e-3;
    }
    return changed;
  }

 private:
  int device_;
  GpuWavefrontStats* stats_;
  Workspace& ws_;
};

template <class T>
std::unique_ptr<TilePropagator> make_typed(int device, const ReconstructParams& p, GpuWavefrontStats* st) {
  const bool dil = p.method == ReconstructMethod::kDilation, eight = p.connectivity == 8;
  if (dil && eight) return std::make_unique<CudaRule<T, true, true>>(device, st);
  if (dil) return std::make_unique<CudaRule<T, true, false>>(device, st);
  if (eight) return std::make_unique<CudaRule<T, false, true>>(device, st);
  return std::make_unique<CudaRule<T, false, false>>(device, st);
}

}  // namespace

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
