#pragma once
// The entropy half of a JPEG tile decode on the GPU (jpeg_huffman_decode.hpp):
// a thread a tile reads its scan into the tile's quantised coefficients, the
// layout jpeg_idct_cuda finishes. A tile the decoder gives up on (status
// kJpegDecodeRefused) is left for libjpeg on the CPU.
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "engine/jpeg_coefs.hpp"
#include "io/codec/jpeg_transform/jpeg_huffman_decode.hpp"

namespace tw {

// A tile's stream within the launch's bytes; `set`: its tables, or
// kJpegDecodeNoSet for a tile the kernel skips (decoded elsewhere).
struct JpegDecodeTile {
  uint32_t offset, size, scan, set;
};
constexpr uint32_t kJpegDecodeNoSet = 0xFFFFFFFFu;

struct JpegDecodeLaunch {
  JpegCoefLayout layout;
  int tiles = 0;
  const uint8_t* bytes = nullptr;            // device: the tiles' streams
  const JpegDecodeTile* tile = nullptr;      // device: one per tile
  const JpegHuffDecTable* tables = nullptr;  // device: per set, each component's DC then AC table
  int16_t* coefs = nullptr;                  // device: tiles x layout.coefs_per_tile(), zeroed here first
  uint32_t* status = nullptr;                // device: one per tile
  bool zeroed = false;                       // coefs are zeros already
};

void jpeg_decode_cuda(const JpegDecodeLaunch& a, cudaStream_t stream);

}  // namespace tw
