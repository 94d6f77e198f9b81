// IWPP-MP on the GPU (seed 001, alg. 5), one tile at a time.
//
// The working values live on the device as 32-bit words (the write-back is
// an atomic max, or min for erosion: the seed's atomicCAS loop reduced to one
// instruction). The tile's halo ring is part of the image but frozen.
//
// A persistent kernel: each resident block of one warp takes a 32x32
// megapixel from a global ring queue, loads it with its one-pixel apron into
// shared memory, sweeps lines in the four directions until nothing changes
// (exact for 8-connectivity: each sweep reads the three neighbours behind the
// line), writes back, and enqueues each neighbouring megapixel whose apron it
// changed. A megapixel is queued at most once at a time (a flag). `pending`
// counts queued-or-in-work megapixels; successors are counted before their
// parent is released, so it reaches zero only when all work is done — the
// active-block counter that keeps blocks from quitting early.
#include <cuda_runtime.h>

#include <mutex>
#include <vector>

#include "engine/cuda/cuda_check.hpp"
#include "engine/cuda/resources.hpp"
#include "kernels/reconstruct/reconstruct_cuda.hpp"

namespace tw {
namespace {

constexpr int kMp = 32;
constexpr uint32_t kEmpty = 0xffffffffu;

struct Queue {
  uint32_t* items;     // ring of megapixel indices, kEmpty when free
  uint32_t* queued;    // per megapixel: 1 while in the ring
  unsigned long long* head;
  unsigned long long* tail;
  int* pending;
  unsigned long long* visits;
  uint32_t capacity;
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

__device__ void enqueue(const Queue& q, uint32_t mp) {
  if (atomicExch(&q.queued[mp], 1u) != 0) return;  // already queued
  atomicAdd(q.pending, 1);
  const unsigned long long slot = atomicAdd(q.tail, 1ull) % q.capacity;
  // The slot's previous item may still be on its way out.
  while (atomicCAS(&q.items[slot], kEmpty, mp) != kEmpty) __nanosleep(32);
}

template <bool kDilate, bool kEight>
__global__ void __launch_bounds__(32) iwpp_mp(Geometry g, Queue q) {
  __shared__ uint32_t sj[kMp + 2][kMp + 3];  // padded: column sweeps stay conflict-free
  __shared__ uint32_t si[kMp][kMp + 1];
  __shared__ uint32_t old[kMp][kMp + 1];
  __shared__ int s_item;
  const int lane = threadIdx.x;
  const uint32_t neutral = kDilate ? 0u : 0xffffffffu;
  for (;;) {
    // Take a megapixel, or leave once no work is pending anywhere.
    if (lane == 0) {
      s_item = -1;
      for (;;) {
        const unsigned long long h = atomicAdd(q.head, 0ull), t = atomicAdd(q.tail, 0ull);
        if (h < t) {
          if (atomicCAS(q.head, h, h + 1) == h) {
            const unsigned long long slot = h % q.capacity;
            uint32_t mp;
            while ((mp = atomicExch(&q.items[slot], kEmpty)) == kEmpty) __nanosleep(32);
            atomicExch(&q.queued[mp], 0u);  // from here on it may be queued again
            s_item = static_cast<int>(mp);
            break;
          }
        } else if (atomicAdd(q.pending, 0) == 0) {
          break;
        } else {
          __nanosleep(100);
        }
      }
    }
    __syncwarp();
    const int item = s_item;
    if (item < 0) return;
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
    // Sweeps until stable. Lane = the line; each step reads the pixels behind it.
    for (bool changed = true; changed;) {
      bool c = false;
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
          if (v != cur) sj[y + 1][x + 1] = v, c = true;
          __syncwarp();
        }
      }
      changed = __any_sync(0xffffffffu, c);
    }
    // Write back what grew; note which edges changed for the neighbours.
    bool e_top = false, e_bottom = false, e_left = false, e_right = false;
    bool c_tl = false, c_tr = false, c_bl = false, c_br = false;
    for (int k = lane; k < kMp * kMp; k += 32) {
      const int ly = k / kMp, lx = k % kMp;
      const int cx = x0 + lx, cy = y0 + ly;
      const uint32_t v = sj[ly + 1][lx + 1];
      if (v == old[ly][lx] || cx >= g.w || cy >= g.h) continue;
      uint32_t* p = &g.j[(cy + 1) * g.pitch + cx + 1];
      const uint32_t prev = kDilate ? atomicMax(p, v) : atomicMin(p, v);
      if (kDilate ? prev >= v : prev <= v) continue;  // someone got there first
      const bool last_x = lx == kMp - 1 || cx == g.w - 1, last_y = ly == kMp - 1 || cy == g.h - 1;
      e_top |= ly == 0, e_bottom |= last_y, e_left |= lx == 0, e_right |= last_x;
      c_tl |= ly == 0 && lx == 0, c_tr |= ly == 0 && last_x, c_bl |= last_y && lx == 0, c_br |= last_y && last_x;
    }
    e_top = __any_sync(0xffffffffu, e_top), e_bottom = __any_sync(0xffffffffu, e_bottom);
    e_left = __any_sync(0xffffffffu, e_left), e_right = __any_sync(0xffffffffu, e_right);
    c_tl = __any_sync(0xffffffffu, c_tl), c_tr = __any_sync(0xffffffffu, c_tr);
    c_bl = __any_sync(0xffffffffu, c_bl), c_br = __any_sync(0xffffffffu, c_br);
    if (lane == 0) {
      __threadfence();  // our values are visible before anyone dequeues a neighbour
      const bool up = by > 0, down = by + 1 < g.nby, left = bx > 0, right = bx + 1 < g.nbx;
      if (up && e_top) enqueue(q, item - g.nbx);
      if (down && e_bottom) enqueue(q, item + g.nbx);
      if (left && e_left) enqueue(q, item - 1);
      if (right && e_right) enqueue(q, item + 1);
      if (kEight) {
        if (up && left && c_tl) enqueue(q, item - g.nbx - 1);
        if (up && right && c_tr) enqueue(q, item - g.nbx + 1);
        if (down && left && c_bl) enqueue(q, item + g.nbx - 1);
        if (down && right && c_br) enqueue(q, item + g.nbx + 1);
      }
      atomicAdd(q.visits, 1ull);
      atomicSub(q.pending, 1);  // after the successors were counted
    }
    __syncwarp();
  }
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

template <class T, bool kDilate, bool kEight>
class CudaRule : public TilePropagator {
 public:
  CudaRule(int device, GpuWavefrontStats* stats) : device_(device), stats_(stats) {}

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
    std::lock_guard<std::mutex> lock(mu_);
    cuda::DeviceScope scope(device_);
    const int w = static_cast<int>(core.w), h = static_cast<int>(core.h);
    const int64_t pitch = (w + 2 + 31) / 32 * 32;
    const size_t words = static_cast<size_t>(pitch) * (h + 2);
    if (j_.size() < words) {
      j_ = cuda::DeviceBuffer<uint32_t>(words);
      i_ = cuda::DeviceBuffer<uint32_t>(words);
    }
    const int nbx = (w + kMp - 1) / kMp, nby = (h + kMp - 1) / kMp, n = nbx * nby;
    if (items_.size() < static_cast<size_t>(n)) {
      items_ = cuda::DeviceBuffer<uint32_t>(static_cast<size_t>(n));
      queued_ = cuda::DeviceBuffer<uint32_t>(static_cast<size_t>(n));
    }
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
    // Every megapixel starts queued.
    std::vector<uint32_t> all(static_cast<size_t>(n));
    for (int k = 0; k < n; ++k) all[static_cast<size_t>(k)] = static_cast<uint32_t>(k);
    TW_CUDA_CHECK(cudaMemcpyAsync(items_.get(), all.data(), n * sizeof(uint32_t), cudaMemcpyHostToDevice, s));
    std::fill(all.begin(), all.end(), 1u);
    TW_CUDA_CHECK(cudaMemcpyAsync(queued_.get(), all.data(), n * sizeof(uint32_t), cudaMemcpyHostToDevice, s));
    const unsigned long long init[4] = {0, static_cast<unsigned long long>(n), static_cast<unsigned long long>(n), 0};
    TW_CUDA_CHECK(cudaMemcpyAsync(counters_.get(), init, sizeof init, cudaMemcpyHostToDevice, s));
    t1.record(s);
    Geometry geo{j_.get(), i_.get(), pitch, w, h, nbx, nby};
    Queue q{items_.get(), queued_.get(), counters_.get(), counters_.get() + 1,
            reinterpret_cast<int*>(counters_.get() + 2), counters_.get() + 3, static_cast<uint32_t>(n)};
    int per_sm = 0, sms = 0;
    TW_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, iwpp_mp<kDilate, kEight>, 32, 0));
    TW_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device_));
    // Persistent blocks must all be resident at once (they wait for each other).
    const int blocks = std::max(1, std::min(per_sm * sms, n));
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
  mutable std::mutex mu_;
  mutable cuda::Stream stream_;
  mutable cuda::DeviceBuffer<uint32_t> j_, i_, items_, queued_;
  mutable cuda::DeviceBuffer<unsigned long long> counters_;
  mutable cuda::DeviceBuffer<uint8_t> staging_;
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
