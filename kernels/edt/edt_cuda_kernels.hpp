#pragma once
// The GPU EDT over one band of rows resident on the device: the column
// passes (carrying one value per column from band to band) and the row
// pass. No host-side dependencies beyond the CUDA runtime, so the NPP
// comparison bench (tools/bench/edt_bench.cu) compiles it on its own.
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

namespace tw::edt_gpu {

constexpr int kSeg = 32;  // rows per column segment (band heights are multiples, but the last)

// How the row pass runs for an image w x h on a device: each row's arrays in
// 16 or 32 bits, in shared memory or (rows too wide for it) in device
// scratch per block.
struct RowPlan {
  bool narrow = true;
  bool in_shared = true;
  size_t row_bytes = 0;
  int scratch_blocks = 0;
};
RowPlan plan_rows(int64_t w, int64_t h, int device);

// Device memory: per row of a band, and independent of the band's height.
size_t bytes_per_band_row(int64_t w);
size_t fixed_bytes(int64_t w, const RowPlan& plan);

// Borrowed device pointers for bands of up to `rows` rows.
struct Workspace {
  int64_t w = 0;
  int32_t* below = nullptr;  // rows x w: distance to the nearest background at or below
  int32_t* g = nullptr;      // rows x w: column distances, then the float result in place
  int32_t* seg_a = nullptr;  // ceil(rows / kSeg) x w
  int32_t* seg_b = nullptr;
  int32_t* carry_down = nullptr;  // w
  int32_t* carry_up = nullptr;    // w
  int32_t* scratch = nullptr;     // plan.scratch_blocks x plan.row_bytes, if not in shared memory
  RowPlan plan;
};

// Before the first band of each pass direction: no background seen yet.
void reset_carries(const Workspace& ws, cudaStream_t s);
// A band's input flags from bit rows (the layout of engine/bit_plane.hpp,
// `words` at the band's first row, `pitch` words a row): fg = `set` where a
// pixel's bit is set, `clear` where not (1: foreground, 0: background).
void bits_to_flags(const uint32_t* words, int64_t pitch, int rows, const Workspace& ws, uint8_t set, uint8_t clear,
                   uint8_t* fg, cudaStream_t s);
// Pass 1, bands bottom-up: fg (rows x w bytes, 0 = background) -> ws.below.
void band_below(const uint8_t* fg, int rows, int row0, const Workspace& ws, cudaStream_t s);
// Pass 2, bands top-down: ws.below -> distances (rows x w float32, +inf
// where the image has no background), written over ws.g; returns them.
float* band_distance(int rows, int row0, const Workspace& ws, cudaStream_t s);

}  // namespace tw::edt_gpu
