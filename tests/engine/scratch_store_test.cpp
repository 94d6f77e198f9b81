// The out-of-core tile store of the wavefront ops: what is written reads
// back whatever the budget (tiles spilled to the scratch file and reloaded),
// never-written tiles read as zeros, pinned tiles are never evicted, the
// budget holds when nothing is pinned, and many threads may use it at once.
#include "engine/scratch_store.hpp"

#include <gtest/gtest.h>
#include <tbb/parallel_for.h>

#include "tests/support/test_support.hpp"

namespace tw {
namespace {

uint8_t value_at(int64_t x, int64_t y) {
  return static_cast<uint8_t>((x * 7 + y * 13) & 0xff);
}

void fill_tile(ScratchStore& s, int64_t tx, int64_t ty) {
  auto pin = s.acquire(tx, ty, /*overwrite=*/true);
  Image& img = pin.image();
  const Rect in = s.grid().tile_rect(tx, ty);
  for (int64_t y = in.y; y < in.y1(); ++y)
    for (int64_t x = in.x; x < in.x1(); ++x) img.ptr<uint8_t>(x, y)[0] = value_at(x, y);
  pin.mark_dirty();
}

TEST(ScratchStore, SpillsAndReloadsUnderATinyBudget) {
  test::TempDir tmp;
  // 67-px tiles over an odd-sized image; room for two tiles in memory.
  ScratchStore s(kGray8, 300, 211, 67, 2 * 67 * 67, tmp.file("x.tif"));
  for (int64_t ty = 0; ty < s.grid().rows(); ++ty)
    for (int64_t tx = 0; tx < s.grid().cols(); ++tx) fill_tile(s, tx, ty);
  EXPECT_GT(s.stats().spills, 0u);
  EXPECT_LE(s.stats().peak_bytes, size_t{4} * 67 * 67 + 4096) << "more than the budget plus one pinned tile";
  // Read back as a source, in rects that cross tiles.
  const Image all = s.read(0, Rect(0, 0, 300, 211));
  for (int64_t y = 0; y < 211; ++y)
    for (int64_t x = 0; x < 300; ++x) ASSERT_EQ(all.ptr<uint8_t>(x, y)[0], value_at(x, y)) << x << "," << y;
  EXPECT_GT(s.stats().loads, 0u);
  EXPECT_TRUE(tmp.list().empty()) << "the scratch file has a name";
}

TEST(ScratchStore, UnwrittenTilesReadAsZeroAndPinsStay) {
  test::TempDir tmp;
  ScratchStore s(PixelFormat{SampleType::kU16, 1}, 100, 100, 32, 1, tmp.file("x.tif"));
  auto a = s.acquire(0, 0);
  a.image().ptr<uint16_t>(5, 5)[0] = 1234;
  a.mark_dirty();
  {
    // Budget of one byte: everything unpinned goes, but `a` is pinned.
    for (int64_t t = 1; t < 4; ++t) {
      auto b = s.acquire(t, t);
      EXPECT_EQ(b.image().ptr<uint16_t>(t * 32, t * 32)[0], 0) << "a fresh tile is zeros";
    }
  }
  EXPECT_EQ(a.image().ptr<uint16_t>(5, 5)[0], 1234) << "a pinned tile was evicted";
  a = ScratchStore::Pin();  // released: it may spill now
  auto again = s.acquire(0, 0);
  EXPECT_EQ(again.image().ptr<uint16_t>(5, 5)[0], 1234);
}

TEST(ScratchStore, ManyThreadsAtOnce) {
  test::TempDir tmp;
  ScratchStore s(kGray8, 1000, 700, 64, 6 * 64 * 64, tmp.file("x.tif"));
  const int64_t cols = s.grid().cols(), n = cols * s.grid().rows();
  tbb::parallel_for(int64_t{0}, n, [&](int64_t i) { fill_tile(s, i % cols, i / cols); });
  // Every thread reads back tiles others wrote, while others are evicted.
  tbb::parallel_for(int64_t{0}, 4 * n, [&](int64_t k) {
    const int64_t i = (k * 7919) % n, tx = i % cols, ty = i / cols;
    auto pin = s.acquire(tx, ty);
    const Rect in = s.grid().tile_rect(tx, ty);
    for (int64_t y = in.y; y < in.y1(); y += 13)
      for (int64_t x = in.x; x < in.x1(); x += 11) ASSERT_EQ(pin.image().ptr<uint8_t>(x, y)[0], value_at(x, y));
  });
}

}  // namespace
}  // namespace tw
