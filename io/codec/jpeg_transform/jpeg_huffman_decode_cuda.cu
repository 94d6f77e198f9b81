#include "engine/cuda/cuda_check.hpp"
#include "io/codec/jpeg_transform/jpeg_huffman_decode_cuda.hpp"

namespace tw {
namespace {

// A thread a tile: the scan is serial within a tile. The tables stay in
// global memory (read-only, in L1 once the first tile touched them); the
// zigzag order is in shared memory, which indexes it per thread without the
// constant cache's serialisation.
__global__ void decode_tiles(JpegDecodeLaunch a, jhuff::Order o, size_t cpt) {
  __shared__ uint8_t natural[80];
  constexpr uint8_t kNatural[80] = TW_JPEG_NATURAL_ORDER_GUARDED;
  for (int i = threadIdx.x; i < 80; i += blockDim.x) natural[i] = kNatural[i];
  __syncthreads();
  const int t = blockIdx.x * blockDim.x + threadIdx.x;
  if (t >= a.tiles) return;
  const JpegDecodeTile rec = a.tile[t];
  if (rec.set == kJpegDecodeNoSet) {
    a.status[t] = kJpegDecodeOk;
    return;
  }
  const JpegHuffDecTable* set = a.tables + static_cast<size_t>(rec.set) * 2 * o.comps;
  a.status[t] = jhuff::decode_tile(o, a.bytes + rec.offset, rec.size, rec.scan, jhuff::dec_tables(set, o.comps),
                                   natural, a.coefs + static_cast<size_t>(t) * cpt);
}

}  // namespace

void jpeg_decode_cuda(const JpegDecodeLaunch& a, cudaStream_t stream) {
  if (a.tiles <= 0) return;
  if (!a.zeroed)
    TW_CUDA_CHECK(cudaMemsetAsync(a.coefs, 0, static_cast<size_t>(a.tiles) * a.layout.coefs_per_tile() * 2, stream));
  constexpr int kThreads = 32;
  decode_tiles<<<(a.tiles + kThreads - 1) / kThreads, kThreads, 0, stream>>>(a, jhuff::make_order(a.layout),
                                                                             a.layout.coefs_per_tile());
  TW_CUDA_CHECK(cudaGetLastError());
}

}  // namespace tw
