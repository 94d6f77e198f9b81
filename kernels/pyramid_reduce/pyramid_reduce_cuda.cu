// Two kernels, both with the CPU's integer rounding, (sum w p + 128) >> 8:
//
// * reduce_u8_fast, for 8-bit blocks whose input columns all lie inside the
//   held rows (all but the edge columns of blocks): each thread streams one
//   16-byte column chunk down 11 input rows with vector loads, keeping the
//   vertical sums of 4 output rows in registers as packed 16-bit pairs (8-bit
//   sums never exceed 16*255, so plain 32-bit adds never carry across the
//   pair); the sums go to shared memory and the horizontal pass reads them
//   there. Every input byte is read from DRAM about once. The edge columns
//   of the level (or of the held columns) are generic tiles in the same
//   launch.
// * reduce_generic, for 16-bit samples and levels too narrow for a fast
//   block: stages the (2 kBx + 3) x (2 kBy + 3) input pixels a tile needs in
//   shared memory, mirrored at the level's edges, one sample per thread.
//   reduce_any_channels does the same one channel per block, for more than
//   four channels.
#include <algorithm>

#include "engine/cuda/cuda_check.hpp"
#include "kernels/pyramid_reduce/pyramid_reduce_cuda.hpp"

namespace tw {
namespace {

constexpr int kBx = 64, kBy = 8;
constexpr int kInW = 2 * kBx + 3, kInH = 2 * kBy + 3;
constexpr int kThreads = 256;

__device__ __forceinline__ int64_t reflect101(int64_t i, int64_t n) {
  if (i >= 0 && i < n) return i;
  if (n == 1) return 0;
  const int64_t period = 2 * (n - 1);
  int64_t k = i % period;
  if (k < 0) k += period;
  return k < n ? k : period - k;
}

// Device pointer to input row sy (already mirrored), or null if not held.
__device__ __forceinline__ const uint8_t* row_ptr(const ReduceLaunch& a, int64_t sy) {
  if (sy >= a.chunk.y0 && sy < a.chunk.y0 + a.chunk.n) return a.chunk.data + size_t(sy - a.chunk.y0) * a.chunk.pitch;
  if (sy >= a.carry.y0 && sy < a.carry.y0 + a.carry.n) return a.carry.data + size_t(sy - a.carry.y0) * a.carry.pitch;
  return nullptr;
}

// One kBx x kBy tile of outputs from (ox0, oy0), columns clipped to
// [x_lo, x_hi): stages the input window, mirrored at the level's edges.
template <class T, int C>
__device__ void generic_tile(const ReduceLaunch& a, int64_t ox0, int64_t oy0, int64_t x_lo, int64_t x_hi,
                             T (*s_in)[kInW * C], unsigned (*s_v)[kInW * C]) {
  using Acc = unsigned int;
  const int64_t ix0 = 2 * ox0 - 2, iy0 = 2 * oy0 - 2;

  // Stage the input window. Rows come from carry or chunk; columns mirror.
  for (int i = threadIdx.x; i < kInH * kInW * C; i += kThreads) {
    const int r = i / (kInW * C), rc = i - r * (kInW * C);
    const int col = rc / C, ch = rc - col * C;
    const int64_t sy = reflect101(iy0 + r, a.in_height);
    const int64_t sx = reflect101(ix0 + col, a.in_width);
    // Rows or columns past what this block outputs may be absent: keep them
    // zero (their sums are never used).
    const bool in_carry = sy >= a.carry.y0 && sy < a.carry.y0 + a.carry.n;
    const bool in_chunk = sy >= a.chunk.y0 && sy < a.chunk.y0 + a.chunk.n;
    T v = 0;
    if ((in_carry || in_chunk) && sx >= a.in_x0 && sx < a.in_x0 + a.in_w) {
      const DeviceRows& rows = in_chunk ? a.chunk : a.carry;
      const T* p = reinterpret_cast<const T*>(rows.data + size_t(sy - rows.y0) * rows.pitch);
      v = p[(sx - a.in_x0) * C + ch];
    }
    s_in[r][rc] = v;
  }
  __syncthreads();
  for (int i = threadIdx.x; i < kBy * kInW * C; i += kThreads) {
    const int j = i / (kInW * C), c = i - j * (kInW * C);
    s_v[j][c] = Acc(s_in[2 * j][c]) + Acc(s_in[2 * j + 4][c]) +
                4u * (Acc(s_in[2 * j + 1][c]) + Acc(s_in[2 * j + 3][c])) + 6u * Acc(s_in[2 * j + 2][c]);
  }
  __syncthreads();
  for (int i = threadIdx.x; i < kBy * kBx * C; i += kThreads) {
    const int j = i / (kBx * C), xc = i - j * (kBx * C);
    const int x = xc / C, ch = xc - x * C;
    const int64_t oy = oy0 + j, ox = ox0 + x;
    if (oy >= a.y_end || ox < x_lo || ox >= x_hi) continue;
    const Acc* v = &s_v[j][2 * x * C + ch];
    const Acc s = v[0] + v[4 * C] + 4u * (v[C] + v[3 * C]) + 6u * v[2 * C] + 128u;
    T* out = reinterpret_cast<T*>(a.out + size_t(oy - a.out_y0) * a.out_pitch);
    out[(ox - a.out_x0) * C + ch] = T(s >> 8);
  }
}

// Output pixels per block row for the fast kernel: the input span
// (2 Bx + 3) C bytes must fit 64 16-byte words.
template <int C>
__host__ __device__ constexpr int fast_bx() {
  return C == 1 ? 480 : C == 2 ? 224 : C == 3 ? 160 : 112;
}
// Output rows per block and per thread (each thread keeps the vertical sums
// of kGroupRows rows in registers); overridable to tune (tools/bench).
#ifndef TW_REDUCE_BY
#define TW_REDUCE_BY 16
#endif
#ifndef TW_REDUCE_GROUP_ROWS
#define TW_REDUCE_GROUP_ROWS 4
#endif
constexpr int kFastBy = TW_REDUCE_BY, kGroupRows = TW_REDUCE_GROUP_ROWS, kGroups = kFastBy / kGroupRows;
constexpr int kWords = 64;  // 16-byte words per input row span
static_assert(kWords * kGroups == kThreads, "one thread per (word, group of output rows)");
constexpr size_t kFastSmem = size_t{kFastBy} * kWords * 8 * sizeof(uint32_t);

// The horizontal taps of four output pixels on packed pairs of 16-bit sums:
// a pair's two lanes never carry into each other (a full REDUCE sum plus its
// rounding stays below 65536), so one 32-bit add or multiply-add does two
// taps, and odd-aligned taps are one funnel shift away. out: the quad's 4 C
// bytes as C little-endian words. kOdd: the quad's first sum sits in the
// high half of pairs[0].
template <int C, int kOdd>
__device__ __forceinline__ void quad_from_pairs(const uint32_t* s, uint32_t (&out)[C]) {
  constexpr int kPairs = (11 * C + 2) / 2;
  uint32_t pr[kPairs];
#pragma unroll
  for (int k = 0; k < kPairs; ++k) pr[k] = s[k];
  // The packed result of pair m (sums 2m, 2m+1 relative to pairs[0]).
  auto result = [&](int m) {
    uint32_t t[5];
#pragma unroll
    for (int k = 0; k < 5; ++k) {
      const int e = 2 * m + k * C;  // u16 offset of the tap's low lane
      t[k] = (e & 1) ? __funnelshift_r(pr[e >> 1], pr[(e >> 1) + 1], 16) : pr[e >> 1];
    }
    return t[0] + t[4] + ((t[1] + t[3]) << 2) + 6u * t[2] + 0x00800080u;
  };
#pragma unroll
  for (int c = 0; c < C; ++c) out[c] = 0;
#pragma unroll
  for (int p = 0; p < 4; ++p)
#pragma unroll
    for (int c = 0; c < C; ++c) {
      const int e = kOdd + 2 * p * C + c;
      const uint32_t r = result(e >> 1);  // the compiler shares equal m's
      const uint32_t byte = (e & 1) ? (r >> 24) : ((r >> 8) & 0xffu);
      const int b = p * C + c;
      out[b / 4] |= byte << (8 * (b % 4));
    }
}

// Three blocks per SM, no spills: 0.230 ms for a 16384x8192 RGB level on an
// H100; four (64 registers, no spills with the early stores) are as fast,
// five spill (0.240 ms). tools/bench/reduce_bench.cu.
#ifndef TW_REDUCE_MIN_BLOCKS
#define TW_REDUCE_MIN_BLOCKS 3
#endif

// The fast blocks' columns [x0, x1), and how many generic tiles of kBx
// columns cover the columns left of them; those right of them follow.
struct FastSplit {
  int64_t x0 = 0, x1 = 0;
  int left = 0, fast = 0;
};

template <int C>
__global__ void __launch_bounds__(kThreads, TW_REDUCE_MIN_BLOCKS) reduce_u8_fast(ReduceLaunch a, FastSplit f) {
  constexpr int kBxF = fast_bx<C>();
  // Vertical sums as 16-bit values, one row of kWords*16 per output row
  // (dynamic: taller blocks need more than the 48 KB of static memory).
  extern __shared__ uint4 s_dyn[];
  auto s_v = reinterpret_cast<uint32_t(*)[kWords * 8]>(s_dyn);

  const int64_t oy0 = a.y_begin + int64_t(blockIdx.y) * kFastBy;
  const int bx = int(blockIdx.x) - f.left;
  if (bx < 0 || bx >= f.fast) {
    // The edge columns, whose inputs mirror, in the same launch: as kernels
    // of their own they ran after the fast one with a few blocks per row
    // (one level 0.262 -> 0.257 ms, seven 0.473 -> 0.453 ms together).
    const bool left = bx < 0;
    const int64_t ox0 = left ? a.x_begin + int64_t(blockIdx.x) * kBx : f.x1 + int64_t(bx - f.fast) * kBx;
    constexpr size_t kInBytes = (size_t{kInH} * kInW * C + 15) & ~size_t{15};
    static_assert(kInBytes + size_t{kBy} * kInW * C * sizeof(unsigned) <= kFastSmem, "generic tile fits");
    static_assert(kFastBy % kBy == 0, "whole generic tiles");
    auto g_in = reinterpret_cast<uint8_t(*)[kInW * C]>(s_dyn);
    auto g_v = reinterpret_cast<unsigned(*)[kInW * C]>(reinterpret_cast<uint8_t*>(s_dyn) + kInBytes);
    for (int r = 0; r < kFastBy; r += kBy)
      generic_tile<uint8_t, C>(a, ox0, oy0 + r, left ? a.x_begin : f.x1, left ? f.x0 : a.x_end, g_in, g_v);
    return;
  }
  const int64_t ox0 = f.x0 + int64_t(bx) * kBxF;
  const int64_t b0 = (2 * ox0 - 2 - a.in_x0) * C;  // first input byte needed, in held-row coordinates
  const int64_t a0 = b0 & ~int64_t{15};
  const int shift = int(b0 - a0);
  const int words = int((b0 + int64_t(2 * kBxF + 3) * C - a0 + 15) / 16);

  const int w = threadIdx.x % kWords, g = threadIdx.x / kWords;
  if (w < words) {
    uint32_t acc[kGroupRows][8];
#pragma unroll
    for (int j = 0; j < kGroupRows; ++j)
#pragma unroll
      for (int i = 0; i < 8; ++i) acc[j][i] = 0;
    const int64_t iy0 = 2 * (oy0 + g * kGroupRows) - 2;
    constexpr int kRows = 2 * kGroupRows + 3;
    // Almost every group's rows lie inside the level and the chunk: then
    // row k is one multiply-add away. Otherwise (image edges, carry rows)
    // each row is looked up and mirrored, which took ~80 instructions a row.
    const bool inside =
        iy0 >= 0 && iy0 + kRows <= a.in_height && iy0 >= a.chunk.y0 && iy0 + kRows <= a.chunk.y0 + a.chunk.n;
    auto store_row = [&](int j) {
      uint4* dst = reinterpret_cast<uint4*>(&s_v[g * kGroupRows + j][8 * w]);
      dst[0] = make_uint4(acc[j][0], acc[j][1], acc[j][2], acc[j][3]);
      dst[1] = make_uint4(acc[j][4], acc[j][5], acc[j][6], acc[j][7]);
    };
    // Input row k of the group (its 16 bytes at addr) into the sums of the
    // output rows it is a tap of.
    auto add_row = [&](int k, const uint8_t* addr) {
      // Through L1 (not streaming): a group's first three rows are the
      // previous group's last three, read at about the same time (0.246 ->
      // 0.230 ms with the early stores below; __ldcs was 0.262).
      const uint4 q = __ldg(reinterpret_cast<const uint4*>(addr));
      const uint32_t words4[4] = {q.x, q.y, q.z, q.w};
      uint32_t p[8];  // byte pairs (2i, 2i+1) widened to packed 16-bit lanes
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        p[2 * i] = __byte_perm(words4[i], 0, 0x4140);
        p[2 * i + 1] = __byte_perm(words4[i], 0, 0x4342);
      }
#pragma unroll
      for (int j = 0; j < kGroupRows; ++j) {
        const int t = k - 2 * j;  // tap of this input row for output row j
        if (t < 0 || t > 4) continue;
        const uint32_t wt = (t == 2) ? 6u : (t == 1 || t == 3) ? 4u : 1u;
#pragma unroll
        for (int i = 0; i < 8; ++i) acc[j][i] += wt * p[i];
        // Its last tap: store it now and free its registers for the loads.
        if (t == 4) store_row(j);
      }
    };
    // Two unrolled copies, so that the lookups of the rare one cost the
    // common one no registers.
    if (inside) {
      const uint8_t* base = a.chunk.data + size_t(iy0 - a.chunk.y0) * a.chunk.pitch + a0 + 16 * w;
#pragma unroll
      for (int k = 0; k < kRows; ++k) add_row(k, base + k * a.chunk.pitch);
    } else {
      const uint8_t* first = row_ptr(a, a.chunk.y0);
#pragma unroll
      for (int k = 0; k < kRows; ++k) {
        const uint8_t* row = row_ptr(a, reflect101(iy0 + k, a.in_height));
        // Rows past the end serve only outputs that are never stored.
        if (!row) row = first;
        add_row(k, row + a0 + 16 * w);
      }
    }
  }
  __syncthreads();

  // Four whole output pixels per thread: their 11 C vertical sums are one
  // contiguous span, read and summed as 32-bit pairs (quad_from_pairs), and
  // their 4 C bytes go out as C aligned 32-bit stores (the launcher aligns
  // blocks to 4 output pixels).
  constexpr int kQuads = kBxF / 4;
  static_assert(kBxF % 4 == 0, "blocks are whole pixel quads");
  for (int i = threadIdx.x; i < kFastBy * kQuads; i += kThreads) {
    const int j = i / kQuads, xq = (i - j * kQuads) * 4;
    const int64_t oy = oy0 + j;
    if (oy >= a.y_end) break;
    const int first = shift + 2 * xq * C;  // u16 index of the first sum
    const uint32_t* pairs = s_v[j] + (first >> 1);
    uint32_t out[C];
    // Registers must be indexed by constants, so each parity has its own
    // unrolled copy.
    if (first & 1)
      quad_from_pairs<C, 1>(pairs, out);
    else
      quad_from_pairs<C, 0>(pairs, out);
    uint32_t* dst =
        reinterpret_cast<uint32_t*>(a.out + size_t(oy - a.out_y0) * a.out_pitch + size_t(ox0 - a.out_x0 + xq) * C);
#pragma unroll
    for (int c = 0; c < C; ++c) dst[c] = out[c];
  }
}

template <class T, int C>
__global__ void __launch_bounds__(kThreads) reduce_generic(ReduceLaunch a) {
  __shared__ T s_in[kInH][kInW * C];
  __shared__ unsigned s_v[kBy][kInW * C];
  generic_tile<T, C>(a, a.x_begin + int64_t(blockIdx.x) * kBx, a.y_begin + int64_t(blockIdx.y) * kBy, a.x_begin,
                     a.x_end, s_in, s_v);
}

// Any channel count (multiplex slides, 5 to 64 channels): one channel per
// block (blockIdx.z), staged alone, so shared memory does not grow with the
// count; the same integer sums as generic_tile, so it equals the CPU.
template <class T>
__global__ void __launch_bounds__(kThreads) reduce_any_channels(ReduceLaunch a) {
  __shared__ T s_in[kInH][kInW];
  __shared__ unsigned s_v[kBy][kInW];
  const int C = a.fmt.channels, ch = int(blockIdx.z);
  const int64_t ox0 = a.x_begin + int64_t(blockIdx.x) * kBx, oy0 = a.y_begin + int64_t(blockIdx.y) * kBy;
  const int64_t ix0 = 2 * ox0 - 2, iy0 = 2 * oy0 - 2;
  for (int i = threadIdx.x; i < kInH * kInW; i += kThreads) {
    const int r = i / kInW, col = i - r * kInW;
    const int64_t sy = reflect101(iy0 + r, a.in_height);
    const int64_t sx = reflect101(ix0 + col, a.in_width);
    const bool in_carry = sy >= a.carry.y0 && sy < a.carry.y0 + a.carry.n;
    const bool in_chunk = sy >= a.chunk.y0 && sy < a.chunk.y0 + a.chunk.n;
    T v = 0;
    if ((in_carry || in_chunk) && sx >= a.in_x0 && sx < a.in_x0 + a.in_w) {
      const DeviceRows& rows = in_chunk ? a.chunk : a.carry;
      const T* p = reinterpret_cast<const T*>(rows.data + size_t(sy - rows.y0) * rows.pitch);
      v = p[(sx - a.in_x0) * C + ch];
    }
    s_in[r][col] = v;
  }
  __syncthreads();
  for (int i = threadIdx.x; i < kBy * kInW; i += kThreads) {
    const int j = i / kInW, c = i - j * kInW;
    s_v[j][c] = unsigned(s_in[2 * j][c]) + unsigned(s_in[2 * j + 4][c]) +
                4u * (unsigned(s_in[2 * j + 1][c]) + unsigned(s_in[2 * j + 3][c])) + 6u * unsigned(s_in[2 * j + 2][c]);
  }
  __syncthreads();
  for (int i = threadIdx.x; i < kBy * kBx; i += kThreads) {
    const int j = i / kBx, x = i - j * kBx;
    const int64_t oy = oy0 + j, ox = ox0 + x;
    if (oy >= a.y_end || ox >= a.x_end) continue;
    const unsigned* v = &s_v[j][2 * x];
    const unsigned s = v[0] + v[4] + 4u * (v[1] + v[3]) + 6u * v[2] + 128u;
    T* out = reinterpret_cast<T*>(a.out + size_t(oy - a.out_y0) * a.out_pitch);
    out[(ox - a.out_x0) * C + ch] = T(s >> 8);
  }
}

template <class T>
void launch_generic(const ReduceLaunch& a, cudaStream_t s) {
  if (a.y_end <= a.y_begin || a.x_end <= a.x_begin) return;
  const dim3 grid(unsigned((a.x_end - a.x_begin + kBx - 1) / kBx), unsigned((a.y_end - a.y_begin + kBy - 1) / kBy));
  if (a.fmt.channels > 4) {
    if (a.fmt.channels > 65535) throw InputError("REDUCE on the GPU: too many channels");
    reduce_any_channels<T><<<dim3(grid.x, grid.y, unsigned(a.fmt.channels)), kThreads, 0, s>>>(a);
    TW_CUDA_CHECK_LAUNCH();
    return;
  }
  switch (a.fmt.channels) {
    case 1:
      reduce_generic<T, 1><<<grid, kThreads, 0, s>>>(a);
      break;
    case 2:
      reduce_generic<T, 2><<<grid, kThreads, 0, s>>>(a);
      break;
    case 3:
      reduce_generic<T, 3><<<grid, kThreads, 0, s>>>(a);
      break;
    case 4:
      reduce_generic<T, 4><<<grid, kThreads, 0, s>>>(a);
      break;
    default:
      TW_ASSERT(false);  // more than 4: reduce_any_channels above
  }
  TW_CUDA_CHECK_LAUNCH();
}

// The fast blocks take whole spans whose input lies inside the held columns
// and the level; generic tiles in the same launch take the columns either
// side.
template <int C>
void launch_u8(const ReduceLaunch& a, cudaStream_t s) {
  constexpr int64_t bx = fast_bx<C>();
  // Input columns that can be read: held, and inside the level.
  const int64_t lo = std::max<int64_t>(0, a.in_x0), end = std::min(a.in_width, a.in_x0 + a.in_w);
  // Output x needs inputs 2x-2 .. 2x+2; blocks start 4-pixel aligned in the
  // output buffer so their 32-bit stores are aligned.
  int64_t f0 = std::max(a.x_begin, (lo + 3) / 2);
  f0 = a.out_x0 + (f0 - a.out_x0 + 3) / 4 * 4;
  const int64_t last = (end - 3) / 2;  // last x whose inputs all lie inside
  int64_t nb = last >= f0 ? (last - f0 + 1) / bx : 0;
  nb = std::min(nb, std::max<int64_t>(0, (a.x_end - f0) / bx));
  const bool aligned = a.out_pitch % 4 == 0 && reinterpret_cast<uintptr_t>(a.out) % 4 == 0;
  if (nb <= 0 || end - 3 < 0 || !aligned) {
    launch_generic<uint8_t>(a, s);
    return;
  }
  FastSplit f;
  f.x0 = f0, f.x1 = f0 + nb * bx;
  f.left = int((f0 - a.x_begin + kBx - 1) / kBx), f.fast = int(nb);
  const int64_t right = (a.x_end - f.x1 + kBx - 1) / kBx;
  const dim3 grid(unsigned(f.left + nb + right), unsigned((a.y_end - a.y_begin + kFastBy - 1) / kFastBy));
  static const bool smem_ok = [] {
    return cudaFuncSetAttribute(reduce_u8_fast<C>, cudaFuncAttributeMaxDynamicSharedMemorySize, int(kFastSmem)) ==
           cudaSuccess;
  }();
  if (!smem_ok) TW_CUDA_CHECK(cudaGetLastError());
  reduce_u8_fast<C><<<grid, kThreads, kFastSmem, s>>>(a, f);
  TW_CUDA_CHECK_LAUNCH();
}

}  // namespace

void reduce_rows_cuda(const ReduceLaunch& a, cudaStream_t stream) {
  if (a.y_end <= a.y_begin || a.x_end <= a.x_begin) return;
  if (a.fmt.type == SampleType::kU8) {
    switch (a.fmt.channels) {
      case 1:
        return launch_u8<1>(a, stream);
      case 2:
        return launch_u8<2>(a, stream);
      case 3:
        return launch_u8<3>(a, stream);
      case 4:
        return launch_u8<4>(a, stream);
      default:
        break;
    }
  }
  if (a.fmt.type == SampleType::kU16) return launch_generic<uint16_t>(a, stream);
  if (a.fmt.type == SampleType::kU8) return launch_generic<uint8_t>(a, stream);
  throw InputError(std::string("REDUCE supports 8- and 16-bit samples, not ") + sample_name(a.fmt.type));
}

}  // namespace tw
