#pragma once
// The entropy half of a JPEG tile encode on the GPU (jpeg_huffman.hpp): the
// coefficients jpeg_fdct_cuda made, in place, to each tile's entropy-coded
// segment with 0xFF bytes stuffed, so that a tile comes home as the bytes
// of its stream between JpegCoefSpec::head and EOI, libjpeg-turbo's own. A
// tile whose segment would not fit its coefficients' room (noise at quality
// near 100), or that has a value beyond baseline's range, keeps its
// coefficients for the CPU (sizes says which).
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "engine/jpeg_coefs.hpp"

namespace tw {

struct JpegHuffLaunch {
  JpegCoefLayout layout;
  int tiles = 0;
  int16_t* coefs = nullptr;              // device: tiles x layout.coefs_per_tile(); tile t's segment at its first byte
  uint32_t* sizes = nullptr;             // device: tiles; a segment's bytes, or kJpegTileAsCoefficients
  const JpegHuffCodes* codes = nullptr;  // device: one per component
  uint8_t* scratch = nullptr;            // device: jpeg_huffman_scratch_bytes(layout, tiles)
};

size_t jpeg_huffman_scratch_bytes(const JpegCoefLayout& layout, int tiles);

void jpeg_huffman_cuda(const JpegHuffLaunch& a, cudaStream_t stream);

}  // namespace tw
