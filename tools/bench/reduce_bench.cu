// REDUCE on the GPU: Tilewave's kernel against NPP's
// nppiFilterGaussPyramidLayerDownBorder, on the seed's sizes (a 16384x8192
// RGB image: one level, and 7 levels), kernel only and with the copies.
// Built on a machine with the CUDA toolkit and NPP (see docs/PERFORMANCE.md):
//
//   nvcc -std=c++17 -O3 -arch=sm_90 -I. tools/bench/reduce_bench.cu \
//        kernels/pyramid_reduce/pyramid_reduce_cuda.cu engine/cuda/device.cu engine/pixel.cpp \
//        engine/error.cpp -lnppif -lnppc -o reduce_bench && ./reduce_bench [W H]
#include <npp.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#include "engine/cuda/cuda_check.hpp"
#include "kernels/pyramid_reduce/pyramid_reduce_cuda.hpp"
#include "tools/bench/bench_util.cuh"

using namespace tw;
using bench::median_ms;

namespace {

size_t pitch_of(int64_t w) {
  return (static_cast<size_t>(w) * 3 + 255) & ~size_t{255};
}

// One level of Tilewave's REDUCE over the whole image (all rows held).
void ours(const uint8_t* in, size_t in_pitch, int64_t w, int64_t h, uint8_t* out, size_t out_pitch, int64_t y0,
          int64_t y1, cudaStream_t s) {
  ReduceLaunch r;
  r.fmt = kRgb8;
  r.in_width = w, r.in_height = h, r.in_x0 = 0, r.in_w = w;
  r.chunk = DeviceRows{in, in_pitch, 0, h};
  r.out = out, r.out_pitch = out_pitch;
  r.y_begin = y0, r.y_end = y1, r.x_begin = 0, r.x_end = (w + 1) / 2;
  reduce_rows_cuda(r, s);
}

}  // namespace

int main(int argc, char** argv) {
  const int64_t W = argc > 2 ? std::atoll(argv[1]) : 16384, H = argc > 2 ? std::atoll(argv[2]) : 8192;
  const int levels = 7;
  cudaDeviceProp prop{};
  TW_CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
  std::printf("device: %s, %d SMs\nimage: %lld x %lld RGB8 (%.0f MB)\n", prop.name, prop.multiProcessorCount,
              static_cast<long long>(W), static_cast<long long>(H), W * H * 3 / 1e6);

  // Level buffers on the device, pinned copies on the host.
  std::vector<int64_t> lw{W}, lh{H};
  for (int l = 1; l < levels; ++l) lw.push_back((lw.back() + 1) / 2), lh.push_back((lh.back() + 1) / 2);
  std::vector<uint8_t*> d(levels), hbuf(levels);
  std::vector<size_t> pitch(levels);
  for (int l = 0; l < levels; ++l) {
    pitch[l] = pitch_of(lw[l]);
    TW_CUDA_CHECK(cudaMalloc(&d[l], pitch[l] * lh[l]));
    TW_CUDA_CHECK(cudaMallocHost(&hbuf[l], pitch[l] * lh[l]));
  }
  std::mt19937 rng(1);
  for (size_t i = 0; i < pitch[0] * H; ++i) hbuf[0][i] = static_cast<uint8_t>(rng() >> 24);
  TW_CUDA_CHECK(cudaMemcpy(d[0], hbuf[0], pitch[0] * H, cudaMemcpyHostToDevice));

  // The device's own ceiling: a large device-to-device copy (bytes read + written).
  uint8_t *ca = nullptr, *cb = nullptr;
  const size_t cbytes = size_t{1} << 30;
  TW_CUDA_CHECK(cudaMalloc(&ca, cbytes));
  TW_CUDA_CHECK(cudaMalloc(&cb, cbytes));
  const double copy_ms = median_ms([&] { cudaMemcpyAsync(cb, ca, cbytes, cudaMemcpyDeviceToDevice, 0); }, 11);
  const double peak = 2.0 * cbytes / (copy_ms * 1e-3) / 1e12;
  cudaFree(ca), cudaFree(cb);
  std::printf("device-to-device copy: %.2f TB/s (read + write)\n", peak);

  const double bytes1 = double(W) * H * 3 + double(lw[1]) * lh[1] * 3;
  const double k1 = median_ms([&] { ours(d[0], pitch[0], W, H, d[1], pitch[1], 0, lh[1], 0); });
  std::printf("\none level, kernel only\n  tilewave: %.3f ms  %.2f TB/s (%.0f%% of the copy ceiling)\n", k1,
              bytes1 / (k1 * 1e-3) / 1e12, 100 * bytes1 / (k1 * 1e-3) / 1e12 / peak);

  // NPP: float 5-tap kernel, replicate border (the only one it supports).
  Npp32f taps[5] = {1 / 16.f, 4 / 16.f, 6 / 16.f, 4 / 16.f, 1 / 16.f};
  Npp32f* dtaps = nullptr;
  TW_CUDA_CHECK(cudaMalloc(&dtaps, sizeof taps));
  TW_CUDA_CHECK(cudaMemcpy(dtaps, taps, sizeof taps, cudaMemcpyHostToDevice));
  NppStreamContext ctx{};
  ctx.hStream = 0;
  ctx.nCudaDeviceId = 0;
  ctx.nMultiProcessorCount = prop.multiProcessorCount;
  ctx.nMaxThreadsPerMultiProcessor = prop.maxThreadsPerMultiProcessor;
  ctx.nMaxThreadsPerBlock = prop.maxThreadsPerBlock;
  ctx.nSharedMemPerBlock = prop.sharedMemPerBlock;
  ctx.nCudaDevAttrComputeCapabilityMajor = prop.major;
  ctx.nCudaDevAttrComputeCapabilityMinor = prop.minor;
  NppiSize dst{};
  nppiGetFilterGaussPyramidLayerDownBorderDstROI(static_cast<int>(W), static_cast<int>(H), &dst, 2.0f);
  NppStatus st = NPP_SUCCESS;
  auto npp_level = [&](const uint8_t* in, size_t ip, int64_t w, int64_t h, uint8_t* out, size_t op) {
    NppiSize ds{};
    nppiGetFilterGaussPyramidLayerDownBorderDstROI(static_cast<int>(w), static_cast<int>(h), &ds, 2.0f);
    st = nppiFilterGaussPyramidLayerDownBorder_8u_C3R_Ctx(in, static_cast<int>(ip), NppiSize{int(w), int(h)},
                                                          NppiPoint{0, 0}, out, static_cast<int>(op), ds, 2.0f, 5,
                                                          dtaps, NPP_BORDER_REPLICATE, ctx);
  };
  const double n1 = median_ms([&] { npp_level(d[0], pitch[0], W, H, d[1], pitch[1]); });
  std::printf("  NPP:      %.3f ms  %.2f TB/s  (status %d, output %dx%d)\n", n1, bytes1 / (n1 * 1e-3) / 1e12, int(st),
              dst.width, dst.height);

  // With copies: upload level 0, reduce, download level 1.
  const double c_serial = median_ms(
      [&] {
        cudaMemcpyAsync(d[0], hbuf[0], pitch[0] * H, cudaMemcpyHostToDevice, 0);
        ours(d[0], pitch[0], W, H, d[1], pitch[1], 0, lh[1], 0);
        cudaMemcpyAsync(hbuf[1], d[1], pitch[1] * lh[1], cudaMemcpyDeviceToHost, 0);
      },
      7);
  const double n_serial = median_ms(
      [&] {
        cudaMemcpyAsync(d[0], hbuf[0], pitch[0] * H, cudaMemcpyHostToDevice, 0);
        npp_level(d[0], pitch[0], W, H, d[1], pitch[1]);
        cudaMemcpyAsync(hbuf[1], d[1], pitch[1] * lh[1], cudaMemcpyDeviceToHost, 0);
      },
      7);
  // Streamed: strips of rows on two streams, each strip's upload overlapping
  // the previous strip's kernel and download (what the pyramid job does).
  cudaStream_t s[2];
  cudaEvent_t up[64];
  for (auto& x : s) cudaStreamCreateWithFlags(&x, cudaStreamNonBlocking);
  for (auto& e : up) cudaEventCreateWithFlags(&e, cudaEventDisableTiming);
  const int strips = 16;
  const int64_t rows = (H + strips - 1) / strips;
  auto streamed = [&](int nlev, bool all_levels_back) {
    int64_t done_out[8] = {0};
    for (int i = 0; i < strips; ++i) {
      cudaStream_t st_ = s[i & 1];
      const int64_t r0 = i * rows, r1 = std::min(H, r0 + rows);
      cudaMemcpyAsync(d[0] + r0 * pitch[0], hbuf[0] + r0 * pitch[0], (r1 - r0) * pitch[0], cudaMemcpyHostToDevice, st_);
      cudaEventRecord(up[i], st_);
      if (i > 0) cudaStreamWaitEvent(st_, up[i - 1], 0);  // earlier strips' rows and outputs
      int64_t have = r1;
      for (int l = 1; l < nlev; ++l) {
        const int64_t full = lh[l - 1];
        const int64_t y_end = have == full ? lh[l] : std::max<int64_t>(0, (have - 3) / 2 + 1);
        if (y_end > done_out[l]) {
          ours(d[l - 1], pitch[l - 1], lw[l - 1], lh[l - 1], d[l], pitch[l], done_out[l], y_end, st_);
          if (all_levels_back || l == nlev - 1)
            cudaMemcpyAsync(hbuf[l] + done_out[l] * pitch[l], d[l] + done_out[l] * pitch[l],
                            (y_end - done_out[l]) * pitch[l], cudaMemcpyDeviceToHost, st_);
          done_out[l] = y_end;
        }
        have = done_out[l];
      }
      cudaEventRecord(up[i], st_);
    }
    cudaStreamSynchronize(s[0]);
    cudaStreamSynchronize(s[1]);
  };
  const double c_stream = median_ms([&] { streamed(2, true); }, 7);
  const double h2d_only =
      median_ms([&] { cudaMemcpyAsync(d[0], hbuf[0], pitch[0] * H, cudaMemcpyHostToDevice, 0); }, 7);
  std::printf("\none level, with copies (upload %.0f MB, download %.0f MB)\n", pitch[0] * H / 1e6,
              pitch[1] * lh[1] / 1e6);
  std::printf(
      "  tilewave, one stream:        %.2f ms\n  tilewave, 16 strips streamed: %.2f ms\n  NPP, one stream:             "
      "%.2f ms\n",
      c_serial, c_stream, n_serial);
  std::printf("  the upload alone:            %.2f ms (%.1f GB/s): the PCIe floor\n", h2d_only,
              pitch[0] * H / (h2d_only * 1e-3) / 1e9);

  const double k7 = median_ms([&] {
    for (int l = 1; l < levels; ++l) ours(d[l - 1], pitch[l - 1], lw[l - 1], lh[l - 1], d[l], pitch[l], 0, lh[l], 0);
  });
  const double n7 = median_ms([&] {
    for (int l = 1; l < levels; ++l) npp_level(d[l - 1], pitch[l - 1], lw[l - 1], lh[l - 1], d[l], pitch[l]);
  });
  const double c7_last = median_ms([&] { streamed(levels, false); }, 7);
  const double c7_all = median_ms([&] { streamed(levels, true); }, 7);
  std::printf("\n%d levels (the seed's 'reduction of 7 levels': 6 reductions from level 0)\n", levels);
  std::printf("  kernel only: tilewave %.3f ms, NPP %.3f ms\n", k7, n7);
  std::printf("  with copies, streamed: %.2f ms (last level back, as the seed), %.2f ms (every level back)\n", c7_last,
              c7_all);
  std::printf("\nseed (Titan X): one level 370 ms with copies; 7 levels 314 ms\n");
  return 0;
}
