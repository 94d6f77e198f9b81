#include "engine/cuda/cuda_check.hpp"
#include "io/codec/jpeg_transform/jpeg_idct_cuda.hpp"

namespace tw {
namespace {

// jidctint.c's constants: CONST_BITS 13, PASS1_BITS 2 for 8-bit samples.
constexpr int kConstBits = 13, kPass1Bits = 2;
constexpr long long kFix0_298631336 = 2446, kFix0_390180644 = 3196, kFix0_541196100 = 4433, kFix0_765366865 = 6270,
                    kFix0_899976223 = 7373, kFix1_175875602 = 9633, kFix1_501321110 = 12299, kFix1_847759065 = 15137,
                    kFix1_961570560 = 16069, kFix2_053119869 = 16819, kFix2_562915447 = 20995, kFix3_072711026 = 25172;

__device__ __forceinline__ long long descale(long long x, int n) {
  return (x + (1LL << (n - 1))) >> n;
}

// jdmaster.c's post-IDCT range-limit table, as a function of the IDCT's
// output v (sample - 128): the table is indexed by v & 1023, so values far
// out of range wrap the way they do on the CPU.
__device__ __forceinline__ uint8_t idct_limit(long long v) {
  const int i = static_cast<int>(v & 1023);
  if (i < 128) return static_cast<uint8_t>(i + 128);
  if (i < 512) return 255;
  if (i < 896) return 0;
  return static_cast<uint8_t>(i - 896);
}

// One 1-D pass of the Loeffler-Ligtenberg-Moschytz IDCT (jidctint.c), on
// inputs already dequantised (pass 1) or scaled (pass 2); the outputs are
// left unscaled (the caller descales them).
__device__ __forceinline__ void idct_1d(long long i0, long long i1, long long i2, long long i3, long long i4,
                                        long long i5, long long i6, long long i7, long long o[8]) {
  long long z2 = i2, z3 = i6;
  long long z1 = (z2 + z3) * kFix0_541196100;
  long long tmp2 = z1 + z3 * -kFix1_847759065;
  long long tmp3 = z1 + z2 * kFix0_765366865;
  long long tmp0 = (i0 + i4) * (1LL << kConstBits);
  long long tmp1 = (i0 - i4) * (1LL << kConstBits);
  const long long tmp10 = tmp0 + tmp3, tmp13 = tmp0 - tmp3, tmp11 = tmp1 + tmp2, tmp12 = tmp1 - tmp2;
  tmp0 = i7, tmp1 = i5, tmp2 = i3, tmp3 = i1;
  z1 = tmp0 + tmp3;
  z2 = tmp1 + tmp2;
  z3 = tmp0 + tmp2;
  long long z4 = tmp1 + tmp3;
  const long long z5 = (z3 + z4) * kFix1_175875602;
  tmp0 *= kFix0_298631336;
  tmp1 *= kFix2_053119869;
  tmp2 *= kFix3_072711026;
  tmp3 *= kFix1_501321110;
  z1 *= -kFix0_899976223;
  z2 *= -kFix2_562915447;
  z3 = z3 * -kFix1_961570560 + z5;
  z4 = z4 * -kFix0_390180644 + z5;
  tmp0 += z1 + z3;
  tmp1 += z2 + z4;
  tmp2 += z2 + z3;
  tmp3 += z1 + z4;
  o[0] = tmp10 + tmp3, o[7] = tmp10 - tmp3;
  o[1] = tmp11 + tmp2, o[6] = tmp11 - tmp2;
  o[2] = tmp12 + tmp1, o[5] = tmp12 - tmp1;
  o[3] = tmp13 + tmp0, o[4] = tmp13 - tmp0;
}

struct Geometry {
  int components;
  int bw[3], bh[3];    // blocks across and down, per component
  int boff[4];         // first block of each component within a tile
  size_t poff[3];      // first byte of each component's plane within a tile's planes
  size_t plane_bytes;  // per tile
};

Geometry geometry(const JpegCoefLayout& l) {
  Geometry g{};
  g.components = l.components;
  size_t p = 0;
  for (int c = 0; c < l.components; ++c) {
    g.bw[c] = static_cast<int>(l.blocks_w(c));
    g.bh[c] = static_cast<int>(l.blocks_h(c));
    g.boff[c] = static_cast<int>(l.block_offset(c));
    g.poff[c] = p;
    p += static_cast<size_t>(g.bw[c]) * g.bh[c] * 64;
  }
  g.boff[l.components] = static_cast<int>(l.blocks_per_tile());
  g.plane_bytes = p;
  return g;
}

// One thread per 8x8 block: dequantise, IDCT, range-limit into the plane.
__global__ void idct_blocks(Geometry g, int tiles, const int16_t* __restrict__ coefs,
                            const uint16_t* __restrict__ quant, uint8_t* __restrict__ planes) {
  const long long id = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
  const int per_tile = g.boff[g.components];
  if (id >= static_cast<long long>(tiles) * per_tile) return;
  const int tile = static_cast<int>(id / per_tile);
  const int b = static_cast<int>(id % per_tile);
  const int c = b < g.boff[1] ? 0 : (b < g.boff[2] ? 1 : 2);
  const int local = b - g.boff[c];
  const int br = local / g.bw[c], bc = local % g.bw[c];
  const int16_t* in = coefs + (static_cast<size_t>(tile) * per_tile + b) * 64;
  const uint16_t* q = quant + static_cast<size_t>(tile) * g.components * 64 + c * 64;
  const size_t pw = static_cast<size_t>(g.bw[c]) * 8;
  uint8_t* out = planes + static_cast<size_t>(tile) * g.plane_bytes + g.poff[c] + br * 8 * pw + bc * 8;

  int ws[64];
  for (int col = 0; col < 8; ++col) {
    long long v[8];
    for (int r = 0; r < 8; ++r) v[r] = static_cast<long long>(in[r * 8 + col]) * q[r * 8 + col];
    long long o[8];
    idct_1d(v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7], o);
    for (int r = 0; r < 8; ++r) ws[r * 8 + col] = static_cast<int>(descale(o[r], kConstBits - kPass1Bits));
  }
  for (int r = 0; r < 8; ++r) {
    const int* w = ws + r * 8;
    long long o[8];
    idct_1d(w[0], w[1], w[2], w[3], w[4], w[5], w[6], w[7], o);
    uint8_t* row = out + r * pw;
    for (int x = 0; x < 8; ++x) row[x] = idct_limit(descale(o[x], kConstBits + kPass1Bits + 3));
  }
}

// jdcolor.c's tables, computed per pixel (SCALEBITS 16).
constexpr long long kOneHalf = 1LL << 15;
// FIX(x) = (long)(x * 65536 + 0.5), as jdcolor.c computes them.
constexpr long long kCrR = static_cast<long long>(1.40200 * 65536.0 + 0.5);
constexpr long long kCbB = static_cast<long long>(1.77200 * 65536.0 + 0.5);
constexpr long long kCrG = static_cast<long long>(0.71414 * 65536.0 + 0.5);
constexpr long long kCbG = static_cast<long long>(0.34414 * 65536.0 + 0.5);

__device__ __forceinline__ uint8_t clamp255(int v) {
  return static_cast<uint8_t>(v < 0 ? 0 : (v > 255 ? 255 : v));
}

// One thread per output pixel: upsample the chroma (jdsample.c's
// h2v2_fancy_upsample: a triangle filter over the nearest chroma row and
// the next nearest, edges replicated within the tile) and convert to RGB.
__global__ void to_pixels(Geometry g, int tile, const uint8_t* __restrict__ planes, uint8_t* __restrict__ out,
                          size_t out_pitch, long long out_w, int rows, bool h2v2) {
  const long long x = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
  const int y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x >= out_w || y >= rows) return;
  const int t = static_cast<int>(x / tile), lx = static_cast<int>(x % tile);
  const uint8_t* p = planes + static_cast<size_t>(t) * g.plane_bytes;
  const int yv = p[static_cast<size_t>(y) * g.bw[0] * 8 + lx];
  uint8_t* o = out + static_cast<size_t>(y) * out_pitch;
  if (g.components == 1) {
    o[x] = static_cast<uint8_t>(yv);
    return;
  }
  int cb, cr;
  if (!h2v2) {
    const size_t i = static_cast<size_t>(y) * g.bw[1] * 8 + lx;
    cb = p[g.poff[1] + i], cr = p[g.poff[2] + i];
  } else {
    const int cw = g.bw[1] * 8, ch = g.bh[1] * 8;
    const int i = y >> 1, j = lx >> 1;
    const int nb = (y & 1) ? min(i + 1, ch - 1) : max(i - 1, 0);
    const int jn = (lx & 1) ? min(j + 1, cw - 1) : max(j - 1, 0);
    const int bias = (lx & 1) ? 7 : 8;
    const size_t o0 = static_cast<size_t>(i) * cw, o1 = static_cast<size_t>(nb) * cw;
    const uint8_t* cbp = p + g.poff[1];
    const uint8_t* crp = p + g.poff[2];
    // Column sums: 3 x the nearest chroma row + the next nearest.
    const int cb_j = 3 * cbp[o0 + j] + cbp[o1 + j], cb_n = 3 * cbp[o0 + jn] + cbp[o1 + jn];
    const int cr_j = 3 * crp[o0 + j] + crp[o1 + j], cr_n = 3 * crp[o0 + jn] + crp[o1 + jn];
    cb = (3 * cb_j + cb_n + bias) >> 4;
    cr = (3 * cr_j + cr_n + bias) >> 4;
  }
  const long long xb = cb - 128, xr = cr - 128;
  const int r_add = static_cast<int>((kCrR * xr + kOneHalf) >> 16);
  const int b_add = static_cast<int>((kCbB * xb + kOneHalf) >> 16);
  const int g_add = static_cast<int>((-kCbG * xb + kOneHalf + -kCrG * xr) >> 16);
  uint8_t* px = o + 3 * x;
  px[0] = clamp255(yv + r_add);
  px[1] = clamp255(yv + g_add);
  px[2] = clamp255(yv + b_add);
}

}  // namespace

size_t jpeg_idct_plane_bytes(const JpegCoefLayout& layout) {
  return geometry(layout).plane_bytes;
}

void jpeg_idct_cuda(const JpegIdctLaunch& a, cudaStream_t stream) {
  if (a.tiles <= 0 || a.rows <= 0 || a.out_w <= 0) return;
  const Geometry g = geometry(a.layout);
  const long long blocks = static_cast<long long>(a.tiles) * g.boff[g.components];
  const int threads = 128;
  idct_blocks<<<static_cast<unsigned>((blocks + threads - 1) / threads), threads, 0, stream>>>(g, a.tiles, a.coefs,
                                                                                               a.quant, a.planes);
  TW_CUDA_CHECK_LAUNCH();
  const dim3 block(64, 4);
  const dim3 grid(static_cast<unsigned>((a.out_w + block.x - 1) / block.x),
                  static_cast<unsigned>((a.rows + block.y - 1) / block.y));
  to_pixels<<<grid, block, 0, stream>>>(g, static_cast<int>(a.layout.tile), a.planes, a.out, a.out_pitch, a.out_w,
                                        static_cast<int>(a.rows), a.layout.h_samp == 2);
  TW_CUDA_CHECK_LAUNCH();
}

}  // namespace tw
