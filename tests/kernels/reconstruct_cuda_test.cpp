// CpuVsCuda for reconstruction: the IWPP-MP kernel's result equals the CPU
// engine's exactly (the reconstruction is unique), on every variant, the
// worst cases, and across GPU tiles. Skipped without a CUDA device.
#include <gtest/gtest.h>

#include <random>

#include "engine/cuda/device.hpp"
#include "engine/memory_source.hpp"
#include "kernels/reconstruct/reconstruct_job.hpp"
#include "tests/support/gpu.hpp"
#include "tests/support/maze.hpp"
#include "tests/support/test_support.hpp"

namespace tw {
namespace {

Image copy_of(const Image& a) {
  Image b(a.fmt(), a.rect());
  copy_overlap(a.view(), b.view());
  return b;
}

Image run(const Image& seed, const Image& mask, ReconstructParams p, bool cuda, ReconstructResult* out = nullptr,
          int64_t gpu_tile = kCudaTile) {
  MemorySource s(copy_of(seed)), m(copy_of(mask));
  ReconstructJob job;
  job.params = p;
  job.gpu_tile = gpu_tile;
  job.scratch_near = "/tmp/tilewave-test";
  if (cuda) job.backend.kind = Backend::Kind::kCuda;
  ReconstructResult r = reconstruct(s, m, job);
  Image img = r.image->read(0, mask.rect());
  if (out) *out = std::move(r);
  return img;
}

void expect_same(const Image& seed, const Image& mask, ReconstructParams p, const std::string& what,
                 int64_t gpu_tile = kCudaTile) {
  ReconstructResult gr;
  const Image g = run(seed, mask, p, true, &gr, gpu_tile);
  const Image c = run(seed, mask, p, false);
  EXPECT_EQ(test::diff_images(g.view(), c.view()), "") << what;
  EXPECT_GT(gr.gpu.megapixel_visits, 0) << what;
}
TEST(CpuVsCuda, ReconstructEveryVariant) {
  TW_REQUIRE_GPU();
  for (PixelFormat fmt : {kGray8, kGray16})
    for (ReconstructMethod m : {ReconstructMethod::kDilation, ReconstructMethod::kErosion})
      for (int conn : {4, 8}) {
        const bool dil = m == ReconstructMethod::kDilation;
        Image mask = test::pattern_image(fmt, 1000, 777, 11);
        Image seed = copy_of(mask);
        std::mt19937_64 rng(5);
        for (int64_t y = 0; y < 777; ++y)
          for (int64_t x = 0; x < 1000; ++x) {
            const bool keep = rng() % 40 == 0;
            if (fmt.type == SampleType::kU8) {
              uint8_t& v = seed.ptr<uint8_t>(x, y)[0];
              v = keep ? v : (dil ? uint8_t(v / 3) : uint8_t(255 - (255 - v) / 3));
            } else {
              uint16_t& v = seed.ptr<uint16_t>(x, y)[0];
              v = keep ? v : (dil ? uint16_t(v / 3) : uint16_t(65535 - (65535 - v) / 3));
            }
          }
        expect_same(seed, mask, {m, conn}, fmt.str() + (dil ? " dilation " : " erosion ") + std::to_string(conn));
      }
}

// One seed in a flat mask across two GPU tiles (4096 wide each), and a maze.
TEST(CpuVsCuda, ReconstructWorstCases) {
  TW_REQUIRE_GPU();
  Image mask(kGray8, Rect(0, 0, 5000, 300));
  for (int64_t y = 0; y < 300; ++y) std::memset(mask.row<uint8_t>(y), 255, 5000);
  Image seed(kGray8, mask.rect());
  seed.fill_zero();
  seed.ptr<uint8_t>(4999, 299)[0] = 91;
  expect_same(seed, mask, {ReconstructMethod::kDilation, 8}, "single seed, two tiles");
  const int64_t W = 1003, H = 997;
  const Image maze = test::serpentine_maze(W, H);
  Image mseed(kGray8, maze.rect());
  mseed.fill_zero();
  mseed.ptr<uint8_t>(1, 1)[0] = 150;
  for (int conn : {4, 8}) expect_same(mseed, maze, {ReconstructMethod::kDilation, conn}, "maze " + std::to_string(conn));
  // The corridor crosses the borders of 256-pixel GPU tiles back and forth.
  expect_same(mseed, maze, {ReconstructMethod::kDilation, 8}, "maze, GPU tiles of 256", 256);
}

}  // namespace
}  // namespace tw
