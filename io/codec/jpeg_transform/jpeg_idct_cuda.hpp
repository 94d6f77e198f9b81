#pragma once
// The GPU half of a JPEG tile decode (engine/jpeg_coefs.hpp): from the
// entropy decoder's quantised coefficients to RGB (or gray) pixels, with
// libjpeg-turbo's arithmetic: its accurate integer IDCT (jidctint.c, with
// the post-IDCT range limit), "fancy" triangle-filter chroma upsampling
// (jdsample.c) and fixed-point YCbCr -> RGB (jdcolor.c). libjpeg-turbo's
// SIMD code gives the same results as its C code for valid streams, and so
// do these kernels: pixel for pixel what the CPU decoder makes.
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "engine/jpeg_coefs.hpp"

namespace tw {

struct JpegIdctLaunch {
  JpegCoefLayout layout;
  int tiles = 0;                    // side by side, tile i's pixels from column i * layout.tile
  const int16_t* coefs = nullptr;   // tiles x layout.coefs_per_tile(), device
  const uint16_t* quant = nullptr;  // tiles x layout.quant_per_tile(), device
  uint8_t* planes = nullptr;        // scratch: tiles x jpeg_idct_plane_bytes(layout), device
  uint8_t* out = nullptr;           // pixels (layout.components channels), device
  size_t out_pitch = 0;
  int64_t out_w = 0;  // columns to write (the band's width: edge tiles are clipped)
  int64_t rows = 0;   // rows to write (<= layout.tile)
};

// Device scratch each tile needs for its decoded component planes.
size_t jpeg_idct_plane_bytes(const JpegCoefLayout& layout);

// Enqueues the decode on `stream`.
void jpeg_idct_cuda(const JpegIdctLaunch& a, cudaStream_t stream);

}  // namespace tw
