#pragma once
// The forward half of a JPEG encode on the GPU (jpeg_fdct_math.hpp): a band
// of a pyramid level, on the device, to the quantised coefficients of its
// tiles, which the CPU then only entropy-codes (JpegEncoder::
// encode_coefficients). Tiles past the level's right or bottom edge are
// padded by repeating the last column and row, as the CPU pads them.
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "engine/jpeg_coefs.hpp"

namespace tw {

namespace jfdct {
struct Divisor;
}

struct JpegFdctLaunch {
  JpegCoefLayout layout;
  const uint8_t* band = nullptr;  // device pixels (layout.components channels), column 0 = tile 0's first
  size_t pitch = 0;
  int64_t width = 0;                         // valid columns
  int64_t rows = 0;                          // valid rows (<= layout.tile)
  int tiles = 0;                             // tiles across
  const jfdct::Divisor* divisors = nullptr;  // device: 64 per component (jpeg_fdct_divisors)
  int16_t* coefs = nullptr;                  // device: tiles x layout.coefs_per_tile()
};

// The divisor table for quant (layout.quant_per_tile() values), to copy to the device.
size_t jpeg_fdct_divisor_bytes(const JpegCoefLayout& layout);
void jpeg_fdct_divisors(const JpegCoefLayout& layout, const uint16_t* quant, void* host_out);

void jpeg_fdct_cuda(const JpegFdctLaunch& a, cudaStream_t stream);

}  // namespace tw
