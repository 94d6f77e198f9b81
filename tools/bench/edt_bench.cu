// The GPU EDT against NPP's nppiDistanceTransformPBA (PBA+), kernel only, on
// the seed's patterns, in one process on the same device buffers; and NPP's
// exactness checked against ours (ours equals the CPU backend bit for bit,
// and the CPU backend equals scipy: tests/kernels/edt*_test.cpp).
// Built on a machine with the CUDA toolkit and NPP (see docs/PERFORMANCE.md):
//
//   nvcc -std=c++17 -O3 -arch=sm_90 -I. tools/bench/edt_bench.cu kernels/edt/edt_cuda_kernels.cu \
//        engine/cuda/device.cu engine/error.cpp -lnppif -lnppc -o edt_bench && ./edt_bench [N...]
#include <npp.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "engine/cuda/cuda_check.hpp"
#include "kernels/edt/edt_cuda_kernels.hpp"
#include "tests/support/edt_patterns.hpp"
#include "tools/bench/bench_util.cuh"

using namespace tw;
using bench::median_ms;
#ifdef TW_BENCH_HAVE_NPP
using bench::npp_context;
#endif

namespace {

template <class T>
T* device_alloc(size_t n) {
  T* p = nullptr;
  TW_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&p), n * sizeof(T)));
  return p;
}

void run(const char* name, int64_t n) {
  std::vector<uint8_t> img(static_cast<size_t>(n * n));
  test::draw_edt_pattern(name, n, [&](int64_t x, int64_t y, bool bg) { img[y * n + x] = bg ? 0 : 255; });
  const size_t px = img.size();
  uint8_t* fg = device_alloc<uint8_t>(px);
  TW_CUDA_CHECK(cudaMemcpy(fg, img.data(), px, cudaMemcpyHostToDevice));

  // Ours: the whole image as one band.
  const int64_t nseg = (n + edt_gpu::kSeg - 1) / edt_gpu::kSeg;
  edt_gpu::Workspace ws;
  ws.w = n;
  ws.plan = edt_gpu::plan_rows(n, n, 0);
  ws.below = device_alloc<int32_t>(px), ws.g = device_alloc<int32_t>(px);
  ws.seg_a = device_alloc<int32_t>(static_cast<size_t>(nseg * n)),
  ws.seg_b = device_alloc<int32_t>(static_cast<size_t>(nseg * n));
  ws.carry_down = device_alloc<int32_t>(static_cast<size_t>(n)),
  ws.carry_up = device_alloc<int32_t>(static_cast<size_t>(n));
  if (!ws.plan.in_shared) ws.scratch = device_alloc<int32_t>(ws.plan.scratch_blocks * ws.plan.row_bytes / 4);
  float* ours = nullptr;
  const double t_ours = median_ms([&] {
    edt_gpu::reset_carries(ws, 0);
    edt_gpu::band_below(fg, int(n), 0, ws, 0);
    ours = edt_gpu::band_distance(int(n), 0, ws, 0);
  });
  // Where the time goes: pass 1 (column distances below) and pass 2 (column
  // distances, then the row pass).
  const double t_pass1 = median_ms([&] {
    edt_gpu::reset_carries(ws, 0);
    edt_gpu::band_below(fg, int(n), 0, ws, 0);
  });
  const double t_pass2 = median_ms([&] {
    edt_gpu::reset_carries(ws, 0);
    edt_gpu::band_distance(int(n), 0, ws, 0);
  });
  std::vector<float> a(px), b(px);
  TW_CUDA_CHECK(cudaMemcpy(a.data(), ours, px * 4, cudaMemcpyDeviceToHost));

  // NPP: sites are the background pixels (value 0).
  const NppiSize roi{int(n), int(n)};
  size_t buf_bytes = 0;
  if (nppiDistanceTransformPBAGetBufferSize(roi, &buf_bytes) != NPP_SUCCESS) std::abort();
  uint8_t* buf = device_alloc<uint8_t>(buf_bytes);
  float* npp_out = device_alloc<float>(px);
  const NppStreamContext ctx = npp_context();
  NppStatus st = NPP_SUCCESS;
  const double t_npp = median_ms([&] {
    st = nppiDistanceTransformPBA_8u32f_C1R_Ctx(fg, int(n), 0, 0, nullptr, 0, nullptr, 0, nullptr, 0, npp_out,
                                                int(n * sizeof(float)), roi, buf, ctx);
  });
  TW_CUDA_CHECK(cudaMemcpy(b.data(), npp_out, px * 4, cudaMemcpyDeviceToHost));
  double worst = 0;
  int64_t off = 0;
  for (size_t i = 0; i < px; ++i) {
    const double d = std::fabs(double(a[i]) - double(b[i]));
    if (d > 1e-3) ++off;
    worst = std::max(worst, d);
  }
  std::printf(
      "%-20s %6lld  ours %7.3f ms (pass 1 %.3f, pass 2 %.3f)  npp %7.3f ms (status %d)  ours/npp %.2f  "
      "npp off by >1e-3: %lld px (%.4f%%), worst %.3f\n",
      name, static_cast<long long>(n), t_ours, t_pass1, t_pass2, t_npp, int(st), t_ours / t_npp,
      static_cast<long long>(off), 100.0 * off / px, worst);
  for (void* p :
       {static_cast<void*>(fg), static_cast<void*>(ws.below), static_cast<void*>(ws.g), static_cast<void*>(ws.seg_a),
        static_cast<void*>(ws.seg_b), static_cast<void*>(ws.carry_down), static_cast<void*>(ws.carry_up),
        static_cast<void*>(ws.scratch), static_cast<void*>(buf), static_cast<void*>(npp_out)})
    cudaFree(p);
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<int64_t> sizes;
  for (int i = 1; i < argc; ++i) sizes.push_back(std::atoll(argv[i]));
  if (sizes.empty()) sizes = {4096, 8192};
  for (int64_t n : sizes)
    for (const char* name : test::kEdtPatterns) run(name, n);
  return 0;
}
