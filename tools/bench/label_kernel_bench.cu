// The GPU tile labelling (kernels/label/label_cuda.cu) timed on device
// buffers, kernels only, on nuclei-like masks of 8192^2 and 16384^2 (or the
// sides given), median of N rounds; with -DTW_BENCH_NPP, NPP's
// nppiLabelMarkersUF + nppiCompressMarkerLabelsUF on the same buffers, and
// how many pixels NPP labels apart from us (ours equal the CPU's:
// tests/kernels/label_cuda_test.cpp). Built on the device machine:
//
//   nvcc -std=c++17 -O3 -arch=sm_90 -I. [-DTW_BENCH_NPP] tools/bench/label_kernel_bench.cu \
//        kernels/label/label_cuda.cu engine/cuda/device.cu engine/error.cpp [-lnppif -lnppc] \
//        -o label_bench && ./label_bench [SIDE...]
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#include "engine/cuda/cuda_check.hpp"
#include "kernels/label/label_cuda.hpp"
#include "tools/bench/bench_util.cuh"

using namespace tw;

namespace {

template <class T>
T* device_alloc(size_t n) {
  T* p = nullptr;
  TW_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&p), n * sizeof(T)));
  return p;
}

// Ellipses of nuclei size (radii 3-9 px), about 20% cover, many touching.
std::vector<uint8_t> nuclei(int64_t n) {
  std::vector<uint8_t> m(static_cast<size_t>(n * n), 0);
  std::mt19937_64 rng(1);
  std::uniform_real_distribution<double> u(0, 1);
  for (int64_t k = 0; k < n * n / 400; ++k) {
    const double cx = u(rng) * n, cy = u(rng) * n, a = 3 + 6 * u(rng), b = 3 + 6 * u(rng), t = 3.14159 * u(rng);
    const double c = std::cos(t), s = std::sin(t);
    for (int64_t y = std::max<int64_t>(0, cy - 10); y < std::min<int64_t>(n, cy + 11); ++y)
      for (int64_t x = std::max<int64_t>(0, cx - 10); x < std::min<int64_t>(n, cx + 11); ++x) {
        const double dx = x - cx, dy = y - cy, p = (dx * c + dy * s) / a, q = (-dx * s + dy * c) / b;
        if (p * p + q * q <= 1) m[static_cast<size_t>(y * n + x)] = 1;
      }
  }
  return m;
}

void run(int64_t n, int conn, int rounds) {
  const auto img = nuclei(n);
  const size_t px = img.size();
  uint8_t* fg = device_alloc<uint8_t>(px);
  uint32_t* labels = device_alloc<uint32_t>(px);
  void* scratch = device_alloc<uint8_t>(label::label_device_scratch_bytes(n, n));
  TW_CUDA_CHECK(cudaMemcpy(fg, img.data(), px, cudaMemcpyHostToDevice));
  uint32_t count = 0;
  const double ms =
      bench::median_ms([&] { count = label::label_device(fg, n, n, conn, labels, scratch, nullptr); }, rounds);
  std::printf("tilewave  %6lldx%-6lld %d-way: %8.2f ms  %6.2f GP/s  %u components\n", static_cast<long long>(n),
              static_cast<long long>(n), conn, ms, px / ms * 1e-6, count);
#ifdef TW_BENCH_NPP
  std::vector<uint32_t> ours(px), theirs(px);
  TW_CUDA_CHECK(cudaMemcpy(ours.data(), labels, px * 4, cudaMemcpyDeviceToHost));
  const NppiSize roi{static_cast<int>(n), static_cast<int>(n)};
  int b1 = 0, b2 = 0;
  nppiLabelMarkersUFGetBufferSize_32u_C1R(roi, &b1);
  nppiCompressMarkerLabelsGetBufferSize_32u_C1R(static_cast<int>(px), &b2);
  Npp8u* buf = device_alloc<Npp8u>(static_cast<size_t>(std::max(b1, b2)));
  // NPP labels 0/255 masks with pixels of value 0 as background too.
  int newest = 0;
  NppStatus st1 = NPP_SUCCESS, st2 = NPP_SUCCESS;
  const double npp_ms = bench::median_ms(
      [&] {
        st1 = nppiLabelMarkersUF_8u32u_C1R_Ctx(fg, static_cast<int>(n), labels, static_cast<int>(n * 4), roi,
                                               conn == 8 ? nppiNormInf : nppiNormL1, buf, bench::npp_context());
        st2 = nppiCompressMarkerLabelsUF_32u_C1IR_Ctx(labels, static_cast<int>(n * 4), roi, static_cast<int>(px),
                                                      &newest, buf, bench::npp_context());
      },
      rounds);
  TW_CUDA_CHECK(cudaMemcpy(theirs.data(), labels, px * 4, cudaMemcpyDeviceToHost));
  // NPP numbers differently: compare partitions (a bijection of labels).
  std::vector<uint32_t> map(static_cast<size_t>(count) + 1, 0xFFFFFFFFu);
  size_t apart = 0;
  for (size_t i = 0; i < px; ++i) {
    if (!img[i]) continue;
    uint32_t& m = map[ours[i]];
    if (m == 0xFFFFFFFFu) m = theirs[i];
    apart += m != theirs[i];
  }
  std::printf("NPP       %6lldx%-6lld %d-way: %8.2f ms  %6.2f GP/s  %d labels, status %d/%d, %zu pixels apart\n",
              static_cast<long long>(n), static_cast<long long>(n), conn, npp_ms, px / npp_ms * 1e-6, newest,
              static_cast<int>(st1), static_cast<int>(st2), apart);
  cudaFree(buf);
#endif
  cudaFree(fg), cudaFree(labels), cudaFree(scratch);
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<int64_t> sides;
  for (int i = 1; i < argc; ++i) sides.push_back(std::atoll(argv[i]));
  if (sides.empty()) sides = {8192, 16384};
  for (int64_t n : sides)
    for (int conn : {8, 4}) run(n, conn, 11);
  return 0;
}
