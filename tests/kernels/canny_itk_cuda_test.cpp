// `canny --variant itk` on the GPU equals the CPU bit for bit: the float
// discrete Gaussian, the zero-crossing classes (float and double arithmetic
// rounded as written on both) and the edges after hysteresis, on odd sizes
// and odd tiles. Label `gpu`: skipped without a device.
#include <gtest/gtest.h>

#include <cstring>

#include "engine/memory_source.hpp"
#include "engine/ops/run_op.hpp"
#include "jobs/canny/canny_job.hpp"
#include "kernels/canny/canny_itk.hpp"
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

// Float images compared by their bits (diff_images compares samples as
// integers).
std::string diff_bits(const Image& a, const Image& b) {
  int64_t n = 0, fx = -1, fy = -1;
  float va = 0, vb = 0;
  for (int64_t y = 0; y < a.rect().h; ++y)
    for (int64_t x = 0; x < a.rect().w; ++x) {
      const float p = a.ptr<float>(x, y)[0], q = b.ptr<float>(x, y)[0];
      if (std::memcmp(&p, &q, sizeof p) != 0) {
        if (n++ == 0) fx = x, fy = y, va = p, vb = q;
      }
    }
  if (n == 0) return "";
  return std::to_string(n) + " differ; first at (" + std::to_string(fx) + ", " + std::to_string(fy) +
         "): " + std::to_string(va) + " vs " + std::to_string(vb);
}

TEST(CpuVsCuda, CannyItkOps) {
  TW_REQUIRE_GPU();
  for (auto [w, h] : {std::pair<int64_t, int64_t>{1031, 777}, {2048, 1500}, {5, 3}, {1, 40}}) {
    SCOPED_TRACE(std::to_string(w) + "x" + std::to_string(h));
    const SourceP gray = std::make_shared<MemorySource>(test::pattern_image(kGray8, w, h, 21));
    for (double variance : {0.5, 1.96, 9.0, 200.0}) {
      SCOPED_TRACE("variance " + std::to_string(variance));
      ops::CannyItkParams p;
      p.variance = variance, p.upper = 3, p.lower = 1;
      const auto g = ops::make_itk_gaussian(p);
      const Image cpu_l = read_tiled(*ops::run_op(gray, g, kCpu, "gaussian"), 1 << 20);
      for (int64_t tile : {77, 1 << 20})
        EXPECT_EQ(diff_bits(read_tiled(*ops::run_op(gray, g, kGpu, "gaussian"), tile), cpu_l), "") << "tile " << tile;
      // The classes from the same float image on both.
      Image copy(cpu_l.fmt(), cpu_l.rect());
      copy_overlap(cpu_l.view(), copy.view());
      const SourceP l = std::make_shared<MemorySource>(std::move(copy));
      const auto c = ops::make_canny_itk_classes(p);
      const Image cpu_c = read_tiled(*ops::run_op(l, c, kCpu, "classes"), 1 << 20);
      if (w * h > 1000) {
        int64_t n[3] = {0, 0, 0};
        for (int64_t y = 0; y < h; ++y)
          for (int64_t x = 0; x < w; ++x) {
            const uint8_t v = cpu_c.ptr<uint8_t>(x, y)[0];
            ++n[v == ops::kCannyStrong ? 2 : v == ops::kCannyWeak ? 1 : 0];
          }
        EXPECT_GT(n[1], 0) << "weak pixels";
        EXPECT_GT(n[2], 0) << "strong pixels";
      }
      for (int64_t tile : {77, 1 << 20})
        EXPECT_EQ(test::diff_images(read_tiled(*ops::run_op(l, c, kGpu, "classes"), tile).view(), cpu_c.view()), "")
            << "tile " << tile;
    }
  }
}

TEST(CpuVsCuda, CannyItkWithHysteresis) {
  TW_REQUIRE_GPU();
  test::TempDir tmp;
  const SourceP gray = std::make_shared<MemorySource>(test::pattern_image(kGray8, 3001, 2047, 12));
  for (auto [upper, lower] : {std::pair<double, double>{7, 4}, {3, 1}}) {
    SCOPED_TRACE("upper " + std::to_string(upper) + " lower " + std::to_string(lower));
    ops::CannyItkParams p;
    p.upper = upper, p.lower = lower;
    ReconstructJob job;
    job.memory = 256 << 20;
    job.scratch_near = tmp.file("c.tif");
    const auto cpu = ops::canny_itk(gray, p, job);
    const Image want = read_tiled(*cpu.edges, 1 << 20);
    int64_t edges = 0;
    for (int64_t y = 0; y < want.rect().h; ++y)
      for (int64_t x = 0; x < want.rect().w; ++x) edges += want.ptr<uint8_t>(x, y)[0] != 0;
    EXPECT_GT(edges, 5000) << "the image should have edges";
    job.backend = kGpu;
    const auto gpu = ops::canny_itk(gray, p, job);
    EXPECT_EQ(test::diff_images(read_tiled(*gpu.edges, 1 << 20).view(), want.view()), "");
  }
}

}  // namespace
}  // namespace tw
