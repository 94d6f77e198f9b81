// A pyramid split over ranks by bands of rows (jobs/pyramid/
// banded_pyramid.hpp), on ranks in one process: rank 0's sink must see
// exactly the writes a single pass makes — the same tiles, the same bytes,
// in the same order (the order fixes every offset in the file, so equal
// writes make a byte-identical file; the mpirun CLI test compares files).
#include "jobs/pyramid/banded_pyramid.hpp"

#include <gtest/gtest.h>

#include <mutex>
#include <tuple>

#include "engine/memory_source.hpp"
#include "engine/ranks/local_ranks.hpp"
#include "kernels/pyramid_reduce/pyramid_reduce.hpp"
#include "tests/support/recording_sink.hpp"
#include "tests/support/test_support.hpp"

namespace tw {
namespace {

using test::RecordingSink;

void check_banded(PixelFormat fmt, int64_t w, int64_t h, int64_t tile, int ranks, int64_t min_size = 1,
                  size_t memory = size_t{256} << 20, int* shared_levels = nullptr) {
  const Image img = test::pattern_image(fmt, w, h, static_cast<uint64_t>(w * 7 + h));
  PyramidJobOptions opt;
  opt.tile = tile;
  opt.min_size = min_size;
  opt.memory = memory;
  PyramidStats st;
  EXPECT_EQ(test::compare_split(img, opt, ranks, nullptr, &st), "")
      << w << "x" << h << " tile " << tile << " ranks " << ranks;
  if (shared_levels) *shared_levels = st.shared_levels;
}

TEST(BandedPyramid, SameWritesAsOnePass) {
  int shared = 0;
  check_banded(kRgb8, 333, 2701, 16, 2, 1, size_t{256} << 20, &shared);
  EXPECT_GE(shared, 2);
  for (int ranks : {2, 3, 5}) check_banded(kGray8, 203, 2049, 16, ranks);
  check_banded(kRgb8, 333, 1517, 16, 2);
  check_banded(kGray16, 150, 999, 32, 3, 4);
  check_banded(kRgb8, 64, 4096, 64, 4);   // exact multiples everywhere
  check_banded(kGray8, 40, 4097, 16, 3);  // one row past a multiple
}

// Levels 1x1 at the end, shares whose ghost rows reach the image's top and
// bottom, and a rank count that leaves ranks without rows.
TEST(BandedPyramid, EdgesAndIdleRanks) {
  check_banded(kGray8, 17, 300, 16, 2);
  check_banded(kGray8, 100, 129, 16, 7);
  check_banded(kRgb8, 1, 2000, 16, 3);
}

// Too short to share: rank 0 alone makes it, the others wait.
TEST(BandedPyramid, TooFewRowsRunsOnRankZero) {
  int shared = -1;
  check_banded(kRgb8, 300, 40, 16, 3, 1, size_t{256} << 20, &shared);
  EXPECT_EQ(shared, 0);
}

TEST(BandedPyramid, TightBudgetIsRefusedOnEveryRank) {
  const Image img = test::pattern_image(kGray8, 20000, 400, 1);
  PyramidJobOptions opt;
  opt.tile = 16;
  opt.memory = size_t{3} << 19;
  try {
    run_local_ranks(2, [&](Ranks& r) {
      Image copy(kGray8, img.rect());
      copy_overlap(img.view(), copy.view());
      MemorySource src(std::move(copy));
      RecordingSink sink;
      PyramidJobOptions o = opt;
      o.ranks = &r;
      run_pyramid(src, sink, o);
    });
    FAIL() << "expected an error";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("whole bands of rows"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace tw
