// The op API on the GPU equals the CPU backend bit for bit: every filter,
// the reductions, Canny with hysteresis, on real-looking content, odd sizes
// and odd tiles. Label `gpu`: skipped without a device.
#include <gtest/gtest.h>

#include "engine/byte_counters.hpp"
#include "engine/memory_source.hpp"
#include "engine/ops/reduce.hpp"
#include "engine/ops/run_op.hpp"
#include "jobs/canny/canny_job.hpp"
#include "kernels/canny/canny.hpp"
#include "kernels/gaussian/gaussian.hpp"
#include "kernels/hed/hed.hpp"
#include "kernels/point/point_ops.hpp"
#include "kernels/sobel/sobel.hpp"
#include "kernels/stats/stats.hpp"
#include "tests/support/gpu.hpp"
#include "tests/support/op_test.hpp"
#include "tests/support/test_support.hpp"

namespace tw {
namespace {

using test::read_tiled;
using test::source_of;

using SourceP = std::shared_ptr<const TileSource>;
const Backend kCpu{};
const Backend kGpu = Backend::cuda(0);

SourceP src(PixelFormat f, int64_t w, int64_t h, uint64_t seed) {
  return std::make_shared<MemorySource>(test::pattern_image(f, w, h, seed));
}

// The op's GPU source whatever run_op would choose (light ops over a host
// input run on the CPU there): the GPU kernel itself is what is compared.
template <class Op>
SourceP gpu_source(const SourceP& in, const Op& op, const char* what) {
#if TW_HAVE_CUDA
  return ops::make_cuda_op_source(in, op, 0, what);
#else
  return ops::run_op(in, op, kGpu, what);  // not reached: the tests skip without a GPU
#endif
}

template <class Op>
void same_on_both(const SourceP& in, const Op& op, const char* what) {
  SCOPED_TRACE(what);
  const Image cpu = read_tiled(*ops::run_op(in, op, kCpu, what), 1 << 20);
  for (int64_t tile : {77, 256, 1 << 20})
    EXPECT_EQ(test::diff_images(read_tiled(*gpu_source(in, op, what), tile).view(), cpu.view()), "") << "tile " << tile;
}

TEST(CpuVsCuda, FilterOps) {
  TW_REQUIRE_GPU();
  for (auto [w, h] : {std::pair<int64_t, int64_t>{1031, 777}, {2048, 1500}, {5, 3}}) {
    SCOPED_TRACE(std::to_string(w) + "x" + std::to_string(h));
    const SourceP gray = src(kGray8, w, h, 3), rgb = src(kRgb8, w, h, 4);
    for (double sigma : {0.7, 1.4, 3.0, 20.0}) same_on_both(gray, ops::make_gaussian<1>(sigma), "gaussian");
    same_on_both(rgb, ops::make_gaussian<3>(2.0), "gaussian rgb");
    same_on_both(gray, ops::Sobel{}, "sobel");
    ops::Sobel st;
    st.threshold = 60;
    same_on_both(gray, st, "sobel threshold");
    same_on_both(gray, ops::make_canny_nms(20, 60), "canny nms");
    same_on_both(rgb, ops::Gray{}, "gray");
    same_on_both(rgb, ops::make_hed(), "hed");
    for (int j = 0; j < 3; ++j) same_on_both(rgb, ops::make_hed_stain(j), "hed stain");
    same_on_both(rgb, ops::Invert<3>{}, "invert");
    ops::Brightness<1> b;
    b.add = 33;
    same_on_both(gray, b, "brightness");
    ops::Contrast<3> c;
    c.factor = 1.3f;
    same_on_both(rgb, c, "contrast");
  }
}

// Light ops (invert, brightness, threshold) over a host input stay on the
// CPU under a GPU backend: the trips to the device would cost more than the
// op. After a GPU op they run on the GPU, fed on the device, with the CPU's
// results.
TEST(CpuVsCuda, LightOpsRunOnTheGpuAfterAGpuOp) {
  TW_REQUIRE_GPU();
  const SourceP rgb = src(kRgb8, 1031, 777, 5);
  EXPECT_EQ(ops::run_op(rgb, ops::Invert<3>{}, kGpu, "invert")->device_tiles(), nullptr);
  const SourceP gray_gpu = ops::run_op(rgb, ops::Gray{}, kGpu, "gray");
  ASSERT_NE(gray_gpu->device_tiles(), nullptr);
  ops::Threshold t;
  t.t = 99;
  const SourceP on_gpu = ops::run_op(ops::run_op(gray_gpu, ops::Invert<1>{}, kGpu, "invert"), t, kGpu, "threshold");
  EXPECT_NE(on_gpu->device_tiles(), nullptr);
  const SourceP on_cpu = ops::run_op(
      ops::run_op(ops::run_op(rgb, ops::Gray{}, kCpu, "gray"), ops::Invert<1>{}, kCpu, "invert"), t, kCpu, "threshold");
  for (int64_t tile : {77, 256})
    EXPECT_EQ(test::diff_images(read_tiled(*on_gpu, tile).view(), read_tiled(*on_cpu, 1 << 20).view()), "")
        << "tile " << tile;
}

TEST(CpuVsCuda, Reductions) {
  TW_REQUIRE_GPU();
  for (auto [w, h] : {std::pair<int64_t, int64_t>{4097, 3001}, {17, 1}}) {
    const SourceP rgb = src(kRgb8, w, h, 9);
    const auto a = ops::reduce(*rgb, ops::Stats<3>{}, kCpu, "stats");
    const auto g = ops::reduce(*rgb, ops::Stats<3>{}, kGpu, "stats");
    for (int c = 0; c < 3; ++c) {
      EXPECT_EQ(a.sum[c], g.sum[c]);
      EXPECT_EQ(a.lo[c], g.lo[c]);
      EXPECT_EQ(a.hi[c], g.hi[c]);
    }
    for (int bins : {1, 7, 256}) {
      ops::ChannelHistogram<3> hst;
      hst.channel = 2, hst.n = bins;
      EXPECT_EQ(ops::histogram(*rgb, hst, kCpu, "h"), ops::histogram(*rgb, hst, kGpu, "h")) << bins;
    }
  }
  // A GPU chain's result reduced where it lies (its tiles made on the
  // device, nothing uploaded for the reduction): the same figures.
  {
    const SourceP rgb = src(kRgb8, 2049, 1031, 10);
    const SourceP gray_gpu = ops::run_op(rgb, ops::Gray{}, kGpu, "gray");
    const SourceP gray_cpu = ops::run_op(rgb, ops::Gray{}, kCpu, "gray");
    ASSERT_NE(gray_gpu->device_tiles(), nullptr);
    const auto a = ops::reduce(*gray_cpu, ops::Stats<1>{}, kCpu, "stats");
    const ByteCounts before = process_byte_counts();
    const auto g = ops::reduce(*gray_gpu, ops::Stats<1>{}, kGpu, "stats");
    ops::ChannelHistogram<1> hst;
    const auto hg = ops::histogram(*gray_gpu, hst, kGpu, "h");
    const ByteCounts moved = process_byte_counts() - before;
    EXPECT_EQ(a.sum[0], g.sum[0]);
    EXPECT_EQ(a.lo[0], g.lo[0]);
    EXPECT_EQ(a.hi[0], g.hi[0]);
    EXPECT_EQ(ops::histogram(*gray_cpu, hst, kCpu, "h"), hg);
    // Only the RGB input goes up (3 bytes a pixel, twice: two passes).
    EXPECT_LE(moved.uploaded, static_cast<uint64_t>(2 * 3 * 2049 * 1031));
  }
  // A flat image: every pixel in one bin (the privatised histograms' case).
  Image flat(kGray8, Rect(0, 0, 3000, 2000));
  flat.fill_zero();
  const auto hist = ops::histogram(MemorySource(std::move(flat)), ops::ChannelHistogram<1>{}, kGpu, "h");
  EXPECT_EQ(hist[0], 6000000u);
}

TEST(CpuVsCuda, CannyWithHysteresis) {
  TW_REQUIRE_GPU();
  test::TempDir tmp;
  const SourceP gray = src(kGray8, 3001, 2047, 12);
  ops::CannyParams p;
  p.low = 15, p.high = 45;
  ReconstructJob job;
  job.memory = 256 << 20;
  job.scratch_near = tmp.file("c.tif");
  const auto cpu = ops::canny_classic(gray, p, job);
  const Image want = read_tiled(*cpu.edges, 1 << 20);
  job.backend = kGpu;
  const auto gpu = ops::canny_classic(gray, p, job);
  EXPECT_EQ(test::diff_images(read_tiled(*gpu.edges, 1 << 20).view(), want.view()), "");
}

}  // namespace
}  // namespace tw
