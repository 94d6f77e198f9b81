#include <cub/block/block_scan.cuh>
#include <cub/device/device_scan.cuh>

#include "engine/cuda/cuda_check.hpp"
#include "io/codec/jpeg_transform/jpeg_huffman.hpp"
#include "io/codec/jpeg_transform/jpeg_huffman_cuda.hpp"

namespace tw {
namespace {

__constant__ uint8_t kNatural[64] = TW_JPEG_NATURAL_ORDER;

constexpr int kStuffThreads = 256;

size_t align256(size_t n) {
  return (n + 255) / 256 * 256;
}

// The scratch's parts: each tile's unstuffed bits (as much room as its
// coefficients), the blocks' bit lengths and their prefix sums (one more
// than blocks: the last is the band's total), a refusal flag per tile, and
// the scan's own temporary storage.
struct Parts {
  uint32_t* words;
  uint64_t* lens;
  uint64_t* offsets;
  uint32_t* refused;
  void* scan_tmp;
  size_t scan_bytes, words_bytes;
};

size_t scan_tmp_bytes(size_t n) {
  size_t bytes = 0;
  TW_CUDA_CHECK(cub::DeviceScan::ExclusiveSum(nullptr, bytes, static_cast<const uint64_t*>(nullptr),
                                              static_cast<uint64_t*>(nullptr), static_cast<int64_t>(n)));
  return bytes;
}

Parts carve(const JpegCoefLayout& l, int tiles, uint8_t* base, size_t* total = nullptr) {
  const size_t cap = l.coefs_per_tile() * sizeof(int16_t);
  const size_t n = static_cast<size_t>(tiles) * l.blocks_per_tile() + 1;
  Parts p{};
  size_t at = 0;
  auto take = [&](size_t bytes) {
    uint8_t* q = base ? base + at : nullptr;
    at += align256(bytes);
    return q;
  };
  p.words_bytes = cap * static_cast<size_t>(tiles);
  p.words = reinterpret_cast<uint32_t*>(take(p.words_bytes));
  p.lens = reinterpret_cast<uint64_t*>(take(n * sizeof(uint64_t)));
  p.offsets = reinterpret_cast<uint64_t*>(take(n * sizeof(uint64_t)));
  p.refused = reinterpret_cast<uint32_t*>(take(static_cast<size_t>(tiles) * sizeof(uint32_t)));
  p.scan_bytes = scan_tmp_bytes(n);
  p.scan_tmp = take(p.scan_bytes);
  if (total) *total = at;
  return p;
}

struct Geometry {
  jhuff::Order order;
  int tiles;
  size_t cap;  // bytes of a tile's coefficients: the room for its segment
};

__device__ __forceinline__ int last_dc(const int16_t* tile, const jhuff::Order& o, const jhuff::BlockRef& b) {
  return b.prev < 0 ? 0 : tile[jhuff::locate(o, b.prev).index * 64];
}

// One thread per block of one tile, in coding order: its bit length.
__global__ void count_bits(const int16_t* coefs, const JpegHuffCodes* codes, Geometry g, uint64_t* lens,
                           uint32_t* refused) {
  const long long id = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
  const int per = g.order.blocks;
  if (id >= static_cast<long long>(g.tiles) * per) return;
  const int t = static_cast<int>(id / per), q = static_cast<int>(id % per);
  const int16_t* tile = coefs + static_cast<size_t>(t) * per * 64;
  const jhuff::BlockRef b = jhuff::locate(g.order, q);
  jhuff::CountBits count;
  if (!jhuff::code_block(tile + b.index * 64, last_dc(tile, g.order, b), codes[b.comp], kNatural, count))
    refused[t] = 1;
  lens[id] = count.bits;
}

__device__ __forceinline__ void or_big_endian(uint32_t* w, uint32_t v) {
  atomicOr(w, __byte_perm(v, 0, 0x0123));
}

// One thread per block again: its bits at their place in the tile's words.
__global__ void write_bits(const int16_t* coefs, const JpegHuffCodes* codes, Geometry g, const uint64_t* offsets,
                           const uint32_t* refused, uint32_t* words) {
  const long long id = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
  const int per = g.order.blocks;
  if (id >= static_cast<long long>(g.tiles) * per) return;
  const int t = static_cast<int>(id / per), q = static_cast<int>(id % per);
  const uint64_t start = offsets[static_cast<size_t>(t) * per],
                 bits = offsets[static_cast<size_t>(t + 1) * per] - start;
  if (refused[t] || (bits + 7) / 8 > g.cap) return;
  const int16_t* tile = coefs + static_cast<size_t>(t) * per * 64;
  const jhuff::BlockRef b = jhuff::locate(g.order, q);
  auto put = [](uint32_t* w, uint32_t v) { or_big_endian(w, v); };
  jhuff::BitSink<decltype(put)> sink(put, words + static_cast<size_t>(t) * (g.cap / 4), offsets[id] - start);
  jhuff::code_block(tile + b.index * 64, last_dc(tile, g.order, b), codes[b.comp], kNatural, sink);
  if (q == per - 1 && bits % 8) sink((1u << (8 - bits % 8)) - 1, static_cast<int>(8 - bits % 8));  // 1-bit padding
  sink.flush();
}

// One thread block per tile: the bytes with a 0 after each 0xFF, over the
// tile's coefficients (all read by now), and the segment's size.
__global__ void stuff_bytes(int16_t* coefs, Geometry g, const uint64_t* offsets, const uint32_t* refused,
                            const uint32_t* words, uint32_t* sizes) {
  using Scan = cub::BlockScan<uint32_t, kStuffThreads>;
  __shared__ typename Scan::TempStorage tmp;
  const int t = blockIdx.x, per = g.order.blocks;
  const uint64_t bits = offsets[static_cast<size_t>(t + 1) * per] - offsets[static_cast<size_t>(t) * per];
  const uint64_t n = (bits + 7) / 8;
  if (refused[t] || n > g.cap) {  // the same for the whole block
    if (threadIdx.x == 0) sizes[t] = kJpegTileAsCoefficients;
    return;
  }
  const uint8_t* src = reinterpret_cast<const uint8_t*>(words + static_cast<size_t>(t) * (g.cap / 4));
  const uint64_t chunk = (n + kStuffThreads - 1) / kStuffThreads;
  const uint64_t b0 = min(n, threadIdx.x * chunk), b1 = min(n, b0 + chunk);
  uint32_t ff = 0;
  for (uint64_t i = b0; i < b1; ++i) ff += src[i] == 0xFF;
  uint32_t before = 0, all = 0;
  Scan(tmp).ExclusiveSum(ff, before, all);
  if (n + all > g.cap) {
    if (threadIdx.x == 0) sizes[t] = kJpegTileAsCoefficients;
    return;
  }
  uint8_t* dst = reinterpret_cast<uint8_t*>(coefs) + static_cast<size_t>(t) * g.cap + b0 + before;
  for (uint64_t i = b0; i < b1; ++i) {
    const uint8_t v = src[i];
    *dst++ = v;
    if (v == 0xFF) *dst++ = 0;
  }
  if (threadIdx.x == 0) sizes[t] = static_cast<uint32_t>(n + all);
}

}  // namespace

size_t jpeg_huffman_scratch_bytes(const JpegCoefLayout& layout, int tiles) {
  size_t total = 0;
  carve(layout, tiles, nullptr, &total);
  return total;
}

void jpeg_huffman_cuda(const JpegHuffLaunch& a, cudaStream_t stream) {
  if (a.tiles <= 0) return;
  Geometry g{jhuff::make_order(a.layout), a.tiles, a.layout.coefs_per_tile() * sizeof(int16_t)};
  Parts p = carve(a.layout, a.tiles, a.scratch);
  const long long blocks = static_cast<long long>(a.tiles) * g.order.blocks;
  const int threads = 128;
  const unsigned grid = static_cast<unsigned>((blocks + threads - 1) / threads);
  TW_CUDA_CHECK(cudaMemsetAsync(p.refused, 0, static_cast<size_t>(a.tiles) * sizeof(uint32_t), stream));
  TW_CUDA_CHECK(cudaMemsetAsync(p.lens + blocks, 0, sizeof(uint64_t), stream));
  TW_CUDA_CHECK(cudaMemsetAsync(p.words, 0, p.words_bytes, stream));
  count_bits<<<grid, threads, 0, stream>>>(a.coefs, a.codes, g, p.lens, p.refused);
  TW_CUDA_CHECK_LAUNCH();
  size_t scan_bytes = p.scan_bytes;
  TW_CUDA_CHECK(cub::DeviceScan::ExclusiveSum(p.scan_tmp, scan_bytes, p.lens, p.offsets, blocks + 1, stream));
  write_bits<<<grid, threads, 0, stream>>>(a.coefs, a.codes, g, p.offsets, p.refused, p.words);
  TW_CUDA_CHECK_LAUNCH();
  stuff_bytes<<<static_cast<unsigned>(a.tiles), kStuffThreads, 0, stream>>>(a.coefs, g, p.offsets, p.refused, p.words,
                                                                            a.sizes);
  TW_CUDA_CHECK_LAUNCH();
}

}  // namespace tw
