#include "engine/cuda/cuda_check.hpp"
#include "io/codec/jpeg_transform/jpeg_fdct_cuda.hpp"
#include "io/codec/jpeg_transform/jpeg_fdct_math.hpp"

namespace tw {
namespace {

struct Geometry {
  int components, tile;
  bool h2v2;
  int bw[3];
  int boff[4];
};

__device__ __forceinline__ const uint8_t* pixel(const JpegFdctLaunch& a, int t, int x, int y) {
  long long px = static_cast<long long>(t) * a.layout.tile + x, py = y;
  if (px > a.width - 1) px = a.width - 1;
  if (py > a.rows - 1) py = a.rows - 1;
  return a.band + py * a.pitch + px * a.layout.components;
}

__device__ __forceinline__ int component(const uint8_t* p, int c, int channels) {
  if (channels == 1) return p[0];
  int y, cb, cr;
  jfdct::rgb_to_ycc(p[0], p[1], p[2], y, cb, cr);
  return c == 0 ? y : (c == 1 ? cb : cr);
}

// One thread per 8x8 block of one component of one tile.
__global__ void fdct_blocks(JpegFdctLaunch a, Geometry g) {
  const long long id = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
  const int per_tile = g.boff[g.components];
  if (id >= static_cast<long long>(a.tiles) * per_tile) return;
  const int t = static_cast<int>(id / per_tile), b = static_cast<int>(id % per_tile);
  const int c = b < g.boff[1] ? 0 : (b < g.boff[2] ? 1 : 2);
  const int local = b - g.boff[c];
  const int by = local / g.bw[c], bx = local % g.bw[c];
  const bool down = c > 0 && g.h2v2;
  int16_t d[64];
  for (int r = 0; r < 8; ++r)
    for (int k = 0; k < 8; ++k) {
      const int y = by * 8 + r, x = bx * 8 + k;
      int v;
      if (down) {
        v = jfdct::average4(component(pixel(a, t, 2 * x, 2 * y), c, g.components),
                            component(pixel(a, t, 2 * x + 1, 2 * y), c, g.components),
                            component(pixel(a, t, 2 * x, 2 * y + 1), c, g.components),
                            component(pixel(a, t, 2 * x + 1, 2 * y + 1), c, g.components), x);
      } else {
        v = component(pixel(a, t, x, y), c, g.components);
      }
      d[r * 8 + k] = static_cast<int16_t>(v - 128);
    }
  jfdct::fdct_islow(d);
  int16_t* out = a.coefs + id * 64;
  const jfdct::Divisor* div = a.divisors + c * 64;
  for (int k = 0; k < 64; ++k) out[k] = jfdct::quantize(d[k], div[k]);
}

}  // namespace

size_t jpeg_fdct_divisor_bytes(const JpegCoefLayout& layout) {
  return static_cast<size_t>(layout.components) * 64 * sizeof(jfdct::Divisor);
}

void jpeg_fdct_divisors(const JpegCoefLayout& layout, const uint16_t* quant, void* host_out) {
  auto* d = static_cast<jfdct::Divisor*>(host_out);
  for (size_t i = 0; i < layout.quant_per_tile(); ++i) d[i] = jfdct::divisor_for(quant[i]);
}

void jpeg_fdct_cuda(const JpegFdctLaunch& a, cudaStream_t stream) {
  if (a.tiles <= 0 || a.rows <= 0 || a.width <= 0) return;
  Geometry g{};
  g.components = a.layout.components;
  g.tile = static_cast<int>(a.layout.tile);
  g.h2v2 = a.layout.components == 3 && a.layout.h_samp == 2;
  for (int c = 0; c < g.components; ++c) {
    g.bw[c] = static_cast<int>(a.layout.blocks_w(c));
    g.boff[c] = static_cast<int>(a.layout.block_offset(c));
  }
  g.boff[g.components] = static_cast<int>(a.layout.blocks_per_tile());
  const long long blocks = static_cast<long long>(a.tiles) * g.boff[g.components];
  const int threads = 128;
  fdct_blocks<<<static_cast<unsigned>((blocks + threads - 1) / threads), threads, 0, stream>>>(a, g);
  TW_CUDA_CHECK_LAUNCH();
}

}  // namespace tw
