// The streaming pyramid job end to end with an in-memory source and sink:
// every level equals whole-image REDUCE for any tile size, odd image sizes,
// and when a small memory budget forces the image into vertical stripes.
#include "jobs/pyramid/pyramid_job.hpp"

#include <gtest/gtest.h>
#include <tbb/global_control.h>

#include "engine/cuda/device.hpp"
#include "engine/memory_source.hpp"
#include "kernels/pyramid_reduce/pyramid_reduce.hpp"
#include "tests/support/memory_sink.hpp"
#include "tests/support/test_support.hpp"

namespace tw {
namespace {

using test::MemorySink;

void check_job(PixelFormat fmt, int64_t w, int64_t h, int64_t tile, int64_t min_size, size_t memory,
               int expect_stripes_at_least = 1, const Backend& backend = Backend{}, int64_t join_row = -1,
               PyramidStats* stats = nullptr) {
  Image src_img = test::pattern_image(fmt, w, h, static_cast<uint64_t>(w * 31 + h));
  Image copy(fmt, src_img.rect());
  copy_overlap(src_img.view(), copy.view());
  MemorySource src(std::move(copy));
  MemorySink sink(fmt, tile);
  PyramidJobOptions opt;
  opt.tile = tile;
  opt.min_size = min_size;
  opt.memory = memory;
  opt.backend = backend;
  opt.gpu_join_row = join_row;
  const PyramidStats st = run_pyramid(src, sink, opt);
  if (stats) *stats = st;
  EXPECT_GE(st.stripes, expect_stripes_at_least);
  const auto sizes = pyramid_level_sizes(w, h, min_size);
  ASSERT_EQ(st.level_sizes, sizes);
  Image want(fmt, src_img.rect());
  copy_overlap(src_img.view(), want.view());
  for (size_t k = 0; k < sizes.size(); ++k) {
    const Image got = sink.assemble(static_cast<int>(k), sizes[k].first, sizes[k].second);
    EXPECT_EQ(test::diff_images(got.view(), want.view()), "")
        << fmt.str() << " " << w << "x" << h << " tile " << tile << " level " << k << " stripes " << st.stripes;
    if (k + 1 < sizes.size()) want = reduce_image(want);
  }
  int64_t tiles = 0;
  for (auto [lw, lh] : sizes) tiles += ceil_div(lw, tile) * ceil_div(lh, tile);
  EXPECT_EQ(static_cast<int64_t>(sink.tile_count()), tiles);
  EXPECT_EQ(st.tiles_encoded, tiles);
}

TEST(PyramidJob, TileInvariance) {
  for (int64_t tile : {16, 32, 64, 256}) check_job(kRgb8, 333, 517, tile, 8, size_t{256} << 20);
}

TEST(PyramidJob, OddSizes) {
  check_job(kGray8, 1, 1, 16, 1, size_t{64} << 20);
  check_job(kGray8, 1, 700, 16, 1, size_t{64} << 20);
  check_job(kGray8, 700, 1, 16, 1, size_t{64} << 20);
  check_job(kRgb8, 257, 257, 256, 1, size_t{64} << 20);  // just above a tile
  check_job(kGray16, 513, 129, 64, 3, size_t{64} << 20);
}

// A budget too small for a whole band of rows: the job cuts level 0 into
// stripes (recomputing halos at the seams, handing a level through scratch)
// and must still produce identical pixels.
TEST(PyramidJob, StripesUnderSmallBudget) {
  check_job(kRgb8, 4000, 300, 16, 16, size_t{3} << 19, 2);
  check_job(kGray8, 20000, 100, 16, 1, size_t{3} << 19, 2);
}

// More threads than the budget has tile buffers for (16 threads need 4.5 MiB
// for 256-pixel tiles before any band): the pass runs on fewer threads and
// stays within the budget instead of failing.
TEST(PyramidJob, ManyThreadsSmallBudget) {
  tbb::global_control many(tbb::global_control::max_allowed_parallelism, 32);
  const size_t budget = size_t{3} << 20;
  PyramidStats st;
  check_job(kGray8, 1500, 700, 256, 1, budget, 1, Backend{}, -1, &st);
  EXPECT_LE(st.planned_bytes, budget);
}

// A pending device (--device auto or cuda as `tilewave pyramid` parses it)
// starts the pass on the CPU while CUDA starts and lets the GPU take the
// cascade over between two bands. Without a GPU the CPU finishes the pass
// ("auto") or the job fails with the usual one-line reason ("cuda"); with
// one, the GPU joins at the row asked for. Pixels are whole-image REDUCE.
TEST(PyramidJob, PendingDeviceStartsOnCpu) {
  const bool gpu = !cuda_devices().empty();
  Backend automatic = Backend::cuda(0);
  automatic.pending = automatic.optional = true;
  automatic.spelled = "auto";
  for (int64_t row : {0, 128, 384}) {
    PyramidStats st;
    check_job(kRgb8, 700, 517, 64, 1, size_t{256} << 20, 1, automatic, row, &st);
    EXPECT_EQ(st.gpu_from_row, gpu ? row : -1);
    EXPECT_EQ(st.backend, gpu ? "cuda:0" : "cpu");
  }
  if (!gpu) {
    Backend required = Backend::cuda(0);
    required.pending = true;
    required.spelled = "cuda";
    MemorySource src(test::pattern_image(kRgb8, 300, 300, 1));
    PyramidJobOptions opt;
    opt.tile = 64;
    opt.backend = required;
    // Found at the hand-over, or after a pass that ended before it.
    for (int64_t row : {int64_t{64}, int64_t{1} << 20}) {
      opt.gpu_join_row = row;
      MemorySink sink(kRgb8, 64);
      try {
        run_pyramid(src, sink, opt);
        ADD_FAILURE() << "--device cuda without a device ran (hand-over row " << row << ")";
      } catch (const InputError& e) {
        EXPECT_NE(std::string(e.what()).find("--device cuda: no usable CUDA device"), std::string::npos) << e.what();
      }
    }
  }
}

TEST(PyramidJob, BadInput) {
  MemorySource src(Image(kGray8, Rect(0, 0, 10, 10)));
  MemorySink sink(kGray8, 256);
  PyramidJobOptions opt;
  opt.tile = 100;
  EXPECT_THROW(run_pyramid(src, sink, opt), InputError);
  opt.tile = 256;
  opt.min_size = 0;
  EXPECT_THROW(run_pyramid(src, sink, opt), InputError);
  opt.min_size = 1;
  opt.memory = 1000;
  try {
    run_pyramid(src, sink, opt);
    ADD_FAILURE() << "no error for a tiny budget";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("too small"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace tw
