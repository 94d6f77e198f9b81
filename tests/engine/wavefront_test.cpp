// The wavefront engine's own invariants, with a rule written here (grayscale
// reconstruction by dilation, by plain sweeps): the result does not depend on
// the tile size (16, 64, 67, the whole image), the thread count, or the
// budget (tiles spilled and reloaded); the run ends; a seed crosses every
// tile border of a maze, so tiles run again when their halo changes; a tile
// nothing can reach is visited once.
#include "engine/wavefront/wavefront.hpp"

#include <gtest/gtest.h>
#include <tbb/global_control.h>
#include <tbb/task_arena.h>

#include <algorithm>
#include <atomic>

#include "tests/support/maze.hpp"
#include "tests/support/test_support.hpp"

namespace tw {
namespace {

// j(q) = max(j(q), min(j(p), i(q))) for neighbours p, until stable.
class DilationRule : public TilePropagator {
 public:
  explicit DilationRule(bool eight) : eight_(eight) {}
  bool propagate(const ImageView& j, const ImageView& i, const Rect& core) const override {
    bool changed_any = false, changed = true;
    while (changed) {
      changed = false;
      for (int pass = 0; pass < 2; ++pass)
        for (int64_t k = 0; k < core.h; ++k) {
          const int64_t y = pass == 0 ? core.y + k : core.y1() - 1 - k;
          for (int64_t m = 0; m < core.w; ++m) {
            const int64_t x = pass == 0 ? core.x + m : core.x1() - 1 - m;
            uint8_t& v = j.ptr<uint8_t>(x, y)[0];
            const uint8_t cap = i.ptr<uint8_t>(x, y)[0];
            for (int dy = -1; dy <= 1; ++dy)
              for (int dx = -1; dx <= 1; ++dx) {
                if ((dx == 0 && dy == 0) || (!eight_ && dx != 0 && dy != 0)) continue;
                const uint8_t n = std::min(j.ptr<uint8_t>(x + dx, y + dy)[0], cap);
                if (n > v) v = n, changed = true;
              }
          }
        }
      changed_any |= changed;
    }
    return changed_any;
  }
  void neutral(uint8_t* p) const override { p[0] = 0; }
  bool can_propagate(const uint8_t* from, const uint8_t* j, const uint8_t* i) const override {
    return std::min(from[0], i[0]) > j[0];
  }

 private:
  bool eight_;
};

struct Outcome {
  Image result;
  WavefrontStats stats;
};

Outcome run(const Image& marker, const Image& mask, int64_t tile, size_t budget, int connectivity,
            const TilePropagator* rule_override = nullptr, int max_concurrency = 0) {
  test::TempDir tmp;
  const int64_t W = mask.rect().w, H = mask.rect().h;
  ScratchStore j(kGray8, W, H, tile, budget, tmp.file("j")), i(kGray8, W, H, tile, budget, tmp.file("i"));
  for (int64_t ty = 0; ty < j.grid().rows(); ++ty)
    for (int64_t tx = 0; tx < j.grid().cols(); ++tx) {
      auto pj = j.acquire(tx, ty, true), pi = i.acquire(tx, ty, true);
      copy_overlap(marker.view(), pj.image().view());
      copy_overlap(mask.view(), pi.image().view());
      pj.mark_dirty(), pi.mark_dirty();
    }
  const DilationRule rule(connectivity == 8);
  WavefrontOptions opt;
  opt.connectivity = connectivity;
  opt.max_concurrency = max_concurrency;
  Outcome r;
  r.stats = run_wavefront(j, i, rule_override ? *rule_override : rule, opt);
  r.result = j.read(0, Rect(0, 0, W, H));
  return r;
}

TEST(Wavefront, ResultIndependentOfTilingThreadsAndBudget) {
  const Image mask = test::pattern_image(kGray8, 301, 203, 11);
  Image marker(kGray8, mask.rect());
  marker.fill_zero();
  for (int64_t y = 0; y < 203; y += 50)
    for (int64_t x = 0; x < 301; x += 70) marker.ptr<uint8_t>(x, y)[0] = mask.ptr<uint8_t>(x, y)[0];
  for (int conn : {4, 8}) {
    const Outcome whole = run(marker, mask, 512, size_t{1} << 30, conn);
    EXPECT_EQ(whole.stats.tiles, 1);
    for (int64_t tile : {16, 64, 67}) {
      const Outcome r = run(marker, mask, tile, size_t{1} << 30, conn);
      EXPECT_EQ(test::diff_images(r.result.view(), whole.result.view()), "") << "tile " << tile << " conn " << conn;
      EXPECT_GE(r.stats.tile_visits, r.stats.tiles);
    }
    // Two tiles in memory: everything else spills and comes back.
    const Outcome tight = run(marker, mask, 67, 2 * 67 * 67, conn);
    EXPECT_EQ(test::diff_images(tight.result.view(), whole.result.view()), "") << "spilling, conn " << conn;
    tbb::global_control one(tbb::global_control::max_allowed_parallelism, 1);
    const Outcome serial = run(marker, mask, 64, size_t{1} << 30, conn);
    EXPECT_EQ(test::diff_images(serial.result.view(), whole.result.view()), "") << "one thread, conn " << conn;
  }
}

// A marker of one pixel at the maze's entrance (1, 1), 0 elsewhere.
Image seed_at_maze_start(const Image& maze) {
  Image marker(kGray8, maze.rect());
  marker.fill_zero();
  marker.ptr<uint8_t>(1, 1)[0] = 200;
  return marker;
}

TEST(Wavefront, SeedCrossesEveryBorderOfAMaze) {
  const Image maze = test::serpentine_maze(200, 150);
  const Image marker = seed_at_maze_start(maze);
  const Outcome r = run(marker, maze, 32, size_t{1} << 30, 8);
  EXPECT_EQ(test::diff_images(r.result.view(), maze.view()), "") << "the corridor is not filled end to end";
  // The front leaves and re-enters tiles: they run more than once.
  EXPECT_GT(r.stats.tile_visits, 2 * r.stats.tiles);
}

TEST(Wavefront, UnreachableTilesRunOnce) {
  // No marker anywhere: each tile runs once, finds nothing, wakes nobody.
  const Image mask = test::pattern_image(kGray8, 256, 256, 3);
  Image marker(kGray8, mask.rect());
  marker.fill_zero();
  const Outcome r = run(marker, mask, 64, size_t{1} << 30, 8);
  EXPECT_EQ(r.stats.tile_visits, r.stats.tiles);
  EXPECT_EQ(test::diff_images(r.result.view(), marker.view()), "");
}

// The dilation rule, watched: how many tiles run at once, and how many
// threads the arena a tile runs in has.
class WatchedRule : public DilationRule {
 public:
  using DilationRule::DilationRule;
  bool propagate(const ImageView& j, const ImageView& i, const Rect& core) const override {
    const int now = ++running_;
    int seen = most_.load();
    while (now > seen && !most_.compare_exchange_weak(seen, now)) {
    }
    arena_threads_ = tbb::this_task_arena::max_concurrency();
    const bool changed = DilationRule::propagate(j, i, core);
    --running_;
    return changed;
  }
  mutable std::atomic<int> running_{0}, most_{0}, arena_threads_{0};
};

// With tiles in work limited (the CUDA engine keeps two), at most that many
// run at once, but each runs in the caller's arena with all its threads
// (its copies and the GPU rule's bit packing are parallel loops), and the
// result is the same.
TEST(Wavefront, LimitedTilesInWorkUseEveryThreadForEachTile) {
  const Image maze = test::serpentine_maze(200, 150);
  const Image marker = seed_at_maze_start(maze);
  const Outcome whole = run(marker, maze, 32, size_t{1} << 30, 8);
  tbb::global_control threads(tbb::global_control::max_allowed_parallelism, 4);
  tbb::task_arena caller(4);
  caller.execute([&] {
    const WatchedRule rule(true);
    const Outcome r = run(marker, maze, 32, size_t{1} << 30, 8, &rule, 1);
    EXPECT_EQ(test::diff_images(r.result.view(), whole.result.view()), "");
    EXPECT_EQ(rule.most_.load(), 1) << "tiles in work at once";
    EXPECT_EQ(rule.arena_threads_.load(), 4) << "a tile's arena";
    EXPECT_GT(r.stats.tile_visits, 2 * r.stats.tiles);
  });
}

}  // namespace
}  // namespace tw
