// Binary reconstruction by dilation on the GPU: IWPP-MP (seed 001, alg. 5)
// with a megapixel held as 32 words of 32 bits, one row per lane of a warp.
//
// Binary images (Canny's hysteresis, filling holes of masks) need none of
// the general kernel's shared memory or line sweeps: a step of the
// propagation is a few shifts and ORs on a lane's row and its neighbours'
// rows (shuffles), and a whole horizontal run of allowed pixels fills in one
// step with a carry (run_fill). A visit loads 6 words per lane instead of
// 4 KiB, so the queue, not the arithmetic, sets the pace.
//
// Reconstruction by erosion of a binary image (fill-holes: the background
// floods in from the border) is the dilation of the complements: the planes
// hold the zero bytes instead, and what turns on is written back as 0.
//
// Two launches: every megapixel once (a plain grid, no queue traffic), then
// the persistent queue kernel for the megapixels whose border the first pass
// (or a later visit) changed next to a pixel of theirs that could still turn
// on. Pixels only ever turn on, so the write-back is an atomic OR and two
// visits of one megapixel at once are harmless.
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <memory>

#include "engine/byte_counters.hpp"
#include "engine/cuda/cuda_check.hpp"
#include "engine/cuda/resources.hpp"
#include "engine/trace.hpp"
#include "kernels/reconstruct/bit_planes.hpp"
#include "kernels/reconstruct/mp_queue.cuh"
#include "kernels/reconstruct/reconstruct_cuda.hpp"

namespace tw {
namespace {

using mp_queue::Queue;

// Bit planes of a tile and its frozen one-pixel ring (bit_planes.hpp): word
// k + 1 of a row holds x in [32k, 32k + 32) (bit = x % 32); word 0 ends with
// x = -1. Row y + 1 holds y; rows 0 and h + 1 are the ring.
struct Bits {
  uint32_t* on;             // the working values (J)
  const uint32_t* allowed;  // core pixels of the mask; 0 on the ring and beyond
  int pitch, rows;          // words per row (nbx + 2), h + 2
  int nbx, nby;
};

constexpr uint64_t kCore = 0x1FFFFFFFEull;  // bits 1..32 of a 34-bit row

// Row ry around core word k as 34 bits: bit 0 is the pixel left of the word,
// bits 1..32 the word, bit 33 the pixel right of it. L2 loads for the planes
// other blocks write (ld.cg), read-only cache for the mask.
template <bool kWritten>
__device__ __forceinline__ uint64_t row34(const uint32_t* plane, const Bits& g, int ry, int k) {
  if (ry < 0 || ry >= g.rows) return 0;
  const uint32_t* p = plane + static_cast<int64_t>(ry) * g.pitch + k;
  const uint32_t l = kWritten ? __ldcg(p - 1) : __ldg(p - 1);
  const uint32_t c = kWritten ? __ldcg(p) : __ldg(p);
  const uint32_t r = kWritten ? __ldcg(p + 1) : __ldg(p + 1);
  return (l >> 31) | (static_cast<uint64_t>(c) << 1) | (static_cast<uint64_t>(r & 1u) << 33);
}

// Every allowed pixel in a run of allowed pixels (along the row) that holds
// an on pixel turns on: adding the seeds to the run carries through it
// upwards; the same on the reversed row carries downwards.
__device__ __forceinline__ uint64_t run_fill(uint64_t on, uint64_t allowed) {
  const uint64_t s = on & allowed;
  const uint64_t up = ((allowed + s) ^ allowed) & allowed;
  const uint64_t ra = __brevll(allowed), rs = __brevll(s);
  const uint64_t down = __brevll(((ra + rs) ^ ra) & ra);
  return on | up | down;
}

template <bool kEight>
__device__ void visit(const Bits& g, const Queue& q, int item, int lane) {
  const unsigned all = 0xffffffffu;
  const int bx = item % g.nbx, by = item / g.nbx;
  const int k = bx + 1, ry = by * 32 + lane + 1;
  uint64_t e = row34<true>(g.on, g, ry, k);
  const uint64_t m34 = row34<false>(g.allowed, g, ry, k), m = m34 & kCore;
  // Lanes 0 and 31 also hold the rows above and below the megapixel.
  const int ryn = lane == 0 ? ry - 1 : lane == 31 ? ry + 1 : -1;
  const uint64_t en = row34<true>(g.on, g, ryn, k), mn = row34<false>(g.allowed, g, ryn, k);
  const uint64_t e0 = e;
  for (;;) {
    uint64_t up = __shfl_up_sync(all, e, 1), dn = __shfl_down_sync(all, e, 1);
    if (lane == 0) up = en;
    if (lane == 31) dn = en;
    uint64_t reach;
    if (kEight) {
      const uint64_t v = up | e | dn;
      reach = v | (v << 1) | (v >> 1);
    } else {
      reach = up | dn | e | (e << 1) | (e >> 1);
    }
    const uint64_t next = run_fill(e | (reach & m), m);
    const bool grew = next != e;
    e = next;
    if (!__any_sync(all, grew)) break;
  }
  const uint64_t c = e & ~e0;  // turned on by this visit (core bits only: m is)
  if (c) atomicOr(&g.on[static_cast<int64_t>(ry) * g.pitch + k], static_cast<uint32_t>(c >> 1));
  if (!__any_sync(all, c != 0)) return;
  __threadfence();  // our bits are visible before anyone dequeues a neighbour
  // A neighbour is queued when a pixel we turned on touches one of its
  // pixels that is allowed and was off when we loaded it (one that has grown
  // since is queued needlessly at worst). Outside the image the mask is 0.
  const uint64_t touch = kEight ? (c | (c << 1) | (c >> 1)) : c;
  const uint64_t across = (lane == 0 || lane == 31) ? touch & mn & ~en : 0;
  const uint64_t open = m34 & ~e;  // bits 0 and 33: the side neighbours' pixels
  uint32_t l = static_cast<uint32_t>(open & 1u), r = static_cast<uint32_t>((open >> 33) & 1u);
  if (kEight) {
    const uint32_t lu = __shfl_up_sync(all, l, 1), ld = __shfl_down_sync(all, l, 1);
    const uint32_t ru = __shfl_up_sync(all, r, 1), rd = __shfl_down_sync(all, r, 1);
    l |= (lane > 0 ? lu : 0u) | (lane < 31 ? ld : 0u);
    r |= (lane > 0 ? ru : 0u) | (lane < 31 ? rd : 0u);
  }
  const bool want_l = __any_sync(all, ((c >> 1) & 1u) && l), want_r = __any_sync(all, ((c >> 32) & 1u) && r);
  const uint64_t top = __shfl_sync(all, across, 0), bottom = __shfl_sync(all, across, 31);
  const bool has_up = by > 0, has_down = by + 1 < g.nby, has_left = bx > 0, has_right = bx + 1 < g.nbx;
  bool want = false;
  int nb = item;
  switch (lane) {
    case 0:
      want = has_up && (top & kCore), nb = item - g.nbx;
      break;
    case 1:
      want = has_down && (bottom & kCore), nb = item + g.nbx;
      break;
    case 2:
      want = has_left && want_l, nb = item - 1;
      break;
    case 3:
      want = has_right && want_r, nb = item + 1;
      break;
    case 4:
      want = kEight && has_up && has_left && (top & 1u), nb = item - g.nbx - 1;
      break;
    case 5:
      want = kEight && has_up && has_right && ((top >> 33) & 1u), nb = item - g.nbx + 1;
      break;
    case 6:
      want = kEight && has_down && has_left && (bottom & 1u), nb = item + g.nbx - 1;
      break;
    case 7:
      want = kEight && has_down && has_right && ((bottom >> 33) & 1u), nb = item + g.nbx + 1;
      break;
    default:
      break;
  }
  mp_queue::enqueue_warp(q, want, static_cast<uint32_t>(nb), lane);
}

// Pass 1: warp w visits megapixel w; what it changes at its borders is queued.
template <bool kEight>
__global__ void __launch_bounds__(256) visit_all(Bits g, Queue q, int n) {
  const int item = static_cast<int>((blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x) >> 5);
  if (item >= n) return;  // whole warps
  visit<kEight>(g, q, item, threadIdx.x & 31);
}

// Pass 2: persistent warps drain the queue.
template <bool kEight>
__global__ void __launch_bounds__(64) visit_queued(Bits g, Queue q) {
  const int lane = threadIdx.x & 31;
  unsigned long long visits = 0;
  for (;;) {
    int item = lane == 0 ? mp_queue::dequeue(q) : 0;
    item = __shfl_sync(0xffffffffu, item, 0);
    if (item < 0) break;
    ++visits;
    visit<kEight>(g, q, item, lane);
    __syncwarp();
    if (lane == 0) atomicSub(q.pending, 1);  // after the successors were counted
  }
  if (lane == 0) atomicAdd(q.visits, visits);
}

// Reconstructs bit planes of a w x h core (bit_planes.hpp's layout) on the
// device: `on` and `allowed` go up, the result comes back into `result`.
// The caller holds ws.mu. Host buffers may be pinned (full PCIe rate) or not.
// load(on, allowed, stream) fills the device planes (pitch x rows words);
// `copies`: it copies them up (timed as transfers), else it computes them
// on the device (timed as kernels).
template <bool kEight, class Load>
void solve_planes_with(mp_queue::Workspace& ws, int device, Load&& load, bool copies, uint32_t* result, int w, int h,
                       GpuWavefrontStats* stats) {
  cuda::DeviceScope scope(device);
  if (!ws.stream) ws.stream = std::make_unique<cuda::Stream>();
  const int nbx = (w + 31) / 32, nby = (h + 31) / 32, n = nbx * nby;
  Bits g{nullptr, nullptr, nbx + 2, h + 2, nbx, nby};
  const size_t words = static_cast<size_t>(g.pitch) * g.rows;
  if (ws.j.size() < words) {
    ws.j = cuda::DeviceBuffer<uint32_t>();  // the old ones go first: a whole image's planes are large
    ws.i = cuda::DeviceBuffer<uint32_t>();
    ws.j = cuda::DeviceBuffer<uint32_t>(words);
    ws.i = cuda::DeviceBuffer<uint32_t>(words);
  }
  g.on = ws.j.get(), g.allowed = ws.i.get();
  int per_sm = 0, sms = 0;
  TW_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, visit_queued<kEight>, 64, 0));
  TW_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  // A few warps per SM drain the queue fastest: more only poll it
  // (H100, 16384^2 Canny: 0.055 ms with 8 blocks of 2 warps per SM, 0.075 ms with 32).
  const int blocks = std::max(1, std::min(std::min(per_sm, 8) * sms, (n + 1) / 2));
  const cudaStream_t s = ws.stream->get();
  cuda::Event t0, t1, t2, t3;
  t0.record(s);
  load(ws.j.get(), ws.i.get(), s);
  t1.record(s);
  const Queue q = mp_queue::reset_queue(ws, n, 2 * blocks, false, s);
  visit_all<kEight><<<(n + 7) / 8, 256, 0, s>>>(g, q, n);
  TW_CUDA_CHECK_LAUNCH();
  visit_queued<kEight><<<blocks, 64, 0, s>>>(g, q);
  TW_CUDA_CHECK_LAUNCH();
  t2.record(s);
  TW_CUDA_CHECK(cudaMemcpyAsync(result, g.on, words * sizeof(uint32_t), cudaMemcpyDeviceToHost, s));
  count_downloaded(words * sizeof(uint32_t));
  unsigned long long visits = 0;
  TW_CUDA_CHECK(cudaMemcpyAsync(&visits, q.visits, sizeof visits, cudaMemcpyDeviceToHost, s));
  t3.record(s);
  {
    TraceSpan span("binary-gpu", h);
    ws.stream->sync();
  }
  if (stats) {
    stats->megapixel_visits += n + static_cast<int64_t>(visits);
    stats->kernel_seconds += (t2.ms_since(t1) + (copies ? 0 : t1.ms_since(t0))) * 1e-3;
    stats->transfer_seconds += ((copies ? t1.ms_since(t0) : 0) + t3.ms_since(t2)) * 1e-3;
  }
}

// `on` and `allowed` go up from the host.
template <bool kEight>
void solve_planes(mp_queue::Workspace& ws, int device, const uint32_t* on, const uint32_t* allowed, uint32_t* result,
                  int w, int h, GpuWavefrontStats* stats) {
  const size_t bytes = static_cast<size_t>(bit_plane_pitch(w)) * (h + 2) * sizeof(uint32_t);
  auto up = [&](uint32_t* d_on, uint32_t* d_allowed, cudaStream_t s) {
    TW_CUDA_CHECK(cudaMemcpyAsync(d_on, on, bytes, cudaMemcpyHostToDevice, s));
    TW_CUDA_CHECK(cudaMemcpyAsync(d_allowed, allowed, bytes, cudaMemcpyHostToDevice, s));
    count_uploaded(2 * bytes);
  };
  solve_planes_with<kEight>(ws, device, up, true, result, w, h, stats);
}

// Fill-holes' planes from a binary image in device memory, one warp per
// word: lane b looks at pixel x = 32k + b of row y and the warp's ballot is
// the word. allowed: the zero bytes (the complements: fill-holes is a
// reconstruction by erosion); on: those of them on the image's border (the
// marker is the image there, the maximum inside). Rows 0 and h + 1, word 0
// and the words past the width stay as set before (zero). Any byte other
// than 0 and 255 sets *not_binary.
__global__ void fill_holes_planes(const uint8_t* bytes, size_t byte_pitch, int w, int h, int pitch, uint32_t* on,
                                  uint32_t* allowed, int* not_binary) {
  const int64_t t = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  const int k = static_cast<int>(t / 32), lane = threadIdx.x % 32;
  const int nbx = (w + 31) / 32;
  if (k >= nbx) return;  // whole warps leave together: blockDim is a multiple of 32
  const int x = 32 * k + lane;
  for (int y = blockIdx.y; y < h; y += gridDim.y) {
    const uint8_t b = x < w ? bytes[static_cast<size_t>(y) * byte_pitch + x] : 1;
    const bool zero = x < w && b == 0;
    const bool border = y == 0 || y == h - 1 || x == 0 || x == w - 1;
    const uint32_t z = __ballot_sync(0xFFFFFFFFu, zero);
    const uint32_t e = __ballot_sync(0xFFFFFFFFu, zero && border);
    if (__any_sync(0xFFFFFFFFu, x < w && b != 0 && b != 255) && lane == 0) atomicOr(not_binary, 1);
    if (lane == 0) {
      const size_t word = static_cast<size_t>(y + 1) * pitch + 1 + k;
      allowed[word] = z;
      on[word] = e;
    }
  }
}

template <bool kEight>
class BinaryRule : public TilePropagator {
 public:
  BinaryRule(int device, bool dilate, GpuWavefrontStats* stats)
      : device_(device), zeros_(!dilate), stats_(stats), ws_(mp_queue::workspace(device)) {}

  void neutral(uint8_t* px) const override { *px = zeros_ ? 255 : 0; }
  bool can_propagate(const uint8_t* from, const uint8_t* j, const uint8_t* i) const override {
    if (zeros_) return *from == 0 && *j != 0 && *i == 0;
    return *from != 0 && *j == 0 && *i != 0;
  }

  bool propagate(const ImageView& jv, const ImageView& iv, const Rect& core) const override {
    std::lock_guard<std::mutex> lock(ws_.mu);
    cuda::DeviceScope scope(device_);
    const int w = static_cast<int>(core.w), h = static_cast<int>(core.h);
    const size_t words = static_cast<size_t>(bit_plane_pitch(w)) * (h + 2);
    if (ws_.host_on.size() < words) {
      ws_.host_on = cuda::PinnedBuffer<uint32_t>(words);
      ws_.host_allowed = cuda::PinnedBuffer<uint32_t>(words);
      ws_.host_result = cuda::PinnedBuffer<uint32_t>(words);
    }
    // Packed on the host into pinned memory: an eighth of the bytes to copy,
    // at the full PCIe rate (pageable copies of the byte planes ran at ~3 GB/s).
    const auto h0 = std::chrono::steady_clock::now();
    {
      TraceSpan span("binary-pack", core.h);
      pack_tile_bits(jv, iv, core, ws_.host_on.get(), ws_.host_allowed.get(), zeros_);
    }
    const auto h1 = std::chrono::steady_clock::now();
    solve_planes<kEight>(ws_, device_, ws_.host_on.get(), ws_.host_allowed.get(), ws_.host_result.get(), w, h, stats_);
    const auto h2 = std::chrono::steady_clock::now();
    TraceSpan span("binary-unpack", core.h);
    const bool changed = unpack_new_bits(ws_.host_on.get(), ws_.host_result.get(), jv, core, zeros_) > 0;
    const auto h3 = std::chrono::steady_clock::now();
    if (stats_) stats_->host_seconds += std::chrono::duration<double>((h1 - h0) + (h3 - h2)).count();
    return changed;
  }

 private:
  int device_;
  bool zeros_;  // erosion: the planes hold the zero bytes
  GpuWavefrontStats* stats_;
  mp_queue::Workspace& ws_;
};

}  // namespace

std::unique_ptr<TilePropagator> make_cuda_binary_reconstruct_rule(int device, int connectivity,
                                                                  GpuWavefrontStats* stats, bool dilate) {
  if (connectivity == 8) return std::make_unique<BinaryRule<true>>(device, dilate, stats);
  if (connectivity == 4) return std::make_unique<BinaryRule<false>>(device, dilate, stats);
  throw InputError("connectivity must be 4 or 8");
}

bool fill_holes_binary_on_device(int device, int connectivity, const uint8_t* bytes, size_t byte_pitch, int64_t w,
                                 int64_t h, uint32_t* result, GpuWavefrontStats* stats) {
  if (connectivity != 4 && connectivity != 8) throw InputError("connectivity must be 4 or 8");
  if (w >= (int64_t{1} << 31) || h >= (int64_t{1} << 31) || ((w + 31) / 32) * ((h + 31) / 32) >= (int64_t{1} << 31))
    throw InputError("the image is too large for one GPU reconstruction");
  mp_queue::Workspace& ws = mp_queue::workspace(device);
  std::lock_guard<std::mutex> lock(ws.mu);
  cuda::DeviceScope scope(device);
  cuda::DeviceBuffer<int> flag(1);
  const int W = static_cast<int>(w), H = static_cast<int>(h), pitch = bit_plane_pitch(w);
  const size_t bytes_planes = static_cast<size_t>(pitch) * (h + 2) * sizeof(uint32_t);
  auto pack = [&](uint32_t* on, uint32_t* allowed, cudaStream_t s) {
    TW_CUDA_CHECK(cudaMemsetAsync(flag.get(), 0, sizeof(int), s));
    TW_CUDA_CHECK(cudaMemsetAsync(on, 0, bytes_planes, s));
    TW_CUDA_CHECK(cudaMemsetAsync(allowed, 0, bytes_planes, s));
    const int64_t threads = static_cast<int64_t>((W + 31) / 32) * 32;
    const dim3 grid(static_cast<unsigned>((threads + 255) / 256), static_cast<unsigned>(std::min(H, 65535)));
    fill_holes_planes<<<grid, 256, 0, s>>>(bytes, byte_pitch, W, H, pitch, on, allowed, flag.get());
    TW_CUDA_CHECK_LAUNCH();
  };
  if (connectivity == 8)
    solve_planes_with<true>(ws, device, pack, false, result, W, H, stats);
  else
    solve_planes_with<false>(ws, device, pack, false, result, W, H, stats);
  int bad = 0;
  TW_CUDA_CHECK(cudaMemcpy(&bad, flag.get(), sizeof bad, cudaMemcpyDeviceToHost));
  return bad == 0;
}

void reconstruct_binary_planes(int device, int connectivity, uint32_t* on, const uint32_t* allowed, int64_t w,
                               int64_t h, GpuWavefrontStats* stats) {
  if (connectivity != 4 && connectivity != 8) throw InputError("connectivity must be 4 or 8");
  if (w >= (int64_t{1} << 31) || h >= (int64_t{1} << 31) || ((w + 31) / 32) * ((h + 31) / 32) >= (int64_t{1} << 31))
    throw InputError("the image is too large for one GPU reconstruction");
  mp_queue::Workspace& ws = mp_queue::workspace(device);
  std::lock_guard<std::mutex> lock(ws.mu);
  if (connectivity == 8)
    solve_planes<true>(ws, device, on, allowed, on, static_cast<int>(w), static_cast<int>(h), stats);
  else
    solve_planes<false>(ws, device, on, allowed, on, static_cast<int>(w), static_cast<int>(h), stats);
}

}  // namespace tw
