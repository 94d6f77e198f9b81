// The watershed on the GPU, one tile at a time, by rounds of 32x32 blocks.
//
// The CPU floods a tile with a Dijkstra; a GPU has no cheap global priority
// queue, but it does not need one: the watershed is the unique fixed point
// of a local rule (each pixel takes the cheapest (m, d) its neighbours
// offer, of equal offers the label of the neighbour cheapest by (m, d,
// label); watershed.hpp), so any schedule that ends at a fixed point gives
// the CPU's labels. A round solves every active block in shared memory
// against its apron, read from a snapshot of the tile that no block writes
// during the round (results go to a second buffer and are committed after
// it), so no block ever sees half-written 12-byte values. Inside a block the
// rule is applied Jacobi-style (two shared buffers) from scratch — seeds
// set, every other pixel unreached — until nothing changes: a label is not
// monotone in the cost, so a block is never continued from stale values. A
// block whose border pixels changed activates the neighbours they touch;
// the tile is done when a round changes nothing, and then every block is at
// its fixed point against current aprons: the tile's fixed point.
#include <cuda_runtime.h>

#include <map>
#include <memory>
#include <mutex>
#include <utility>

#include "engine/byte_counters.hpp"
#include "engine/cuda/cuda_check.hpp"
#include "engine/cuda/resources.hpp"
#include "kernels/watershed/watershed.hpp"
#include "kernels/watershed/watershed_cuda.hpp"

namespace tw {
namespace {

constexpr int kB = 32;      // block side
constexpr int kRows = 8;    // threads: 32 x 8, four rows each
constexpr int kS = kB + 2;  // with the apron

struct Geom {
  WsCost* j;          // (w + 2) x (h + 2): the core and the frozen halo ring
  WsCost* out;        // same layout: a round's results, committed after it
  const WsInput* in;  // w x h
  int64_t pitch;      // w + 2
  int w, h, nbx, nby;
};

__device__ __forceinline__ WsCost unreached() {
  return WsCost{kWsUnreached, kWsUnreached, 0};
}

__device__ __forceinline__ bool same(const WsCost& a, const WsCost& b) {
  return a.m == b.m && a.d == b.d && a.label == b.label;
}

// The local rule for an inside, non-seed pixel at (lx, ly) of the block.
template <bool kEight>
__device__ __forceinline__ WsCost settle(const WsCost (*s)[kS], int lx, int ly, uint32_t key) {
  WsCost best = unreached(), from = unreached();
#pragma unroll
  for (int k = 0; k < (kEight ? 8 : 4); ++k) {
    const int dx = k == 0 ? 1 : k == 1 ? -1 : k < 4 ? 0 : (k < 6 ? 1 : -1);
    const int dy = k < 2 ? 0 : k == 2 ? 1 : k == 3 ? -1 : (k % 2 == 0 ? 1 : -1);
    const WsCost p = s[ly + 1 + dy][lx + 1 + dx];
    if (p.m == kWsUnreached) continue;
    const WsCost o = ws_extend(p, key);
    if (ws_cheaper(o, best) || (!ws_cheaper(best, o) && ws_before(p, from))) best = o, from = p;
  }
  return WsCost{best.m, best.d, from.label};
}

template <bool kEight>
__global__ void __launch_bounds__(kB* kRows)
    solve_blocks(Geom g, const uint8_t* active, uint8_t* next, uint8_t* changed, int* n_changed) {
  const int b = blockIdx.x;
  if (!active[b]) return;
  const int bx = b % g.nbx, by = b / g.nbx, tx = threadIdx.x, ty = threadIdx.y, tid = ty * kB + tx;
  const int x0 = bx * kB, y0 = by * kB;
  __shared__ WsCost s[2][kS][kS];
  __shared__ WsInput si[kB][kB];
  __shared__ int edges;  // bits: top, bottom, left, right changed
  if (tid == 0) edges = 0;
  // The block and its apron from the snapshot; outside the tile and its
  // ring, unreached.
  for (int k = tid; k < kS * kS; k += kB * kRows) {
    const int lx = k % kS - 1, ly = k / kS - 1, gx = x0 + lx, gy = y0 + ly;
    const WsCost v = gx >= -1 && gx <= g.w && gy >= -1 && gy <= g.h ? g.j[(gy + 1) * g.pitch + gx + 1] : unreached();
    s[0][ly + 1][lx + 1] = v;
    s[1][ly + 1][lx + 1] = v;
  }
  __syncthreads();
  // The core from scratch: seeds set, the rest unreached. Pixels of the
  // block beyond the core (the ring, or nothing) stay as loaded, fixed.
  for (int r = ty; r < kB; r += kRows) {
    const int gx = x0 + tx, gy = y0 + r;
    WsInput in{0, 0, 0};
    if (gx < g.w && gy < g.h) {
      in = g.in[static_cast<int64_t>(gy) * g.w + gx];
      if (!in.inside) in.seed = 0;
      const WsCost v = in.inside && in.seed ? WsCost{in.key, 0, in.seed} : unreached();
      s[0][r + 1][tx + 1] = v;
      s[1][r + 1][tx + 1] = v;
      if (in.seed) in.inside = 0;  // fixed from here on
    }
    si[r][tx] = in;
  }
  __syncthreads();
  int cur = 0;
  for (;;) {
    int moved = 0;
    for (int r = ty; r < kB; r += kRows) {
      const WsInput in = si[r][tx];
      if (!in.inside) continue;
      const WsCost v = settle<kEight>(s[cur], tx, r, in.key);
      moved |= !same(v, s[cur][r + 1][tx + 1]);
      s[cur ^ 1][r + 1][tx + 1] = v;
    }
    // Also the barrier between this step's reads of s[cur] and the next
    // step's writes to it (each step rewrites every inside pixel).
    moved = __syncthreads_or(moved);
    cur ^= 1;
    if (!moved) break;
  }
  // What changed against the snapshot, and on which edges.
  int diff = 0;
  for (int r = ty; r < kB; r += kRows) {
    const int gx = x0 + tx, gy = y0 + r;
    if (gx >= g.w || gy >= g.h) continue;
    const WsCost v = s[cur][r + 1][tx + 1];
    if (same(v, g.j[(gy + 1) * g.pitch + gx + 1])) continue;
    diff = 1;
    const int e = (r == 0 ? 1 : 0) | (r == kB - 1 || gy == g.h - 1 ? 2 : 0) | (tx == 0 ? 4 : 0) |
                  (tx == kB - 1 || gx == g.w - 1 ? 8 : 0);
    if (e) atomicOr(&edges, e);
  }
  diff = __syncthreads_or(diff);
  if (!diff) return;
  for (int r = ty; r < kB; r += kRows) {
    const int gx = x0 + tx, gy = y0 + r;
    if (gx < g.w && gy < g.h) g.out[(gy + 1) * g.pitch + gx + 1] = s[cur][r + 1][tx + 1];
  }
  if (tid == 0) {
    changed[b] = 1;
    atomicAdd(n_changed, 1);
    const int e = edges;
    const bool up = by > 0, down = by + 1 < g.nby, left = bx > 0, right = bx + 1 < g.nbx;
    if (up && (e & 1)) next[b - g.nbx] = 1;
    if (down && (e & 2)) next[b + g.nbx] = 1;
    if (left && (e & 4)) next[b - 1] = 1;
    if (right && (e & 8)) next[b + 1] = 1;
    // Diagonal neighbours see one corner pixel; waking them on any change
    // of the two edges that meet there is conservative and cheap.
    if (kEight) {
      if (up && left && (e & 5)) next[b - g.nbx - 1] = 1;
      if (up && right && (e & 9)) next[b - g.nbx + 1] = 1;
      if (down && left && (e & 6)) next[b + g.nbx - 1] = 1;
      if (down && right && (e & 10)) next[b + g.nbx + 1] = 1;
    }
  }
}

// The round's results into the snapshot, for the blocks that changed.
__global__ void commit_blocks(Geom g, const uint8_t* changed) {
  const int b = blockIdx.x;
  if (!changed[b]) return;
  const int x0 = (b % g.nbx) * kB, y0 = (b / g.nbx) * kB;
  for (int r = threadIdx.y; r < kB; r += kRows) {
    const int gx = x0 + threadIdx.x, gy = y0 + r;
    if (gx < g.w && gy < g.h) {
      const int64_t k = (gy + 1) * g.pitch + gx + 1;
      g.j[k] = g.out[k];
    }
  }
}

// The device buffers, one set per device for the whole process (a run's
// tiles reuse them). Calls on one device serialise on its mutex.
struct Workspace {
  std::mutex mu;
  std::unique_ptr<cuda::Stream> stream;
  cuda::DeviceBuffer<WsCost> j, out;
  cuda::DeviceBuffer<WsInput> in;
  cuda::DeviceBuffer<uint8_t> flags;  // active, next, changed
  cuda::DeviceBuffer<int> counter;
  cuda::PinnedBuffer<int> host_counter;
};

Workspace& workspace(int device) {
  static std::mutex mu;
  static auto* all = new std::map<int, std::unique_ptr<Workspace>>();  // never freed: see engine/cuda/lanes.cpp
  std::lock_guard<std::mutex> l(mu);
  auto& w = (*all)[device];
  if (!w) w = std::make_unique<Workspace>();
  return *w;
}

class CudaRule : public TilePropagator {
 public:
  CudaRule(int device, int connectivity, GpuWatershedStats* stats)
      : device_(device), eight_(connectivity == 8), stats_(stats), ws_(workspace(device)) {}

  void neutral(uint8_t* px) const override { std::memcpy(px, &kWsNeutral, sizeof kWsNeutral); }

  // As the CPU rule's (watershed_cpu.cpp says why equal costs count).
  bool can_propagate(const uint8_t* from, const uint8_t* j, const uint8_t* i) const override {
    WsCost f, q;
    WsInput in;
    std::memcpy(&f, from, sizeof f), std::memcpy(&q, j, sizeof q), std::memcpy(&in, i, sizeof in);
    return f.m != kWsUnreached && in.inside && !in.seed && !ws_cheaper(q, ws_extend(f, in.key));
  }

  bool propagate(const ImageView& jv, const ImageView& iv, const Rect& core) const override {
    std::lock_guard<std::mutex> lock(ws_.mu);
    cuda::DeviceScope scope(device_);
    if (!ws_.stream) ws_.stream = std::make_unique<cuda::Stream>();
    cudaStream_t s = ws_.stream->get();
    const int w = static_cast<int>(core.w), h = static_cast<int>(core.h);
    const int64_t pitch = w + 2;
    const size_t ring = static_cast<size_t>(pitch) * (h + 2);
    if (ws_.j.size() < ring) {
      ws_.j = cuda::DeviceBuffer<WsCost>(ring);
      ws_.out = cuda::DeviceBuffer<WsCost>(ring);
    }
    if (ws_.in.size() < static_cast<size_t>(w) * h) ws_.in = cuda::DeviceBuffer<WsInput>(static_cast<size_t>(w) * h);
    const int nbx = (w + kB - 1) / kB, nby = (h + kB - 1) / kB, n = nbx * nby;
    if (ws_.flags.size() < 3 * static_cast<size_t>(n))
      ws_.flags = cuda::DeviceBuffer<uint8_t>(3 * static_cast<size_t>(n));
    if (!ws_.counter.get()) ws_.counter = cuda::DeviceBuffer<int>(1), ws_.host_counter = cuda::PinnedBuffer<int>(1);
    uint8_t* active = ws_.flags.get();
    uint8_t* next = active + n;
    uint8_t* changed = next + n;
    cuda::Event t0, t1, t2, t3;
    t0.record(s);
    const size_t row = static_cast<size_t>(pitch) * sizeof(WsCost);
    TW_CUDA_CHECK(cudaMemcpy2DAsync(ws_.j.get(), row, jv.ptr_bytes(core.x - 1, core.y - 1), jv.stride, row, h + 2,
                                    cudaMemcpyHostToDevice, s));
    const size_t irow = static_cast<size_t>(w) * sizeof(WsInput);
    TW_CUDA_CHECK(cudaMemcpy2DAsync(ws_.in.get(), irow, iv.ptr_bytes(core.x, core.y), iv.stride, irow, h,
                                    cudaMemcpyHostToDevice, s));
    count_uploaded(row * (h + 2) + irow * h);
    t1.record(s);
    const Geom g{ws_.j.get(), ws_.out.get(), ws_.in.get(), pitch, w, h, nbx, nby};
    TW_CUDA_CHECK(cudaMemsetAsync(active, 1, n, s));
    int64_t rounds = 0, solved_changed = 0;
    for (;;) {
      TW_CUDA_CHECK(cudaMemsetAsync(next, 0, n, s));  // (active and next swap places each round)
      TW_CUDA_CHECK(cudaMemsetAsync(changed, 0, n, s));
      TW_CUDA_CHECK(cudaMemsetAsync(ws_.counter.get(), 0, sizeof(int), s));
      if (eight_)
        solve_blocks<true><<<n, dim3(kB, kRows), 0, s>>>(g, active, next, changed, ws_.counter.get());
      else
        solve_blocks<false><<<n, dim3(kB, kRows), 0, s>>>(g, active, next, changed, ws_.counter.get());
      TW_CUDA_CHECK_LAUNCH();
      commit_blocks<<<n, dim3(kB, kRows), 0, s>>>(g, changed);
      TW_CUDA_CHECK_LAUNCH();
      TW_CUDA_CHECK(cudaMemcpyAsync(ws_.host_counter.get(), ws_.counter.get(), sizeof(int), cudaMemcpyDeviceToHost, s));
      ws_.stream->sync();
      ++rounds;
      const int c = *ws_.host_counter.get();
      solved_changed += c;
      if (c == 0) break;
      std::swap(active, next);
    }
    t2.record(s);
    // Only changed tiles come back (the first round compares every block
    // with what was uploaded).
    if (solved_changed > 0) {
      const size_t orow = static_cast<size_t>(w) * sizeof(WsCost);
      TW_CUDA_CHECK(cudaMemcpy2DAsync(jv.ptr_bytes(core.x, core.y), jv.stride, ws_.j.get() + pitch + 1, row, orow, h,
                                      cudaMemcpyDeviceToHost, s));
      count_downloaded(orow * h);
    }
    t3.record(s);
    ws_.stream->sync();
    if (stats_) {
      stats_->rounds += rounds;
      stats_->block_solves += solved_changed;
      stats_->kernel_seconds += t2.ms_since(t1) * 1e-3;
      stats_->transfer_seconds += (t1.ms_since(t0) + t3.ms_since(t2)) * 1e-3;
    }
    return solved_changed > 0;
  }

 private:
  int device_;
  bool eight_;
  GpuWatershedStats* stats_;
  Workspace& ws_;
};

}  // namespace

std::unique_ptr<TilePropagator> make_cuda_watershed_rule(int device, int connectivity, GpuWatershedStats* stats) {
  if (connectivity != 4 && connectivity != 8) throw InputError("--connectivity must be 4 or 8");
  return std::make_unique<CudaRule>(device, connectivity, stats);
}

}  // namespace tw
