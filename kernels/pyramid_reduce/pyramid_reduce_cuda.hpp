#pragma once
// REDUCE on the GPU, the same exact integer arithmetic as the CPU kernel
// (pyramid_reduce.hpp), so both backends agree pixel for pixel.
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "engine/pixel.hpp"

namespace tw {

// Rows [y0, y0 + n) of a level held on the device, starting at the first
// held column; pitch in bytes.
struct DeviceRows {
  const uint8_t* data = nullptr;
  size_t pitch = 0;
  int64_t y0 = 0, n = 0;
};

struct ReduceLaunch {
  PixelFormat fmt;
  int64_t in_width = 0, in_height = 0;  // the whole input level, for mirroring
  int64_t in_x0 = 0;                    // first input column held in carry/chunk rows
  int64_t in_w = 0;                     // input columns held; row pitches cover them rounded up to 16 bytes
  DeviceRows carry, chunk;              // carry rows end where chunk rows begin
  uint8_t* out = nullptr;               // output buffer: row out_y0, column out_x0 at out
  size_t out_pitch = 0;
  int64_t out_y0 = 0, out_x0 = 0;
  int64_t y_begin = 0, y_end = 0;  // output rows to compute
  int64_t x_begin = 0, x_end = 0;  // output columns to compute
};

// Enqueues the rows on `stream`. Every input row/column the outputs need
// (after reflect101) must be held.
void reduce_rows_cuda(const ReduceLaunch& a, cudaStream_t stream);

}  // namespace tw
