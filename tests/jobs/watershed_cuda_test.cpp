// CpuVsCuda for the watershed: the GPU's block rounds reach the same unique
// fixed point as the CPU's Dijkstra, label for label, on random images full
// of plateaus and ties, touching discs, masks, both connectivities, and GPU
// tiles small enough that floods cross many of them (and blocks that stick
// out of the tile). Skipped without a CUDA device.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "engine/memory_source.hpp"
#include "jobs/watershed/watershed_job.hpp"
#include "tests/support/gpu.hpp"
#include "tests/support/test_support.hpp"

namespace tw {
namespace {

constexpr PixelFormat kU32x1{SampleType::kU32, 1};

std::shared_ptr<const TileSource> source_of(const Image& img) {
  Image c(img.fmt(), img.rect());
  copy_overlap(img.view(), c.view());
  return std::make_shared<MemorySource>(std::move(c));
}

Image run(const Image& f, const Image& markers, const Image* mask, int conn, bool cuda, int64_t gpu_tile,
          WatershedResult* keep = nullptr) {
  const auto fs = source_of(f), ms = source_of(markers);
  std::shared_ptr<const TileSource> ks;
  if (mask) ks = source_of(*mask);
  WatershedJob job;
  job.connectivity = conn;
  job.tile = 64;
  job.gpu_tile = gpu_tile;
  job.scratch_near = "/tmp/tilewave-test";
  if (cuda) job.backend = Backend::cuda(0);
  WatershedResult r = watershed(*fs, *ms, ks.get(), job);
  Image out = r.labels->read(0, f.rect());
  if (keep) *keep = std::move(r);
  return out;
}

// Plateaus (few grey levels), repeated labels, a mask with holes.
void random_case(SampleType t, int64_t W, int64_t H, uint64_t seed, Image& f, Image& mk, Image& mask) {
  std::mt19937_64 rng(seed);
  f = Image(PixelFormat{t, 1}, Rect(0, 0, W, H));
  mk = Image(kU32x1, Rect(0, 0, W, H));
  mask = Image(kGray8, Rect(0, 0, W, H));
  const int levels = 1 + static_cast<int>(rng() % 5);
  for (int64_t y = 0; y < H; ++y)
    for (int64_t x = 0; x < W; ++x) {
      const int v = static_cast<int>(rng() % levels);
      if (t == SampleType::kU8) *f.ptr<uint8_t>(x, y) = static_cast<uint8_t>(v * 60);
      if (t == SampleType::kU16) *f.ptr<uint16_t>(x, y) = static_cast<uint16_t>(v * 9000 + rng() % 3);
      if (t == SampleType::kF32) *f.ptr<float>(x, y) = v == 0 ? -0.0f : std::ldexp(1.0f, v) - 3.0f;
      *mk.ptr<uint32_t>(x, y) = rng() % 211 == 0 ? static_cast<uint32_t>(1 + rng() % 6) : 0;
      *mask.ptr<uint8_t>(x, y) = rng() % 9 == 0 ? 0 : 255;
    }
}

TEST(WatershedCuda, CpuVsCudaRandom) {
  TW_REQUIRE_GPU();
  int cases = 0;
  for (uint64_t seed = 1; seed <= 6; ++seed)
    for (SampleType t : {SampleType::kU8, SampleType::kU16, SampleType::kF32}) {
      Image f, mk, mask;
      random_case(t, 300 + static_cast<int64_t>(seed * 37), 211 + static_cast<int64_t>(seed * 11), seed, f, mk, mask);
      for (int conn : {4, 8})
        for (bool masked : {false, true})
          for (int64_t gpu_tile : {64, 256}) {
            const Image* m = masked ? &mask : nullptr;
            EXPECT_EQ(
                test::diff_images(run(f, mk, m, conn, true, gpu_tile).view(), run(f, mk, m, conn, false, 0).view()), "")
                << "seed " << seed << " " << sample_name(t) << " conn " << conn << " mask " << masked << " gpu tile "
                << gpu_tile;
            ++cases;
          }
    }
  std::printf("[ info     ] %d cases: CUDA equal to the CPU\n", cases);
}

// Large basins: one seed floods a whole smooth image across many GPU tiles
// and blocks; and a serpentine-like ramp.
TEST(WatershedCuda, CpuVsCudaLongFloods) {
  TW_REQUIRE_GPU();
  const int64_t W = 1500, H = 1100;
  Image f(kGray16, Rect(0, 0, W, H)), mk(kU32x1, Rect(0, 0, W, H));
  mk.fill_zero();
  for (int64_t y = 0; y < H; ++y)
    for (int64_t x = 0; x < W; ++x)
      *f.ptr<uint16_t>(x, y) = static_cast<uint16_t>(30000 + 20000 * std::sin(x * 0.01) * std::cos(y * 0.013));
  *mk.ptr<uint32_t>(3, 5) = 2;
  *mk.ptr<uint32_t>(W - 7, H - 2) = 1;
  *mk.ptr<uint32_t>(W / 2, H / 2) = 9;
  for (int conn : {4, 8}) {
    WatershedResult r;
    const Image gpu = run(f, mk, nullptr, conn, true, 512, &r);
    EXPECT_EQ(test::diff_images(gpu.view(), run(f, mk, nullptr, conn, false, 0).view()), "") << "conn " << conn;
    std::printf("[ info     ] %lldx%lld, conn %d: %lld GPU rounds, kernels %.1f ms, copies %.1f ms\n", (long long)W,
                (long long)H, conn, (long long)r.gpu.rounds, r.gpu.kernel_seconds * 1e3, r.gpu.transfer_seconds * 1e3);
  }
}

TEST(WatershedCuda, CpuVsCudaTouchingDiscs) {
  TW_REQUIRE_GPU();
  if (!test::python_has("skimage.segmentation")) GTEST_SKIP() << "scikit-image missing";
  test::TempDir tmp;
  const auto r = test::run_python(test::oracle("watershed_oracle.py"), {"discs", "2000", "1500", "4", "0", tmp.path()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const Image f = test::load_npy(tmp.file("image.npy")), mk = test::load_npy(tmp.file("markers.npy")),
              mask = test::load_npy(tmp.file("mask.npy"));
  for (int conn : {4, 8}) {
    WatershedResult g;
    const Image gpu = run(f, mk, &mask, conn, true, 0, &g);
    EXPECT_EQ(test::diff_images(gpu.view(), run(f, mk, &mask, conn, false, 0).view()), "") << "conn " << conn;
    std::printf(
        "[ info     ] discs 2000x1500, conn %d: %lld visits, %lld GPU rounds, kernels %.1f ms, copies %.1f ms\n", conn,
        (long long)g.wavefront.tile_visits, (long long)g.gpu.rounds, g.gpu.kernel_seconds * 1e3,
        g.gpu.transfer_seconds * 1e3);
  }
}

}  // namespace
}  // namespace tw
