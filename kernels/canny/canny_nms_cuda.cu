// Canny's suppression on the GPU. The functor alone (engine/ops/op_cuda.cuh)
// computes a pixel's gradient again for every neighbour that compares with
// it, three gradients of eight loads per pixel; here a block computes the
// magnitudes of its 126 x 32 pixels and their one-pixel ring once, into
// shared memory, and classifies with the functor's own rule (classify), so
// both paths give the same classes. Threads slide a 3x3 window down a column
// (three loads per row, not nine): shared-memory loads, not arithmetic, set
// the pace of this kernel.
#include <cuda_runtime.h>

#include "engine/cuda/cuda_check.hpp"
#include "kernels/canny/canny.hpp"

namespace tw::ops {
namespace {

// Outputs per block. 128 threads slide down the 126 columns and their ring
// of one: every thread has one column of magnitudes to make.
constexpr int kThreads = 128, kTw = kThreads - 2, kTh = 32;

__device__ __forceinline__ int sobel_x(const int (&r)[3][3]) {
  return (r[0][2] + 2 * r[1][2] + r[2][2]) - (r[0][0] + 2 * r[1][0] + r[2][0]);
}
__device__ __forceinline__ int sobel_y(const int (&r)[3][3]) {
  return (r[2][0] + 2 * r[2][1] + r[2][2]) - (r[0][0] + 2 * r[0][1] + r[0][2]);
}

__global__ void __launch_bounds__(kThreads) nms_kernel(CannyNms op, const uint8_t* src, uint8_t* dst, int w, int h,
                                                       int64_t x0, int64_t y0, int64_t W, int64_t H) {
  __shared__ uint8_t in[kTh + 4][kTw + 4];
  __shared__ int mag[kTh + 2][kTw + 2];
  const int bx = blockIdx.x * kTw, by = blockIdx.y * kTh, t = threadIdx.x;
  const int64_t stride = w + 4;  // the input has a halo of 2
  // in[ly][lx] is the tile's pixel (bx + lx - 2, by + ly - 2).
  for (int k = t; k < (kTh + 4) * (kTw + 4); k += kThreads) {
    const int ly = k / (kTw + 4), lx = k % (kTw + 4);
    const int sx = bx + lx, sy = by + ly;
    in[ly][lx] = sx < w + 4 && sy < h + 4 ? src[sy * stride + sx] : 0;
  }
  __syncthreads();
  // mag[my][mx] is the tile's pixel (bx + mx - 1, by + my - 1); 0 outside
  // the image. A thread slides a 3x3 window down its column: three loads a row.
  for (int mx = t; mx < kTw + 2; mx += kThreads) {
    int r[3][3];
    for (int i = 0; i < 2; ++i)
      for (int j = 0; j < 3; ++j) r[i + 1][j] = in[i][mx + j];
    const int64_t ix = x0 + bx + mx - 1;
    const bool col_inside = ix >= 0 && ix < W;
    for (int my = 0; my < kTh + 2; ++my) {
      for (int j = 0; j < 3; ++j) r[0][j] = r[1][j], r[1][j] = r[2][j], r[2][j] = in[my + 2][mx + j];
      const int64_t iy = y0 + by + my - 1;
      const int gx = sobel_x(r), gy = sobel_y(r);
      mag[my][mx] = col_inside && iy >= 0 && iy < H ? gx * gx + gy * gy : 0;
    }
  }
  __syncthreads();
  // Classify down the column: the column's own magnitudes stay in registers;
  // lanes take consecutive columns (conflict-free loads, 32-byte stores).
  const int x = bx + t;
  if (t >= kTw || x >= w) return;
  int r[3][3];
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j) r[i + 1][j] = in[i + 1][t + 1 + j];
  int up = mag[0][t + 1], mid = mag[1][t + 1];
  const int rows = min(kTh, h - by);
  for (int ly = 0; ly < rows; ++ly) {
    for (int j = 0; j < 3; ++j) r[0][j] = r[1][j], r[1][j] = r[2][j], r[2][j] = in[ly + 3][t + 1 + j];
    const int down = mag[ly + 2][t + 1];
    const int gx = sobel_x(r), gy = sobel_y(r);
    dst[static_cast<int64_t>(by + ly) * w + x] = op.classify(gx, gy, mid, [&](int dx, int dy) {
      if (dx == 0) return dy < 0 ? up : down;
      return mag[ly + 1 + dy][t + 1 + dx];
    });
    up = mid, mid = down;
  }
}

}  // namespace

void CannyNms::cuda_block(const In* src, Out* dst, int w, int h, int64_t x0, int64_t y0, int64_t W, int64_t H,
                          CUstream_st* s) const {
  const dim3 grid((w + kTw - 1) / kTw, (h + kTh - 1) / kTh);
  nms_kernel<<<grid, kThreads, 0, s>>>(*this, src, dst, w, h, x0, y0, W, H);
  TW_CUDA_CHECK(cudaGetLastError());
}

}  // namespace tw::ops
