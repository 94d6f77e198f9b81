// The op API's GPU filters against NPP, kernel time and with copies, in one
// process on the same device buffers: Gaussian blur (sigma 2, 13 taps)
// against nppiFilterGaussBorder (13x13), and Canny (Sobel 3x3, L2,
// non-maximum suppression, hysteresis on the IWPP-MP kernel) against
// nppiFilterCannyBorder. Built on a machine with NPP (see docs/PERFORMANCE.md):
//
//   nvcc -std=c++17 -O3 -arch=sm_90 -I. tools/bench/filter_bench.cu \
//        kernels/reconstruct/reconstruct_cuda.cu kernels/gaussian/gaussian.cpp engine/cuda/resources.cpp \
//        engine/image.cpp engine/pixel.cpp engine/geometry.cpp engine/error.cpp \
//        engine/cuda/device.cu kernels/reconstruct/reconstruct_cpu.cpp kernels/reconstruct/reconstruct_binary_cuda.cu \
//        kernels/canny/canny_nms_cuda.cu kernels/reconstruct/bit_planes.cpp engine/parallel.cpp \
//        engine/memory.cpp engine/trace.cpp -lnppif -lnppc -ltbb -o filter_bench
//   ./filter_bench [N...]
#include <algorithm>
#include <cstdio>
#include <random>
#include <vector>

#include "engine/ops/op_cuda.cuh"
#include "kernels/canny/canny.hpp"
#include "kernels/gaussian/gaussian.hpp"
#include "kernels/reconstruct/reconstruct_cuda.hpp"
#include "tools/bench/bench_util.cuh"

using namespace tw;
using bench::median_ms;
#ifdef TW_BENCH_HAVE_NPP
using bench::npp_context;
#endif
using namespace tw::ops::cuda_detail;

namespace {

// Nuclei-like 8-bit content: dark discs of radius 3..12 on a bright ground,
// with noise, so that Canny finds many closed edges.
std::vector<uint8_t> content(int64_t n) {
  std::vector<uint8_t> v(static_cast<size_t>(n * n), 215);
  std::mt19937 rng(7);
  for (int64_t k = 0; k < n * n / 500; ++k) {
    const int64_t cx = rng() % n, cy = rng() % n, r = 3 + rng() % 10;
    const uint8_t val = static_cast<uint8_t>(60 + rng() % 90);
    for (int64_t y = std::max<int64_t>(0, cy - r); y <= std::min(n - 1, cy + r); ++y)
      for (int64_t x = std::max<int64_t>(0, cx - r); x <= std::min(n - 1, cx + r); ++x)
        if ((x - cx) * (x - cx) + (y - cy) * (y - cy) <= r * r) v[static_cast<size_t>(y * n + x)] = val;
  }
  for (auto& p : v) p = static_cast<uint8_t>(std::clamp<int>(p + static_cast<int>(rng() % 21) - 10, 0, 255));
  return v;
}

#ifdef TW_BENCH_HAVE_NPP
#endif

void run_size(int64_t n) {
  const int R = 6;  // sigma 2
  const auto g = ops::make_gaussian<1>(2.0);
  Taps taps{};
  for (int k = 0; k <= 2 * R; ++k) taps.t[k] = g.t[k];
  const std::vector<uint8_t> host = content(n);
  const int64_t np = n * n;
  // Our kernels read an input with its halo (as the op engine uploads it);
  // the halo is filled on the host, like NPP's border read.
  const int64_t hn = n + 2 * R;
  std::vector<uint8_t> halo(static_cast<size_t>(hn * hn));
  for (int64_t y = 0; y < hn; ++y)
    for (int64_t x = 0; x < hn; ++x) {
      auto m = [&](int64_t i) { return i < 0 ? -i : i >= n ? 2 * (n - 1) - i : i; };
      halo[static_cast<size_t>(y * hn + x)] = host[static_cast<size_t>(m(y - R) * n + m(x - R))];
    }
  uint8_t *d_halo, *d_src, *d_dst, *d_nms;
  float* d_mid;
  TW_CUDA_CHECK(cudaMalloc(&d_halo, hn * hn));
  TW_CUDA_CHECK(cudaMalloc(&d_src, np));
  TW_CUDA_CHECK(cudaMalloc(&d_dst, np));
  TW_CUDA_CHECK(cudaMalloc(&d_nms, np));
  TW_CUDA_CHECK(cudaMalloc(&d_mid, static_cast<size_t>(n * hn) * sizeof(float)));
  uint8_t *p_in, *p_out;
  TW_CUDA_CHECK(cudaMallocHost(&p_in, hn * hn));
  TW_CUDA_CHECK(cudaMallocHost(&p_out, np));
  std::copy(halo.begin(), halo.end(), p_in);
  TW_CUDA_CHECK(cudaMemcpy(d_halo, p_in, hn * hn, cudaMemcpyHostToDevice));
  TW_CUDA_CHECK(cudaMemcpy(d_src, host.data(), np, cudaMemcpyHostToDevice));
  const int w = static_cast<int>(n);
  auto gauss = [&] {
    separable_rows<ops::Gaussian<1>>
        <<<dim3(blocks(w, 128), static_cast<unsigned>(hn)), 128>>>(taps, R, d_halo, d_mid, w, static_cast<int>(hn));
    separable_cols<ops::Gaussian<1>><<<dim3(blocks(w, 128), w), 128>>>(g, taps, R, d_mid, d_dst, w, w);
  };
  const double ours = median_ms(gauss);
  const double ours_copies = median_ms([&] {
    cudaMemcpyAsync(d_halo, p_in, hn * hn, cudaMemcpyHostToDevice, 0);
    gauss();
    cudaMemcpyAsync(p_out, d_dst, np, cudaMemcpyDeviceToHost, 0);
  });
  std::printf("| %lld^2 | Gaussian sigma 2 | %.3f ms (%.1f GP/s) | %.3f ms |", static_cast<long long>(n), ours,
              np / ours / 1e6, ours_copies);
#ifdef TW_BENCH_HAVE_NPP
  const NppStreamContext ctx = npp_context();
  const NppiSize size{w, w};
  auto npp_gauss = [&] {
    nppiFilterGaussBorder_8u_C1R_Ctx(d_src, w, size, NppiPoint{0, 0}, d_nms, w, size, NPP_MASK_SIZE_13_X_13,
                                     NPP_BORDER_REPLICATE, ctx);
  };
  const double npp = median_ms(npp_gauss);
  const double npp_copies = median_ms([&] {
    cudaMemcpyAsync(d_src, p_in, np, cudaMemcpyHostToDevice, 0);
    npp_gauss();
    cudaMemcpyAsync(p_out, d_nms, np, cudaMemcpyDeviceToHost, 0);
  });
  std::printf(" %.3f ms | %.3f ms | %.2f |\n", npp, npp_copies, ours / npp);
#else
  std::printf(" - | - | - |\n");
#endif

  // Canny on the smoothed image: NMS (radius 2, replicate) then hysteresis.
  const auto nms = ops::make_canny_nms(20, 60);
  const int64_t hn2 = n + 4;
  uint8_t* d_halo2;
  TW_CUDA_CHECK(cudaMalloc(&d_halo2, hn2 * hn2));
  std::vector<uint8_t> smoothed(static_cast<size_t>(np)), h2(static_cast<size_t>(hn2 * hn2));
  TW_CUDA_CHECK(cudaMemcpy(smoothed.data(), d_dst, np, cudaMemcpyDeviceToHost));
  for (int64_t y = 0; y < hn2; ++y)
    for (int64_t x = 0; x < hn2; ++x)
      h2[static_cast<size_t>(y * hn2 + x)] = smoothed[static_cast<size_t>(std::clamp<int64_t>(y - 2, 0, n - 1) * n +
                                                                          std::clamp<int64_t>(x - 2, 0, n - 1))];
  TW_CUDA_CHECK(cudaMemcpy(d_halo2, h2.data(), hn2 * hn2, cudaMemcpyHostToDevice));
  const double t_nms = median_ms([&] { launch_neighborhood(nms, d_halo2, d_nms, w, w, 2, 0, 0, n, n, 0); });
  // With copies: the smoothed image (with its halo) up, the classes down,
  // from and to pinned memory, as a GPU op source moves them.
  uint8_t *p_in2, *p_cls, *p_sm;
  TW_CUDA_CHECK(cudaMallocHost(&p_in2, hn2 * hn2));
  TW_CUDA_CHECK(cudaMallocHost(&p_cls, np));
  TW_CUDA_CHECK(cudaMallocHost(&p_sm, np));
  std::copy(h2.begin(), h2.end(), p_in2);
  std::copy(smoothed.begin(), smoothed.end(), p_sm);
  const double t_nms_copies = median_ms([&] {
    cudaMemcpyAsync(d_halo2, p_in2, hn2 * hn2, cudaMemcpyHostToDevice, 0);
    launch_neighborhood(nms, d_halo2, d_nms, w, w, 2, 0, 0, n, n, 0);
    cudaMemcpyAsync(p_cls, d_nms, np, cudaMemcpyDeviceToHost, 0);
  });
  const double t_nms_functor = median_ms([&] {
    neighborhood_kernel<ops::CannyNms>
        <<<dim3(blocks(w, 32), blocks(w, 8)), dim3(32, 8)>>>(nms, d_halo2, d_nms, w, w, 2, 0, 0, n, n);
  });
  // Hysteresis: one GPU tile of the reconstruction (marker: strong pixels,
  // mask: the candidates), timed by the rule's own kernel clock (from the
  // uploaded classes to the edge map on the device), with the bit-plane rule
  // that reconstruct() picks for binary input and the general one.
  std::vector<uint8_t> classes(static_cast<size_t>(np));
  TW_CUDA_CHECK(cudaMemcpy(classes.data(), d_nms, np, cudaMemcpyDeviceToHost));
  const Rect core(0, 0, n, n);
  Image j(kGray8, core.grown(1)), i(kGray8, core);
  auto reset_marker = [&] {
    for (int64_t y = -1; y <= n; ++y)
      for (int64_t x = -1; x <= n; ++x) {
        const bool in = x >= 0 && y >= 0 && x < n && y < n;
        const uint8_t c = in ? classes[static_cast<size_t>(y * n + x)] : 0;
        j.ptr<uint8_t>(x, y)[0] = c == ops::kCannyStrong ? 255 : 0;
        if (in) i.ptr<uint8_t>(x, y)[0] = c ? 255 : 0;
      }
  };
  ReconstructParams rp;
  rp.connectivity = 8;
  // Median kernel time, and median time with the rule's own copies and host
  // work (the tile and mask from host images, the edge map back into them).
  auto hysteresis = [&](const TilePropagator& rule, GpuWavefrontStats& st) {
    std::vector<double> t, tc;
    for (int rep = 0; rep < 7; ++rep) {  // the first is a warm-up
      reset_marker();
      st = {};
      rule.propagate(j.view(), i.view(), core);
      if (rep)
        t.push_back(st.kernel_seconds * 1e3),
            tc.push_back((st.kernel_seconds + st.transfer_seconds + st.host_seconds) * 1e3);
    }
    std::sort(t.begin(), t.end());
    std::sort(tc.begin(), tc.end());
    return std::pair<double, double>{t[t.size() / 2], tc[tc.size() / 2]};
  };
  GpuWavefrontStats st_general, st;
  const double t_general = hysteresis(*make_cuda_reconstruct_rule(0, kGray8, rp, &st_general), st_general).first;
  Image general(kGray8, j.rect());
  copy_overlap(j.view(), general.view());
  const auto [t_hyst, t_hyst_copies] = hysteresis(*make_cuda_binary_reconstruct_rule(0, 8, &st), st);
  int64_t edges = 0, mismatch = 0;
  for (int64_t y = 0; y < n; ++y)
    for (int64_t x = 0; x < n; ++x) {
      edges += j.ptr<uint8_t>(x, y)[0] != 0;
      mismatch += j.ptr<uint8_t>(x, y)[0] != general.ptr<uint8_t>(x, y)[0];
    }
  std::printf(
      "| %lld^2 | Canny (NMS %.3f ms [functor %.3f ms], hysteresis %.3f ms, %lld megapixel visits [general "
      "kernel %.3f ms, %lld visits, %lld pixels differ]) | %.3f ms | %.3f ms |",
      static_cast<long long>(n), t_nms, t_nms_functor, t_hyst, static_cast<long long>(st.megapixel_visits), t_general,
      static_cast<long long>(st_general.megapixel_visits), static_cast<long long>(mismatch), t_nms + t_hyst,
      t_nms_copies + t_hyst_copies);
#ifdef TW_BENCH_HAVE_NPP
  int bytes = 0;
  const NppStatus qs = nppiFilterCannyBorderGetBufferSize(size, &bytes);
  if (qs != NPP_SUCCESS || bytes <= 0) {
    std::printf(" NPP cannot (buffer-size query: status %d, %d bytes) | - | - |\n", static_cast<int>(qs), bytes);
  } else {
    uint8_t* buf;
    TW_CUDA_CHECK(cudaMalloc(&buf, bytes));
    auto npp_canny = [&] {
      nppiFilterCannyBorder_8u_C1R_Ctx(d_dst, w, size, NppiPoint{0, 0}, d_nms, w, size, NPP_FILTER_SOBEL,
                                       NPP_MASK_SIZE_3_X_3, 20, 60, nppiNormL2, NPP_BORDER_REPLICATE, buf, ctx);
    };
    const double npp = median_ms(npp_canny);
    const double npp_copies = median_ms([&] {
      cudaMemcpyAsync(d_dst, p_sm, np, cudaMemcpyHostToDevice, 0);
      npp_canny();
      cudaMemcpyAsync(p_cls, d_nms, np, cudaMemcpyDeviceToHost, 0);
    });
    std::vector<uint8_t> ne(static_cast<size_t>(np));
    TW_CUDA_CHECK(cudaMemcpy(ne.data(), d_nms, np, cudaMemcpyDeviceToHost));
    int64_t npp_edges = 0, both = 0;
    for (int64_t k = 0; k < np; ++k) {
      npp_edges += ne[static_cast<size_t>(k)] != 0;
      both += ne[static_cast<size_t>(k)] != 0 && j.ptr<uint8_t>(k % n, k / n)[0] != 0;
    }
    std::printf(" %.3f ms | %.3f ms | %.2f | edges: ours %lld, NPP %lld, both %lld\n", npp, npp_copies,
                (t_nms + t_hyst) / npp, static_cast<long long>(edges), static_cast<long long>(npp_edges),
                static_cast<long long>(both));
    cudaFree(buf);
  }
#else
  std::printf(" - | - | - | edges %lld\n", static_cast<long long>(edges));
#endif
  cudaFreeHost(p_in2), cudaFreeHost(p_cls), cudaFreeHost(p_sm);
  cudaFree(d_halo), cudaFree(d_halo2), cudaFree(d_src), cudaFree(d_dst), cudaFree(d_nms), cudaFree(d_mid);
  cudaFreeHost(p_in), cudaFreeHost(p_out);
}

}  // namespace

int main(int argc, char** argv) {
  std::printf(
      "| size | op | Tilewave kernel | Tilewave with copies | NPP kernel | NPP with copies | ratio |\n"
      "| --- | --- | --- | --- | --- | --- | --- |\n");
  std::vector<int64_t> sizes;
  for (int i = 1; i < argc; ++i) sizes.push_back(std::atoll(argv[i]));
  if (sizes.empty()) sizes = {8192, 16384};
  for (int64_t n : sizes) run_size(n);
  return 0;
}
