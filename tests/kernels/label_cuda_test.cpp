// The GPU's tile labelling equals the CPU's exactly: the kernel on its own
// (labels and first pixels of tiles of many shapes), and `label` run with
// the CUDA backend against the CPU backend on whole images.
#include "kernels/label/label_cuda.hpp"

#include <gtest/gtest.h>

#include <random>

#include "engine/memory_source.hpp"
#include "jobs/label/label_job.hpp"
#include "kernels/label/label.hpp"
#include "tests/support/gpu.hpp"
#include "tests/support/test_support.hpp"

namespace tw {
namespace {

std::vector<uint8_t> mask(int64_t w, int64_t h, int kind, uint64_t seed) {
  std::vector<uint8_t> m(static_cast<size_t>(w * h));
  std::mt19937_64 rng(seed);
  for (int64_t y = 0; y < h; ++y)
    for (int64_t x = 0; x < w; ++x) {
      uint8_t v = 0;
      switch (kind) {
        case 0:
          v = rng() % 100 < 55;
          break;  // noise near percolation
        case 1:
          v = (x + y) % 2 == 0;
          break;  // checkerboard
        case 2:
          v = y % 4 == 0 || (y % 8 < 4 ? x == w - 1 : x == 0);
          break;  // serpentine
        case 3:
          v = ((x / 7) * 31 + (y / 5) * 17) % 3 != 0;
          break;  // blocks
        default:
          v = 1;
      }
      m[static_cast<size_t>(y * w + x)] = v;
    }
  return m;
}

TEST(LabelCuda, KernelEqualsCpu) {
  TW_REQUIRE_GPU();
  auto gpu = label::make_cuda_tile_labeler(0, 2048, 2048);
  label::TileScratch s;
  for (auto [w, h] :
       {std::pair<int64_t, int64_t>{1, 1}, {1, 700}, {700, 1}, {33, 9}, {256, 256}, {1000, 777}, {2048, 2048}})
    for (int kind = 0; kind < 5; ++kind)
      for (int conn : {4, 8}) {
        const auto m = mask(w, h, kind, static_cast<uint64_t>(w * 31 + h));
        std::vector<uint32_t> a(m.size()), b(m.size()), fa, fb;
        const uint32_t na =
            label::label_tile(m.data(), static_cast<size_t>(w), w, h, conn, a.data(), static_cast<size_t>(w), fa, s);
        const uint32_t nb =
            gpu->label(m.data(), static_cast<size_t>(w), w, h, conn, b.data(), static_cast<size_t>(w), fb);
        ASSERT_EQ(na, nb) << w << "x" << h << " kind " << kind << " conn " << conn;
        size_t bad = 0, first = 0;
        for (size_t i = 0; i < a.size(); ++i)
          if (a[i] != b[i] && bad++ == 0) first = i;
        EXPECT_EQ(bad, 0u) << w << "x" << h << " kind " << kind << " conn " << conn << ": first at ("
                           << first % static_cast<size_t>(w) << ", " << first / static_cast<size_t>(w) << "): cpu "
                           << a[first] << " gpu " << b[first];
        EXPECT_EQ(fa, fb);
      }
}

TEST(LabelCuda, JobEqualsCpuAtEveryTile) {
  TW_REQUIRE_GPU();
  const int64_t w = 3001, h = 2203;
  for (int kind : {0, 2, 3})
    for (int conn : {4, 8}) {
      const auto m = mask(w, h, kind, 5);
      Image img(kGray8, Rect(0, 0, w, h));
      for (int64_t y = 0; y < h; ++y) std::copy_n(m.data() + y * w, w, img.row<uint8_t>(y));
      auto src = std::make_shared<MemorySource>(std::move(img));
      ExecContext cpu;
      cpu.tile = 64;
      const Image want = label_components(src, conn, cpu)->read(0, Rect(0, 0, w, h));
      for (size_t memory : {size_t{1} << 30, size_t{64} << 20}) {
        ExecContext ctx;
        ctx.backend = Backend::cuda(0);
        ctx.tile = 256;
        ctx.memory = memory;
        LabelStats st;
        const Image got = label_components(src, conn, ctx, &st)->read(0, Rect(0, 0, w, h));
        EXPECT_TRUE(st.gpu);
        // The GPU labels some tiles, the CPU's threads any the GPU's few
        // labelers are too busy to take: one result either way.
        EXPECT_GT(st.gpu_tiles, 0);
        EXPECT_LE(st.gpu_tiles, st.tiles);
        EXPECT_EQ(test::diff_images(got.view(), want.view()), "") << "kind " << kind << " conn " << conn;
      }
    }
}

}  // namespace
}  // namespace tw
