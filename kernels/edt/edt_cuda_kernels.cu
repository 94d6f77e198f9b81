// The GPU EDT kernels (edt_cuda_kernels.hpp).
//
// Column passes: a column is cut into segments of kSeg rows so that every
// (column, segment) pair is a thread: one kernel finds each segment's
// first/last background row, one scans those per column (carrying across
// bands), one writes the distances. A thread per column alone would leave
// the GPU nearly idle (4096 threads for a 4096-wide image).
//
// Row pass: one block per row, the row in shared memory. Each thread builds
// the lower envelope of the parabolas of its band of columns (Maurer's
// stack, as a doubly linked list in place), bands merge pairwise in a tree
// (popping hidden sites only at the junction, as in PBA's merge of
// x-separated envelopes), each surviving site marks where its region starts,
// and a prefix maximum over those marks gives every pixel its nearest site.
// All integer, so the result equals the CPU backend's bit for bit.
#include <algorithm>
#include <type_traits>

#include "engine/cuda/cuda_check.hpp"
#include "kernels/edt/edt_cuda_kernels.hpp"

namespace tw::edt_gpu {
namespace {

constexpr int32_t kNone = INT32_MAX;  // no background (as a row or a distance)
constexpr int32_t kDead = -2;         // prev[] of a pixel that is not a live site
constexpr int kRowThreads = 256;
constexpr int kColThreads = 256;

// ---- column passes --------------------------------------------------------

// Pass 1 (bottom-up). first[seg][x]: the first background row (absolute) of
// the segment, or kNone.
__global__ void seg_first_background(const uint8_t* fg, int64_t W, int rows, int row0, int32_t* first) {
  const int64_t x = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  const int seg = blockIdx.y;
  if (x >= W) return;
  const int y0 = seg * kSeg, y1 = min(rows, y0 + kSeg);
  int32_t f = kNone;
  for (int y = y0; y < y1; ++y)
    if (!fg[y * W + x]) {
      f = row0 + y;
      break;
    }
  first[seg * W + x] = f;
}

// next_bg[seg][x]: the nearest background row below the segment; `carry`
// holds it for the band's bottom on entry and for its top on exit.
__global__ void scan_segments_up(const int32_t* first, int nseg, int64_t W, int32_t* carry, int32_t* next_bg) {
  const int64_t x = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (x >= W) return;
  int32_t nb = carry[x];
  for (int seg = nseg - 1; seg >= 0; --seg) {
    next_bg[seg * W + x] = nb;
    const int32_t f = first[seg * W + x];
    if (f != kNone) nb = f;
  }
  carry[x] = nb;
}

// below[y][x]: distance to the nearest background at or below, or kNone.
__global__ void distance_below(const uint8_t* fg, int64_t W, int rows, int row0, const int32_t* next_bg,
                               int32_t* below) {
  const int64_t x = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  const int seg = blockIdx.y;
  if (x >= W) return;
  const int y0 = seg * kSeg, y1 = min(rows, y0 + kSeg);
  int32_t nb = next_bg[seg * W + x];
  for (int y = y1 - 1; y >= y0; --y) {
    if (!fg[y * W + x]) nb = row0 + y;
    below[y * W + x] = nb == kNone ? kNone : nb - (row0 + y);
  }
}

// Pass 2 (top-down). last[seg][x]: the last background row of the segment.
__global__ void seg_last_background(const int32_t* below, int64_t W, int rows, int row0, int32_t* last) {
  const int64_t x = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  const int seg = blockIdx.y;
  if (x >= W) return;
  const int y0 = seg * kSeg, y1 = min(rows, y0 + kSeg);
  int32_t l = kNone;
  for (int y = y1 - 1; y >= y0; --y)
    if (below[y * W + x] == 0) {
      l = row0 + y;
      break;
    }
  last[seg * W + x] = l;
}

__global__ void scan_segments_down(const int32_t* last, int nseg, int64_t W, int32_t* carry, int32_t* prev_bg) {
  const int64_t x = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (x >= W) return;
  int32_t pb = carry[x];
  for (int seg = 0; seg < nseg; ++seg) {
    prev_bg[seg * W + x] = pb;
    const int32_t l = last[seg * W + x];
    if (l != kNone) pb = l;
  }
  carry[x] = pb;
}

// g[y][x] = min(distance above, distance below): the column distance.
__global__ void column_distance(const int32_t* below, int64_t W, int rows, int row0, const int32_t* prev_bg,
                                int32_t* g) {
  const int64_t x = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  const int seg = blockIdx.y;
  if (x >= W) return;
  const int y0 = seg * kSeg, y1 = min(rows, y0 + kSeg);
  int32_t pb = prev_bg[seg * W + x];
  for (int y = y0; y < y1; ++y) {
    const int32_t b = below[y * W + x];
    if (b == 0) pb = row0 + y;
    const int32_t up = pb == kNone ? kNone : row0 + y - pb;
    g[y * W + x] = min(up, b);
  }
}

// ---- row pass ---------------------------------------------------------------

// A row's arrays: g (column distances), prv/nxt (the envelope as a doubly
// linked list of columns; -1 ends it, kDead marks a column that is no live
// site). Narrow rows (both sides below 65534) keep them in 16 bits, which
// doubles the rows in flight per SM. Padded by one entry per 32, so threads
// walking their bands side by side hit different banks. Indices are 32-bit
// (rows are narrower than 2^20): a 64-bit division per access once cost
// more than everything else.
template <bool kNarrow>
struct RowArrays {
  using T = std::conditional_t<kNarrow, uint16_t, int32_t>;
  T* g;
  T* prv;
  T* nxt;
  __device__ __forceinline__ static int at(int x) { return x + (x >> 5); }
  __device__ __forceinline__ static int dec(T v) {
    if constexpr (kNarrow)
      return v >= 0xFFFE ? int(v) - 0x10000 : int(v);
    else
      return v;
  }
  __device__ __forceinline__ static T enc(int v) { return static_cast<T>(v); }  // -1, -2 wrap to 0xFFFF, 0xFFFE
  __device__ __forceinline__ bool site(int x) const { return dec(g[at(x)]) != (kNarrow ? -1 : kNone); }
  __device__ __forceinline__ void set_g(int x, int32_t v) const { g[at(x)] = kNarrow && v == kNone ? T(0xFFFF) : T(v); }
  __device__ __forceinline__ int64_t f(int x) const {
    const int64_t v = g[at(x)];
    return v * v;
  }
  __device__ __forceinline__ int p(int x) const { return dec(prv[at(x)]); }
  __device__ __forceinline__ int n(int x) const { return dec(nxt[at(x)]); }
  __device__ __forceinline__ void set_p(int x, int v) const { prv[at(x)] = enc(v); }
  __device__ __forceinline__ void set_n(int x, int v) const { nxt[at(x)] = enc(v); }
  // prv[s] = max(prv[s], v), where -1 (none yet) is below every column.
  __device__ __forceinline__ void mark_max(int s, int v) const {
    if constexpr (!kNarrow) {
      atomicMax(&prv[at(s)], v);
    } else {
      // No 16-bit atomics: compare-and-swap the word that holds the entry.
      T* e = &prv[at(s)];
      uint32_t* word = reinterpret_cast<uint32_t*>(reinterpret_cast<uintptr_t>(e) & ~uintptr_t{3});
      const int sh = (reinterpret_cast<uintptr_t>(e) & 2) ? 16 : 0;
      uint32_t old = *word;
      for (;;) {
        const uint32_t cur = (old >> sh) & 0xFFFFu;
        if (cur != 0xFFFFu && static_cast<int>(cur) >= v) return;
        const uint32_t seen = atomicCAS(word, old, (old & ~(0xFFFFu << sh)) | (static_cast<uint32_t>(v) << sh));
        if (seen == old) return;
        old = seen;
      }
    }
  }
};

// Entries per row array (even, so 16-bit arrays keep 4-byte alignment).
__host__ __device__ constexpr int64_t padded_width(int64_t w) {
  return (w + w / 32 + 2) & ~int64_t{1};
}
__host__ __device__ constexpr bool narrow_rows(int64_t w, int64_t h) {
  return w < 65534 && h < 65534;
}

// Whether site b (a < b < c) has an empty region given a and c: where a and
// b meet is at or right of where b and c meet. Exact in 64 bits for sides
// below 2^20.
template <class R>
__device__ __forceinline__ bool hidden(int a32, int b32, int c32, const R& r) {
  const int64_t a = a32, b = b32, c = c32, fa = r.f(a32), fb = r.f(b32), fc = r.f(c32);
  return (b * b - a * a + fb - fa) * (c - b) >= (c * c - b * b + fc - fb) * (b - a);
}

// The first column at which site b is strictly nearer than site a (a < b):
// floor(N / D) + 1. N < 2^42 and D < 2^21, so the double quotient is close
// enough that its floor is exact.
template <class R>
__device__ __forceinline__ int64_t region_start(int a32, int b32, const R& r) {
  const int64_t a = a32, b = b32, n = b * b - a * a + r.f(b32) - r.f(a32), d = 2 * (b - a);
  return static_cast<int64_t>(floor(static_cast<double>(n) / static_cast<double>(d))) + 1;
}

// Joins the envelope of group i (left) and group j (right) at their
// junction, popping the sites either neighbour hides (as in PBA's merge; any
// site hidden by live sites stays hidden, so the order of pops is free).
// One thread: for the many small merges of the low levels.
template <class R>
__device__ void merge_thread(const R& r, int32_t* head, int32_t* tail, int i, int j) {
  int lt = tail[i], rh = head[j];
  const int rt = tail[j];
  if (lt < 0) {
    head[i] = rh, tail[i] = rt;
    return;
  }
  if (rh < 0) return;
  for (;;) {
    const int lp = r.p(lt);
    if (lp >= 0 && hidden(lp, lt, rh, r)) {
      r.set_p(lt, kDead), lt = lp;
      continue;
    }
    const int rn = r.n(rh);
    if (rn >= 0 && hidden(lt, rh, rn, r)) {
      r.set_p(rh, kDead), rh = rn;
      continue;
    }
    break;
  }
  r.set_n(lt, rh), r.set_p(rh, lt), tail[i] = rt;
}

// The same with a warp, for the few large merges of the top levels, where
// one thread could pop thousands of sites in a row (the seed's X pattern):
// 32 columns are tested at once for the nearest site that stays.
template <class R>
__device__ void merge_warp(const R& r, int32_t* head, int32_t* tail, int i, int j) {
  const int lane = threadIdx.x % 32;
  const int lh = head[i], rt = tail[j];
  int lt = tail[i], rh = head[j];
  __syncwarp();
  if (lt < 0) {
    if (lane == 0) head[i] = rh, tail[i] = rt;
    return;
  }
  if (rh < 0) return;
  for (;;) {
    // Left: the last live site at or before lt that rh does not hide (the
    // group's head always stays: it has no predecessor).
    int nl = lt;
    for (int top = lt;; top -= 32) {
      const int x = top - lane;
      bool keep = false;
      if (x >= lh) {
        const int p = r.p(x);
        keep = p != kDead && (p < 0 || !hidden(p, x, rh, r));
      }
      const unsigned m = __ballot_sync(0xffffffffu, keep);
      if (m) {
        nl = top - (__ffs(m) - 1);
        break;
      }
    }
    for (int x = nl + 1 + lane; x <= lt; x += 32)
      if (r.p(x) != kDead) r.set_p(x, kDead);
    __syncwarp();
    lt = nl;
    // Right: the first live site at or after rh that lt does not hide.
    int nr = rh;
    for (int bot = rh;; bot += 32) {
      const int x = bot + lane;
      bool keep = false;
      if (x <= rt && r.p(x) != kDead) {
        const int nx = r.n(x);
        keep = nx < 0 || !hidden(lt, x, nx, r);
      }
      const unsigned m = __ballot_sync(0xffffffffu, keep);
      if (m) {
        nr = bot + __ffs(m) - 1;
        break;
      }
    }
    for (int x = rh + lane; x < nr; x += 32)
      if (r.p(x) != kDead) r.set_p(x, kDead);
    __syncwarp();
    if (nr == rh) break;  // the left side was checked against this rh already
    rh = nr;
  }
  if (lane == 0) r.set_n(lt, rh), r.set_p(rh, lt), tail[i] = rt;
}

// Block-wide inclusive prefix maximum of one value per thread.
__device__ int32_t block_prefix_max(int32_t v, int32_t* warp_tot) {
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  for (int o = 1; o < 32; o *= 2) {
    const int32_t u = __shfl_up_sync(0xffffffffu, v, o);
    if (lane >= o) v = max(v, u);
  }
  if (lane == 31) warp_tot[warp] = v;
  __syncthreads();
  if (warp == 0) {
    int32_t t = lane < kRowThreads / 32 ? warp_tot[lane] : -1;
    for (int o = 1; o < 32; o *= 2) {
      const int32_t u = __shfl_up_sync(0xffffffffu, t, o);
      if (lane >= o) t = max(t, u);
    }
    if (lane < kRowThreads / 32) warp_tot[lane] = t;
  }
  __syncthreads();
  if (warp > 0) v = max(v, warp_tot[warp - 1]);
  __syncthreads();  // warp_tot is reused by the next call
  return v;
}

// rows x W column distances in gcol (kNone where a column has no
// background) become float distances in out (which may alias gcol). The row
// arrays live in dynamic shared memory, or in `scratch` (row_bytes per
// block) for rows too wide for it.
template <bool kNarrow>
__global__ void __launch_bounds__(kRowThreads)
    row_pass(const int32_t* gcol, int w, int rows, float* out, int32_t* scratch) {
  using R = RowArrays<kNarrow>;
  using T = typename R::T;
  extern __shared__ int32_t smem[];
  const int W = w;
  const int64_t wp = padded_width(W);
  T* base = reinterpret_cast<T*>(scratch ? scratch + blockIdx.x * (3 * wp * sizeof(T) / 4) : smem);
  const R r{base, base + wp, base + 2 * wp};
  __shared__ int32_t head[kRowThreads], tail[kRowThreads], warp_tot[kRowThreads / 32];
  const int tid = threadIdx.x;
  const int band = (W + kRowThreads - 1) / kRowThreads;
  const int b0 = min(W, tid * band), b1 = min(W, b0 + band);
  for (int row = blockIdx.x; row < rows; row += gridDim.x) {
    const int32_t* src = gcol + static_cast<int64_t>(row) * W;
    for (int x = tid; x < W; x += kRowThreads) r.set_g(x, src[x]), r.set_p(x, kDead);
    __syncthreads();
    // The envelope of this thread's band (Maurer's stack).
    int h = -1, t = -1;
    for (int x = b0; x < b1; ++x) {
      if (!r.site(x)) continue;
      while (t >= 0 && r.p(t) >= 0 && hidden(r.p(t), t, x, r)) {
        const int p = r.p(t);
        r.set_p(t, kDead);
        t = p;
      }
      if (t >= 0)
        r.set_n(t, x), r.set_p(x, t);
      else
        r.set_p(x, -1), h = x;
      t = x;
    }
    if (t >= 0) r.set_n(t, -1);
    head[tid] = h, tail[tid] = t;
    __syncthreads();
    // Merge neighbouring envelopes pairwise. Neither end of a merged pair can
    // vanish (the outermost sites always keep a region), so a group's head
    // comes from its left half and its tail from its right half.
    for (int step = 1; step < kRowThreads; step *= 2) {
      const int merges = kRowThreads / (2 * step);
      if (merges > kRowThreads / 32) {
        if (tid % (2 * step) == 0) merge_thread(r, head, tail, tid, tid + step);
      } else if (tid / 32 < merges) {
        const int i = (tid / 32) * 2 * step;
        merge_warp(r, head, tail, i, i + step);
      }
      __syncthreads();
    }
    // Where each live site's region starts (nxt is free now); then marks:
    // prv[s] = the last site whose region starts at s.
    for (int x = tid; x < W; x += kRowThreads) {
      const int p = r.p(x);
      int s = kDead;
      if (p != kDead) s = p < 0 ? 0 : static_cast<int>(min(max(region_start(p, x, r), int64_t{0}), int64_t{W}));
      r.set_n(x, s);
    }
    __syncthreads();
    for (int x = tid; x < W; x += kRowThreads) r.set_p(x, -1);
    __syncthreads();
    for (int x = tid; x < W; x += kRowThreads) {
      const int s = r.n(x);
      if (s != kDead && s < W) r.mark_max(s, x);
    }
    __syncthreads();
    // Prefix maximum of the marks: the owner of every pixel.
    int32_t m = -1;
    for (int x = b0; x < b1; ++x) m = max(m, r.p(x));
    const int32_t incl = block_prefix_max(m, warp_tot);
    tail[tid] = incl;  // the merge is over: tail[] holds each band's prefix now
    __syncthreads();
    int32_t run = tid > 0 ? tail[tid - 1] : -1;
    for (int x = b0; x < b1; ++x) run = max(run, r.p(x)), r.set_p(x, run);
    __syncthreads();
    float* dst = out + static_cast<int64_t>(row) * W;
    for (int x = tid; x < W; x += kRowThreads) {
      const int o = r.p(x);
      if (o < 0) {
        dst[x] = __int_as_float(0x7f800000);  // no background anywhere: +inf
      } else {
        const int64_t dx = x - o, d2 = dx * dx + r.f(o);
        dst[x] = static_cast<float>(sqrt(static_cast<double>(d2)));
      }
    }
    __syncthreads();
  }
}

dim3 column_grid(int64_t w, int64_t nseg) {
  return dim3(static_cast<unsigned>((w + kColThreads - 1) / kColThreads), static_cast<unsigned>(nseg));
}

__global__ void fill(int32_t* p, int64_t n, int32_t v) {
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i < n) p[i] = v;
}

// One thread per pixel: its bit's word is read by the 32 threads of a warp
// at once (one transaction), its flag written next to theirs.
__global__ void bits_to_flags_kernel(const uint32_t* words, int64_t pitch, int64_t w, int rows, uint8_t set,
                                     uint8_t clear, uint8_t* fg) {
  const int64_t x = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (x >= w) return;
  for (int64_t r = blockIdx.y; r < rows; r += gridDim.y) {  // a grid has at most 65535 rows of blocks
    const uint32_t word = words[r * pitch + 1 + x / 32];
    fg[r * w + x] = (word >> (x % 32)) & 1u ? set : clear;
  }
}

constexpr size_t kStaticRowSmem = (2 * kRowThreads + kRowThreads / 32) * 4;

}  // namespace

RowPlan plan_rows(int64_t w, int64_t h, int device) {
  int sms = 0, optin = 0;
  TW_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  TW_CUDA_CHECK(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
  RowPlan p;
  p.narrow = narrow_rows(w, h);
  p.row_bytes = static_cast<size_t>(3 * padded_width(w)) * (p.narrow ? 2 : 4);
  p.in_shared = p.row_bytes + kStaticRowSmem <= static_cast<size_t>(optin);
  p.scratch_blocks = p.in_shared ? 0 : 2 * sms;
  if (p.in_shared && p.row_bytes > 48 * 1024) {
    const int bytes = static_cast<int>(p.row_bytes);
    if (p.narrow)
      TW_CUDA_CHECK(cudaFuncSetAttribute(row_pass<true>, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes));
    else
      TW_CUDA_CHECK(cudaFuncSetAttribute(row_pass<false>, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes));
  }
  return p;
}

size_t bytes_per_band_row(int64_t w) {
  return static_cast<size_t>(w) * (1 + 4 + 4) + 2 * static_cast<size_t>(w) * 4 / kSeg + 8;
}

size_t fixed_bytes(int64_t w, const RowPlan& plan) {
  return 2 * static_cast<size_t>(w) * 4 + static_cast<size_t>(plan.scratch_blocks) * plan.row_bytes;
}

void reset_carries(const Workspace& ws, cudaStream_t s) {
  const unsigned blocks = static_cast<unsigned>((ws.w + 255) / 256);
  fill<<<blocks, 256, 0, s>>>(ws.carry_down, ws.w, kNone);
  TW_CUDA_CHECK_LAUNCH();
  fill<<<blocks, 256, 0, s>>>(ws.carry_up, ws.w, kNone);
  TW_CUDA_CHECK_LAUNCH();
}

void bits_to_flags(const uint32_t* words, int64_t pitch, int rows, const Workspace& ws, uint8_t set, uint8_t clear,
                   uint8_t* fg, cudaStream_t s) {
  if (rows <= 0) return;
  const dim3 grid(static_cast<unsigned>((ws.w + 255) / 256), static_cast<unsigned>(std::min(rows, 65535)));
  bits_to_flags_kernel<<<grid, 256, 0, s>>>(words, pitch, ws.w, rows, set, clear, fg);
  TW_CUDA_CHECK_LAUNCH();
}

void band_below(const uint8_t* fg, int rows, int row0, const Workspace& ws, cudaStream_t s) {
  const int nseg = (rows + kSeg - 1) / kSeg;
  seg_first_background<<<column_grid(ws.w, nseg), kColThreads, 0, s>>>(fg, ws.w, rows, row0, ws.seg_a);
  TW_CUDA_CHECK_LAUNCH();
  scan_segments_up<<<column_grid(ws.w, 1), kColThreads, 0, s>>>(ws.seg_a, nseg, ws.w, ws.carry_down, ws.seg_b);
  TW_CUDA_CHECK_LAUNCH();
  distance_below<<<column_grid(ws.w, nseg), kColThreads, 0, s>>>(fg, ws.w, rows, row0, ws.seg_b, ws.below);
  TW_CUDA_CHECK_LAUNCH();
}

float* band_distance(int rows, int row0, const Workspace& ws, cudaStream_t s) {
  const int nseg = (rows + kSeg - 1) / kSeg;
  seg_last_background<<<column_grid(ws.w, nseg), kColThreads, 0, s>>>(ws.below, ws.w, rows, row0, ws.seg_a);
  TW_CUDA_CHECK_LAUNCH();
  scan_segments_down<<<column_grid(ws.w, 1), kColThreads, 0, s>>>(ws.seg_a, nseg, ws.w, ws.carry_up, ws.seg_b);
  TW_CUDA_CHECK_LAUNCH();
  column_distance<<<column_grid(ws.w, nseg), kColThreads, 0, s>>>(ws.below, ws.w, rows, row0, ws.seg_b, ws.g);
  TW_CUDA_CHECK_LAUNCH();
  // In place: each row is read whole into the block's arrays before it is written.
  float* dist = reinterpret_cast<float*>(ws.g);
  const unsigned blocks = static_cast<unsigned>(ws.plan.in_shared ? rows : std::min(rows, ws.plan.scratch_blocks));
  const size_t smem = ws.plan.in_shared ? ws.plan.row_bytes : 0;
  int32_t* scratch = ws.plan.in_shared ? nullptr : ws.scratch;
  if (ws.plan.narrow)
    row_pass<true><<<blocks, kRowThreads, smem, s>>>(ws.g, int(ws.w), rows, dist, scratch);
  else
    row_pass<false><<<blocks, kRowThreads, smem, s>>>(ws.g, int(ws.w), rows, dist, scratch);
  TW_CUDA_CHECK_LAUNCH();
  return dist;
}

}  // namespace tw::edt_gpu
