// The wavefront split over ranks (run_local_ranks: ranks as threads of one
// process) leaves on every rank exactly the one-process result, which is
// itself checked against the whole-image reference (reconstruct_image): a
// serpentine corridor whose one path crosses every rank boundary again and
// again; random masks of several densities; 4- and 8-connectivity; 8 and
// 16 bits; 2, 3 and 5 ranks; tiles of 16, 32 and 64 on an odd image size;
// ranks that own no tile row; stores of an eighth of the image (spilling);
// and through the reconstruct job (fill-holes, reconstruction by erosion).
// A rank that fails ends them all with its error.
#include "engine/wavefront/ranked_wavefront.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <deque>
#include <exception>
#include <mutex>
#include <random>
#include <thread>

#include "engine/memory_source.hpp"
#include "engine/ranks/local_ranks.hpp"
#include "jobs/reconstruct/reconstruct_job.hpp"
#include "kernels/reconstruct/reconstruct.hpp"
#include "tests/support/maze.hpp"
#include "tests/support/test_support.hpp"

namespace tw {
namespace {

constexpr int64_t kW = 203, kH = 517;  // odd sizes: partial tiles on both axes
constexpr size_t kAmple = size_t{1} << 30;

Image copy_of(const Image& a) {
  Image b(a.fmt(), a.rect());
  copy_overlap(a.view(), b.view());
  return b;
}

// 8-bit values scaled to the format's range (x 257 for 16 bits).
Image widened(const Image& a, PixelFormat fmt) {
  if (fmt == kGray8) return copy_of(a);
  Image b(fmt, a.rect());
  for (int64_t y = 0; y < a.rect().h; ++y)
    for (int64_t x = 0; x < a.rect().w; ++x)
      b.ptr<uint16_t>(x, y)[0] = static_cast<uint16_t>(a.ptr<uint8_t>(x, y)[0] * 257);
  return b;
}

// The serpentine maze turned on its side: vertical corridors joined
// alternately at the bottom and the top, so the one path from (1, 1) runs
// down through every band of rows and back up, once per corridor (~33
// times across each rank boundary here).
Image vertical_serpentine(int64_t w, int64_t h) {
  const Image m = test::serpentine_maze(h, w);
  Image t(kGray8, Rect(0, 0, w, h));
  for (int64_t y = 0; y < h; ++y)
    for (int64_t x = 0; x < w; ++x) t.ptr<uint8_t>(x, y)[0] = m.ptr<uint8_t>(y, x)[0];
  return t;
}

Image top_rows(const Image& a, int64_t h) {
  Image b(a.fmt(), Rect(0, 0, a.rect().w, h));
  copy_overlap(a.view(), b.view());
  return b;
}

struct Case {
  Image marker, mask;
  ReconstructParams params;
};

Case serpentine_case(PixelFormat fmt, int connectivity) {
  Case c;
  c.mask = widened(vertical_serpentine(kW, kH), fmt);
  Image seed(kGray8, c.mask.rect());
  seed.fill_zero();
  seed.ptr<uint8_t>(1, 1)[0] = 200;
  c.marker = widened(seed, fmt);
  c.params.connectivity = connectivity;
  return c;
}

// Foreground (a random level) with probability `density`, else 0; the
// marker: the mask at a few random seeds, 0 (dilation) or the maximum
// (erosion) elsewhere.
Case random_case(PixelFormat fmt, double density, int connectivity, ReconstructMethod method, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(0, 1);
  const int64_t maxv = fmt == kGray8 ? 255 : 65535;
  Case c;
  c.params.connectivity = connectivity;
  c.params.method = method;
  c.mask = Image(fmt, Rect(0, 0, kW, kH));
  c.marker = Image(fmt, c.mask.rect());
  const bool dil = method == ReconstructMethod::kDilation;
  for (int64_t y = 0; y < kH; ++y)
    for (int64_t x = 0; x < kW; ++x) {
      const int64_t m = u(rng) < density ? 1 + static_cast<int64_t>(u(rng) * static_cast<double>(maxv - 1)) : 0;
      const int64_t k = u(rng) < 0.002 ? m : dil ? 0 : maxv;
      if (fmt == kGray8)
        c.mask.ptr<uint8_t>(x, y)[0] = static_cast<uint8_t>(m),
                               c.marker.ptr<uint8_t>(x, y)[0] = static_cast<uint8_t>(k);
      else
        c.mask.ptr<uint16_t>(x, y)[0] = static_cast<uint16_t>(m),
                                c.marker.ptr<uint16_t>(x, y)[0] = static_cast<uint16_t>(k);
    }
  return c;
}

struct Outcome {
  Image result;
  WavefrontStats stats;
};

// One rank's (or the one process's) run: stores loaded with the whole
// marker and mask, as every rank of a split job loads them.
Outcome run_once(const Case& c, int64_t tile, size_t budget, Ranks* ranks, const TilePropagator* rule = nullptr,
                 int max_concurrency = 0) {
  test::TempDir tmp;
  const PixelFormat fmt = c.mask.fmt();
  const int64_t W = c.mask.rect().w, H = c.mask.rect().h;
  ScratchStore j(fmt, W, H, tile, budget, tmp.file("j")), i(fmt, W, H, tile, budget, tmp.file("i"));
  for (int64_t ty = 0; ty < j.grid().rows(); ++ty)
    for (int64_t tx = 0; tx < j.grid().cols(); ++tx) {
      auto pj = j.acquire(tx, ty, true), pi = i.acquire(tx, ty, true);
      copy_overlap(c.marker.view(), pj.image().view());
      copy_overlap(c.mask.view(), pi.image().view());
      pj.mark_dirty(), pi.mark_dirty();
    }
  const auto own_rule = make_reconstruct_rule(fmt, c.params);
  WavefrontOptions opt;
  opt.connectivity = c.params.connectivity;
  opt.ranks = ranks;
  opt.max_concurrency = max_concurrency;
  Outcome r;
  r.stats = run_wavefront(j, i, rule ? *rule : *own_rule, opt);
  r.result = j.read(0, Rect(0, 0, W, H));
  return r;
}

std::vector<Outcome> run_ranked(int n, const Case& c, int64_t tile, size_t budget,
                                const TilePropagator* rule = nullptr) {
  std::vector<Outcome> out(static_cast<size_t>(n));
  run_local_ranks(n, [&](Ranks& r) { out[static_cast<size_t>(r.rank())] = run_once(c, tile, budget, &r, rule); });
  return out;
}

Image whole_reference(const Case& c) {
  Image j = copy_of(c.marker);
  reconstruct_image(j, c.mask, c.params);
  return j;
}

// Every rank's J equals the one-process result (and the stats agree).
void expect_ranks_equal(const Case& c, int n, int64_t tile, size_t budget, const Image& single,
                        const std::string& what) {
  const std::vector<Outcome> out = run_ranked(n, c, tile, budget);
  for (int r = 0; r < n; ++r) {
    const Outcome& o = out[static_cast<size_t>(r)];
    EXPECT_EQ(test::diff_images(o.result.view(), single.view()), "")
        << what << ", " << n << " ranks, tile " << tile << ", rank " << r;
    EXPECT_EQ(o.stats.tile_visits, out[0].stats.tile_visits) << "stats are summed over ranks";
    EXPECT_GE(o.stats.tile_visits, o.stats.tiles);
  }
}

TEST(RankedWavefront, BandsAreBalancedAndCoverEveryRow) {
  for (int64_t rows : {0, 1, 2, 7, 33})
    for (int n : {1, 2, 3, 5, 8}) {
      int64_t next = 0;
      for (int r = 0; r < n; ++r) {
        const RowBand b = wavefront_band(rows, r, n);
        EXPECT_EQ(b.first, next);
        EXPECT_LE(b.end - b.first, rows / n + 1);
        EXPECT_GE(b.end - b.first, rows / n);
        next = b.end;
      }
      EXPECT_EQ(next, rows);
    }
}

TEST(RankedWavefront, SerpentineCrossesEveryRankBoundaryBackAndForth) {
  for (PixelFormat fmt : {kGray8, kGray16})
    for (int conn : {4, 8}) {
      const Case c = serpentine_case(fmt, conn);
      // The corridor fills end to end: the reference is the mask itself.
      ASSERT_EQ(test::diff_images(whole_reference(c).view(), c.mask.view()), "");
      for (int64_t tile : {16, 32, 64}) {
        const Outcome single = run_once(c, tile, kAmple, nullptr);
        ASSERT_EQ(test::diff_images(single.result.view(), c.mask.view()), "") << "one process, tile " << tile;
        for (int n : {2, 3, 5})
          expect_ranks_equal(c, n, tile, kAmple, single.result,
                             "serpentine " + fmt.str() + " conn " + std::to_string(conn));
      }
    }
  // The front goes back and forth: many edges cross between ranks.
  const std::vector<Outcome> out = run_ranked(3, serpentine_case(kGray8, 8), 32, kAmple);
  EXPECT_GT(out[0].stats.messages, 4 * 33);
  EXPECT_GT(out[0].stats.message_bytes, 0);
}

TEST(RankedWavefront, RandomMasksOfSeveralDensities) {
  const int ranks[] = {2, 3, 5};
  const int64_t tiles[] = {16, 32, 64};
  int k = 0;
  for (PixelFormat fmt : {kGray8, kGray16})
    for (double density : {0.3, 0.6, 0.9})
      for (int conn : {4, 8})
        for (ReconstructMethod m : {ReconstructMethod::kDilation, ReconstructMethod::kErosion}) {
          const Case c = random_case(fmt, density, conn, m, static_cast<uint64_t>(++k));
          const int64_t tile = tiles[k % 3];
          const Outcome single = run_once(c, tile, kAmple, nullptr);
          const std::string what = "random " + fmt.str() + " density " + std::to_string(density) + " conn " +
                                   std::to_string(conn) + (m == ReconstructMethod::kErosion ? " erosion" : " dilation");
          ASSERT_EQ(test::diff_images(single.result.view(), whole_reference(c).view()), "") << what;
          expect_ranks_equal(c, ranks[k % 3], tile, kAmple, single.result, what);
          expect_ranks_equal(c, ranks[(k + 1) % 3], tiles[(k + 1) % 3], kAmple,
                             run_once(c, tiles[(k + 1) % 3], kAmple, nullptr).result, what);
        }
}

TEST(RankedWavefront, RanksWithoutTileRows) {
  // 517 rows of 64: 9 tile rows over 8 ranks (one owns two); 100 rows: 2
  // tile rows over 5 ranks (three own none).
  const Case tall = serpentine_case(kGray8, 8);
  expect_ranks_equal(tall, 8, 64, kAmple, tall.mask, "8 ranks, 9 tile rows");
  Case low = random_case(kGray8, 0.7, 8, ReconstructMethod::kDilation, 99);
  low.mask = top_rows(low.mask, 100), low.marker = top_rows(low.marker, 100);
  expect_ranks_equal(low, 5, 64, kAmple, whole_reference(low), "5 ranks, 2 tile rows");
}

TEST(RankedWavefront, OneRankIsTheOneProcessEngine) {
  const Case c = serpentine_case(kGray8, 8);
  std::vector<Outcome> out(1);
  run_local_ranks(1, [&](Ranks& r) { out[0] = run_once(c, 32, kAmple, &r); });
  EXPECT_EQ(test::diff_images(out[0].result.view(), c.mask.view()), "");
  EXPECT_EQ(out[0].stats.messages, 0);
}

TEST(RankedWavefront, TilesInWorkLimitedPerRank) {
  // max_concurrency (the CUDA path keeps two tiles in work): the rank's
  // tiles run in an arena of that many threads, its messages still flow.
  const Case c = random_case(kGray8, 0.6, 8, ReconstructMethod::kDilation, 5);
  const Image single = run_once(c, 16, kAmple, nullptr).result;
  for (int limit : {1, 2}) {
    std::vector<Image> out(3);
    run_local_ranks(
        3, [&](Ranks& r) { out[static_cast<size_t>(r.rank())] = run_once(c, 16, kAmple, &r, nullptr, limit).result; });
    for (int r = 0; r < 3; ++r)
      EXPECT_EQ(test::diff_images(out[static_cast<size_t>(r)].view(), single.view()), "")
          << "max_concurrency " << limit << ", rank " << r;
  }
}

TEST(RankedWavefront, OutOfCoreStores) {
  // Each store holds an eighth of the image: tiles spill and come back,
  // during the propagation and while the result is gathered.
  for (PixelFormat fmt : {kGray8, kGray16}) {
    const Case c = serpentine_case(fmt, 4);
    const size_t budget = static_cast<size_t>(kW * kH) * fmt.bytes_per_pixel() / 8;
    for (int64_t tile : {16, 32}) expect_ranks_equal(c, 3, tile, budget, c.mask, "out of core " + fmt.str());
    const Case r = random_case(fmt, 0.6, 8, ReconstructMethod::kErosion, 7);
    expect_ranks_equal(r, 2, 32, budget, whole_reference(r), "out of core, random " + fmt.str());
  }
}

// A rule that fails in the last tile row (owned by the last rank) once the
// front has reached it there, while the other ranks wait for its edges.
class FailingRule : public TilePropagator {
 public:
  FailingRule(std::unique_ptr<TilePropagator> inner, int64_t height) : inner_(std::move(inner)), height_(height) {}
  bool propagate(const ImageView& j, const ImageView& i, const Rect& core) const override {
    const bool changed = inner_->propagate(j, i, core);
    if (changed && core.y1() == height_ && ++changes_ == 2) throw InputError("boom in the last band");
    return changed;
  }
  void neutral(uint8_t* p) const override { inner_->neutral(p); }
  bool can_propagate(const uint8_t* f, const uint8_t* j, const uint8_t* i) const override {
    return inner_->can_propagate(f, j, i);
  }

 private:
  std::unique_ptr<TilePropagator> inner_;
  int64_t height_;
  mutable std::atomic<int> changes_{0};
};

TEST(RankedWavefront, AFailingRankEndsAllRanksWithItsError) {
  const Case c = serpentine_case(kGray8, 8);
  for (int n : {2, 3}) {
    const FailingRule rule(make_reconstruct_rule(kGray8, c.params), kH);
    try {
      run_ranked(n, c, 32, kAmple, &rule);
      ADD_FAILURE() << "no error with " << n << " ranks";
    } catch (const std::exception& e) {
      EXPECT_NE(std::string(e.what()).find("boom in the last band"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("rank " + std::to_string(n - 1)), std::string::npos) << e.what();
    }
  }
}

// Ranks whose messages arrive late (a random delay, order kept per sender,
// as MPI keeps it): ranks report idle while edges are still on their way,
// which the termination waves must see through.
class DelayedRanks : public Ranks {
 public:
  DelayedRanks(Ranks& inner, uint64_t seed) : inner_(inner), rng_(seed), courier_([this] { deliver(); }) {}
  ~DelayedRanks() override {
    {
      std::lock_guard<std::mutex> l(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    courier_.join();
  }
  int rank() const override { return inner_.rank(); }
  int size() const override { return inner_.size(); }
  void send(int to, int tag, const void* data, size_t n) override {
    std::lock_guard<std::mutex> l(mu_);
    const auto delay = std::chrono::microseconds(std::uniform_int_distribution<int>(0, 400)(rng_));
    last_due_ = std::max(last_due_, std::chrono::steady_clock::now() + delay);
    const auto* b = static_cast<const uint8_t*>(data);
    queue_.push_back({last_due_, to, tag, std::vector<uint8_t>(b, b + n)});
    cv_.notify_all();
  }
  RankMessage recv(int from, int tag) override { return inner_.recv(from, tag); }
  std::optional<RankMessage> try_recv(int from, int tag) override { return inner_.try_recv(from, tag); }
  void barrier() override { inner_.barrier(); }
  int64_t allreduce_sum(int64_t v) override { return inner_.allreduce_sum(v); }
  int64_t allreduce_max(int64_t v) override { return inner_.allreduce_max(v); }
  [[noreturn]] void abort(const std::string& why) override {
    inner_.abort(why);
    std::terminate();  // not reached: GCC does not see [[noreturn]] through the virtual call
  }

 private:
  struct Letter {
    std::chrono::steady_clock::time_point due;
    int to, tag;
    std::vector<uint8_t> bytes;
  };
  void deliver() {
    std::unique_lock<std::mutex> l(mu_);
    for (;;) {
      cv_.wait(l, [&] { return stop_ || !queue_.empty(); });
      if (stop_) return;
      if (std::chrono::steady_clock::now() < queue_.front().due) {
        cv_.wait_until(l, queue_.front().due);
        continue;
      }
      Letter m = std::move(queue_.front());
      queue_.pop_front();
      l.unlock();
      inner_.send(m.to, m.tag, m.bytes);
      l.lock();
    }
  }
  Ranks& inner_;
  std::mt19937_64 rng_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Letter> queue_;
  std::chrono::steady_clock::time_point last_due_{};
  bool stop_ = false;
  std::thread courier_;
};

TEST(RankedWavefront, LateMessagesDoNotEndTheRunEarly) {
  int k = 0;
  for (int conn : {4, 8})
    for (int n : {2, 3, 5}) {
      const Case c = k % 2
                         ? serpentine_case(kGray8, conn)
                         : random_case(kGray16, 0.6, conn, ReconstructMethod::kDilation, 40 + static_cast<uint64_t>(k));
      const int64_t tile = k % 2 ? 32 : 16;
      const Image single = run_once(c, tile, kAmple, nullptr).result;
      std::vector<Image> out(static_cast<size_t>(n));
      run_local_ranks(n, [&](Ranks& r) {
        DelayedRanks late(r, static_cast<uint64_t>(100 * k + r.rank()));
        out[static_cast<size_t>(r.rank())] = run_once(c, tile, kAmple, &late).result;
      });
      for (int r = 0; r < n; ++r)
        EXPECT_EQ(test::diff_images(out[static_cast<size_t>(r)].view(), single.view()), "")
            << "case " << k << ", " << n << " ranks, rank " << r;
      ++k;
    }
}

// ---- Through the reconstruct job, with ranks from the ExecContext.

ReconstructResult run_job(const Image& marker, const Image& mask, ReconstructJob job) {
  return reconstruct(MemorySource(copy_of(marker)), MemorySource(copy_of(mask)), job);
}

Image read_whole(const ReconstructResult& r) {
  return r.image->read(0, Rect(0, 0, r.image->level(0).width, r.image->level(0).height));
}

TEST(RankedWavefront, ReconstructJobByErosionOverRanks) {
  test::TempDir tmp;
  const Case c = random_case(kGray8, 0.6, 8, ReconstructMethod::kErosion, 21);
  ExecContext ctx;
  ctx.tile = 32;
  ctx.memory = size_t{64} << 20;
  ctx.scratch_near = tmp.file("x");
  const Image single = read_whole(run_job(c.marker, c.mask, reconstruct_job(ctx, c.params)));
  ASSERT_EQ(test::diff_images(single.view(), whole_reference(c).view()), "");
  for (int n : {2, 3}) {
    std::vector<Image> out(static_cast<size_t>(n));
    run_local_ranks(n, [&](Ranks& r) {
      ExecContext mine = ctx;
      mine.ranks = &r;
      const ReconstructJob job = reconstruct_job(mine, c.params);
      EXPECT_EQ(job.ranks, &r);
      out[static_cast<size_t>(r.rank())] = read_whole(run_job(c.marker, c.mask, job));
    });
    for (int r = 0; r < n; ++r)
      EXPECT_EQ(test::diff_images(out[static_cast<size_t>(r)].view(), single.view()), "") << n << " ranks, rank " << r;
  }
}

TEST(RankedWavefront, FillHolesJobOverRanks) {
  // Tall rings (holes) spanning several bands, one ring open to the border.
  test::TempDir tmp;
  Image img(kGray8, Rect(0, 0, kW, kH)), filled(kGray8, img.rect());
  img.fill_zero(), filled.fill_zero();
  auto ring = [&](int64_t x0, int64_t y0, int64_t x1, int64_t y1, bool open) {
    for (int64_t y = y0; y <= y1; ++y)
      for (int64_t x = x0; x <= x1; ++x) {
        const bool edge = y == y0 || y == y1 || x == x0 || x == x1;
        if (edge && !(open && x == x0 && y > y0 + 2 && y < y0 + 6)) img.ptr<uint8_t>(x, y)[0] = 255;
        if (edge || !open) filled.ptr<uint8_t>(x, y)[0] = 255;
        if (edge && open && x == x0 && y > y0 + 2 && y < y0 + 6) filled.ptr<uint8_t>(x, y)[0] = 0;
      }
  };
  ring(5, 10, 60, 500, false);
  ring(70, 3, 120, 300, false);
  ring(130, 40, 190, 480, true);
  ExecContext ctx;
  ctx.tile = 16;
  ctx.memory = size_t{64} << 20;
  ctx.scratch_near = tmp.file("x");
  // As the fill-holes op builds it: the image on the border, the maximum inside.
  auto fill_job = [&](const ExecContext& x) {
    ReconstructParams p;
    p.method = ReconstructMethod::kErosion;
    p.connectivity = 4;
    ReconstructJob job = reconstruct_job(x, p);
    job.marker_from_mask = [](const ImageView& mask, const ImageView& marker) {
      for (int64_t y = mask.rect.y; y < mask.rect.y1(); ++y)
        for (int64_t x = mask.rect.x; x < mask.rect.x1(); ++x)
          marker.ptr<uint8_t>(x, y)[0] =
              (y == 0 || y == kH - 1 || x == 0 || x == kW - 1) ? mask.ptr<uint8_t>(x, y)[0] : uint8_t{255};
    };
    return job;
  };
  const Image single = read_whole(reconstruct(MemorySource(copy_of(img)), fill_job(ctx)));
  ASSERT_EQ(test::diff_images(single.view(), filled.view()), "");
  for (int n : {2, 5}) {
    std::vector<Image> out(static_cast<size_t>(n));
    run_local_ranks(n, [&](Ranks& r) {
      ExecContext mine = ctx;
      mine.ranks = &r;
      out[static_cast<size_t>(r.rank())] = read_whole(reconstruct(MemorySource(copy_of(img)), fill_job(mine)));
    });
    for (int r = 0; r < n; ++r)
      EXPECT_EQ(test::diff_images(out[static_cast<size_t>(r)].view(), filled.view()), "") << n << " ranks, rank " << r;
  }
}

}  // namespace
}  // namespace tw
