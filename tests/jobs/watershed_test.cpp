// The marker watershed (jobs/watershed/): exact against a plain whole-image
// Dijkstra of the definition (docs/ops/watershed.md) on random images full
// of plateaus and ties; the same labels for every tile size and budget;
// agreement with skimage.segmentation.watershed on nuclei-like inputs; the
// mask and the connectivity; bad input through the command line.
#include "kernels/watershed/watershed.hpp"

#include <gtest/gtest.h>
#include <tiffio.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <limits>
#include <queue>
#include <random>
#include <thread>
#include <tuple>

#include "jobs/watershed/watershed_job.hpp"
#include "tests/kernels/registered_op.hpp"
#include "tests/support/nested_reads.hpp"
#include "tests/support/test_support.hpp"

namespace tw {
namespace {

constexpr PixelFormat kU32x1{SampleType::kU32, 1};
constexpr PixelFormat kF32x1{SampleType::kF32, 1};

double sample(const Image& img, int64_t x, int64_t y) {
  switch (img.fmt().type) {
    case SampleType::kU8:
      return *img.ptr<uint8_t>(x, y);
    case SampleType::kU16:
      return *img.ptr<uint16_t>(x, y);
    case SampleType::kU32:
      return *img.ptr<uint32_t>(x, y);
    case SampleType::kI32:
      return *img.ptr<int32_t>(x, y);
    case SampleType::kF32:
      break;
  }
  return *img.ptr<float>(x, y);
}

// The definition, written as plainly as possible: a Dijkstra over the whole
// image; pixels pop in (highest altitude on the path, steps since it last
// climbed, label) order, altitudes compared as doubles; a pixel is final at
// its first pop; an offer replaces a pixel's only when strictly cheaper in
// (m, d), so of equal offers the first popped neighbour's label stands.
Image reference(const Image& f, const Image& markers, const Image* mask, int conn) {
  const int64_t W = f.rect().w, H = f.rect().h;
  using Key = std::tuple<double, int64_t, uint32_t, int64_t>;  // m, d, label, index
  std::priority_queue<Key, std::vector<Key>, std::greater<Key>> q;
  Image out(kU32x1, f.rect());
  out.fill_zero();
  std::vector<char> done(static_cast<size_t>(W * H), 0);
  std::vector<std::pair<double, int64_t>> best(static_cast<size_t>(W * H),
                                               {std::numeric_limits<double>::quiet_NaN(), 0});
  auto inside = [&](int64_t x, int64_t y) { return !mask || sample(*mask, x, y) != 0; };
  for (int64_t y = 0; y < H; ++y)
    for (int64_t x = 0; x < W; ++x) {
      const uint32_t l = *markers.ptr<uint32_t>(x, y);
      if (l && inside(x, y)) q.emplace(sample(f, x, y), 0, l, y * W + x);
    }
  while (!q.empty()) {
    const auto [m, d, l, i] = q.top();
    q.pop();
    if (done[static_cast<size_t>(i)]) continue;
    done[static_cast<size_t>(i)] = 1;
    const int64_t x = i % W, y = i / W;
    *out.ptr<uint32_t>(x, y) = l;
    for (int dy = -1; dy <= 1; ++dy)
      for (int dx = -1; dx <= 1; ++dx) {
        if ((dx == 0 && dy == 0) || (conn == 4 && dx != 0 && dy != 0)) continue;
        const int64_t nx = x + dx, ny = y + dy, n = ny * W + nx;
        if (nx < 0 || ny < 0 || nx >= W || ny >= H || !inside(nx, ny)) continue;
        if (done[static_cast<size_t>(n)] || *markers.ptr<uint32_t>(nx, ny)) continue;  // seeds keep theirs
        const double v = sample(f, nx, ny);
        const std::pair<double, int64_t> offer = v > m ? std::pair<double, int64_t>{v, 0} : std::pair{m, d + 1};
        auto& b = best[static_cast<size_t>(n)];
        if (!std::isnan(b.first) && !(offer < b)) continue;
        b = offer;
        q.emplace(offer.first, offer.second, l, n);
      }
  }
  return out;
}

Image run_job(const Image& f, const Image& markers, const Image* mask, int conn, int64_t tile,
              size_t memory = size_t{1} << 30, WatershedResult* keep = nullptr) {
  const auto fs = test::named_source(f, "image"), ms = test::named_source(markers, "markers");
  std::shared_ptr<const TileSource> ks;
  if (mask) ks = test::named_source(*mask, "mask");
  WatershedJob job;
  job.connectivity = conn;
  job.tile = tile;
  job.memory = memory;
  WatershedResult r = watershed(*fs, *ms, ks.get(), job);
  Image out = r.labels->read(0, f.rect());
  if (keep) *keep = std::move(r);
  return out;
}

// Fraction of the pixels (inside the mask, if any) where a and b agree.
double agreement(const Image& a, const Image& b, const Image* mask) {
  int64_t n = 0, same = 0;
  for (int64_t y = 0; y < a.rect().h; ++y)
    for (int64_t x = 0; x < a.rect().w; ++x) {
      if (mask && sample(*mask, x, y) == 0) continue;
      ++n;
      same += *a.ptr<uint32_t>(x, y) == *b.ptr<uint32_t>(x, y);
    }
  return n ? double(same) / double(n) : 1.0;
}

// Random altitudes from a few values (plateaus everywhere), markers with
// repeated labels (ties), a mask of random blobs.
struct RandomCase {
  Image f, markers, mask;
};
RandomCase random_case(SampleType t, int64_t W, int64_t H, uint64_t seed) {
  std::mt19937_64 rng(seed);
  RandomCase c;
  c.f = Image(PixelFormat{t, 1}, Rect(0, 0, W, H));
  c.markers = Image(kU32x1, Rect(0, 0, W, H));
  c.mask = Image(kGray8, Rect(0, 0, W, H));
  const int levels = 1 + static_cast<int>(rng() % 6);
  const float fvals[] = {
      -0.0f,  0.0f, 1.5f, -2.25f, std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
      1e-30f, 3e38f};
  for (int64_t y = 0; y < H; ++y)
    for (int64_t x = 0; x < W; ++x) {
      const int v = static_cast<int>(rng() % levels);
      if (t == SampleType::kU8) *c.f.ptr<uint8_t>(x, y) = static_cast<uint8_t>(v * 50);
      if (t == SampleType::kU16) *c.f.ptr<uint16_t>(x, y) = static_cast<uint16_t>(v * 13000 + (rng() % 2));
      if (t == SampleType::kF32) *c.f.ptr<float>(x, y) = fvals[(v + rng() % 3) % 8];
      const bool seed_here = rng() % 97 == 0;
      *c.markers.ptr<uint32_t>(x, y) =
          seed_here ? (rng() % 5 == 0 ? 0xFFFFFFF0u + static_cast<uint32_t>(rng() % 15) : 1 + rng() % 4) : 0;
      *c.mask.ptr<uint8_t>(x, y) = 255;
    }
  // Holes in the mask: a few random discs, so some basins are cut off.
  for (int k = 0; k < 4; ++k) {
    const int64_t cx = rng() % W, cy = rng() % H, r = 2 + rng() % 9;
    for (int64_t y = std::max<int64_t>(0, cy - r); y < std::min(H, cy + r + 1); ++y)
      for (int64_t x = std::max<int64_t>(0, cx - r); x < std::min(W, cx + r + 1); ++x)
        if ((x - cx) * (x - cx) + (y - cy) * (y - cy) <= r * r) *c.mask.ptr<uint8_t>(x, y) = 0;
  }
  return c;
}

TEST(Watershed, ExactAgainstWholeImageDijkstra) {
  int cases = 0;
  for (uint64_t seed = 1; seed <= 12; ++seed)
    for (SampleType t : {SampleType::kU8, SampleType::kU16, SampleType::kF32}) {
      const int64_t W = 37 + static_cast<int64_t>(seed * 7 % 50), H = 29 + static_cast<int64_t>(seed * 13 % 40);
      const RandomCase c = random_case(t, W, H, seed * 31 + static_cast<uint64_t>(t));
      for (int conn : {4, 8})
        for (bool masked : {false, true}) {
          const Image* m = masked ? &c.mask : nullptr;
          const Image want = reference(c.f, c.markers, m, conn);
          for (int64_t tile : {16, 32}) {
            EXPECT_EQ(test::diff_images(run_job(c.f, c.markers, m, conn, tile).view(), want.view()), "")
                << "seed " << seed << " type " << sample_name(t) << " conn " << conn << " mask " << masked << " tile "
                << tile;
            ++cases;
          }
        }
    }
  std::printf("[ info     ] %d random cases equal to the whole-image Dijkstra\n", cases);
}

// A sparse mask (small discs, as nuclei are): most tiles have several parts
// of the mask or none; tiles with none are never stored or flooded, and the
// labels are still exactly the definition's, with budgets that spill both
// stores too.
TEST(Watershed, SparseMaskEmptyTilesAndSpills) {
  int cases = 0;
  for (uint64_t seed = 1; seed <= 6; ++seed)
    for (SampleType t : {SampleType::kU8, SampleType::kU16, SampleType::kF32}) {
      const int64_t W = 150 + static_cast<int64_t>(seed * 17 % 60), H = 110 + static_cast<int64_t>(seed * 29 % 50);
      RandomCase c = random_case(t, W, H, seed * 7 + static_cast<uint64_t>(t));
      std::mt19937_64 rng(seed);
      c.mask.fill_zero();
      // Discs in the left two thirds only: the right third's tiles are empty.
      for (int k = 0; k < 14; ++k) {
        const int64_t cx = rng() % (W * 2 / 3), cy = rng() % H, r = 3 + rng() % 10;
        for (int64_t y = std::max<int64_t>(0, cy - r); y < std::min(H, cy + r + 1); ++y)
          for (int64_t x = std::max<int64_t>(0, cx - r); x < std::min(W, cx + r + 1); ++x)
            if ((x - cx) * (x - cx) + (y - cy) * (y - cy) <= r * r) *c.mask.ptr<uint8_t>(x, y) = 255;
      }
      for (int conn : {4, 8}) {
        const Image want = reference(c.f, c.markers, &c.mask, conn);
        for (auto [tile, memory] :
             {std::pair<int64_t, size_t>{16, size_t{1} << 30}, {32, size_t{1} << 30}, {16, 8 << 10}}) {
          WatershedResult r;
          EXPECT_EQ(test::diff_images(run_job(c.f, c.markers, &c.mask, conn, tile, memory, &r).view(), want.view()), "")
              << "seed " << seed << " " << sample_name(t) << " conn " << conn << " tile " << tile << " memory "
              << memory;
          EXPECT_LT(r.tiles.live_tiles, r.tiles.tiles);
          if (memory < 1 << 20) {
            EXPECT_GT(r.store.spills, 0u);
          }
          ++cases;
        }
      }
    }
  std::printf("[ info     ] %d sparse-mask cases equal to the whole-image Dijkstra\n", cases);
}

// The live tiles' edge state (their edges' inputs and costs, the halo last
// flooded against) is a blob of each tile in the store, spilled with the
// pixels: a budget smaller than the edge state alone still gives the exact
// labels and holds no more than the budget plus the threads' pinned blobs.
// Before, it stayed in memory beside the store (0.45 B a pixel: a whole
// dense slide at the default 1G went over the budget by most of it).
TEST(Watershed, EdgeStateSpillsWithTheTiles) {
  const int64_t W = 400, H = 320;  // whole tiles of 16
  const RandomCase c = random_case(SampleType::kU8, W, H, 77);
  Image full(kGray8, Rect(0, 0, W, H));
  for (int64_t y = 0; y < H; ++y) std::memset(full.ptr<uint8_t>(0, y), 255, static_cast<size_t>(W));
  const Image want = reference(c.f, c.markers, &full, 8);
  const int64_t tile = 16;
  // Per live tile: 64 edge pixels (cost, and the input packed in 5 bytes)
  // and a ring of 68.
  const size_t per_tile = 64 * (sizeof(WsCost) + 5) + 68 * sizeof(WsCost);
  const size_t edges = per_tile * static_cast<size_t>((W / tile) * (H / tile));
  const size_t memory = edges / 2;
  WatershedResult r;
  EXPECT_EQ(test::diff_images(run_job(c.f, c.markers, &full, 8, tile, memory, &r).view(), want.view()), "");
  EXPECT_EQ(r.tiles.edge_state_bytes, edges);
  EXPECT_GT(r.store.spills, 0u);
  // A thread pins its tile's pixels (1740 bytes here), its edge state and
  // one neighbour's at a time.
  const size_t pinned = static_cast<size_t>(std::max(1u, std::thread::hardware_concurrency())) * (1740 + 2 * per_tile);
  EXPECT_LE(r.store.peak_bytes, memory / 8 * 7 + pinned);
  // Dropped after the wavefront: what is left is the labels' blobs.
  EXPECT_EQ(r.store.bytes, static_cast<size_t>((W / tile) * (H / tile)) * 1740);
}

// Inputs whose reads run parallel loops (tests/support/nested_reads.hpp):
// each tile's load used this thread's buffers across its reads, and a load
// taken up meanwhile reallocated or overwrote them (a heap corruption on 16
// cores, 2026-11-29; wrong labels here before the fix).
TEST(Watershed, InputsWhoseReadsRunParallelLoops) {
  const RandomCase c = random_case(SampleType::kU8, 120, 70, 5);
  const Image want = reference(c.f, c.markers, &c.mask, 8);
  const auto fs = test::nested_loop_reads(test::named_source(c.f, "image"));
  const auto ms = test::nested_loop_reads(test::named_source(c.markers, "markers"));
  const auto ks = test::nested_loop_reads(test::named_source(c.mask, "mask"));
  for (int round = 0; round < 4; ++round) {
    WatershedJob job;
    job.connectivity = 8;
    job.tile = 16;
    Image got;
    test::on_sixteen_threads([&] { got = watershed(*fs, *ms, ks.get(), job).labels->read(0, c.f.rect()); });
    ASSERT_EQ(test::diff_images(got.view(), want.view()), "") << "round " << round;
  }
}

// Nothing to flood: an empty mask stores nothing at all; a full mask without
// a seed stores the inputs but no label tile. Both read as all 0.
TEST(Watershed, EmptyMaskAndNoSeeds) {
  const int64_t W = 100, H = 70;
  const RandomCase c = random_case(SampleType::kU8, W, H, 5);
  Image empty(kGray8, Rect(0, 0, W, H)), none(kU32x1, Rect(0, 0, W, H)), zero(kU32x1, Rect(0, 0, W, H));
  empty.fill_zero(), none.fill_zero(), zero.fill_zero();
  WatershedResult r;
  EXPECT_EQ(test::diff_images(run_job(c.f, c.markers, &empty, 8, 16, size_t{1} << 30, &r).view(), zero.view()), "");
  EXPECT_EQ(r.tiles.live_tiles, 0);
  EXPECT_EQ(r.store.bytes, 0u);
  EXPECT_EQ(r.wavefront.tile_visits, 0);
  EXPECT_EQ(test::diff_images(run_job(c.f, none, nullptr, 4, 16, size_t{1} << 30, &r).view(), zero.view()), "");
  EXPECT_EQ(r.tiles.live_tiles, r.tiles.tiles);
  EXPECT_EQ(r.wavefront.tile_visits, 0);  // no halo ever changes
}

// One seed in a corner floods a plateau across every tile: each tile is
// flooded when it is loaded and then only again where its halo decides
// something, and the labels are the definition's.
TEST(Watershed, FloodsPerPixel) {
  Image f(kGray8, Rect(0, 0, 300, 200)), mk(kU32x1, Rect(0, 0, 300, 200));
  std::mt19937_64 rng(3);
  for (int64_t y = 0; y < 200; ++y)
    for (int64_t x = 0; x < 300; ++x) *f.ptr<uint8_t>(x, y) = static_cast<uint8_t>(rng() % 3);
  mk.fill_zero();
  *mk.ptr<uint32_t>(1, 1) = 4;
  *mk.ptr<uint32_t>(250, 150) = 2;
  for (int conn : {4, 8}) {
    WatershedResult r;
    EXPECT_EQ(test::diff_images(run_job(f, mk, nullptr, conn, 32, size_t{1} << 30, &r).view(),
                                reference(f, mk, nullptr, conn).view()),
              "");
    const double per_px = double(r.tiles.loaded_pixels + r.tiles.flooded_pixels) / (300.0 * 200.0);
    std::printf("[ info     ] conn %d: %lld floods, %.2f floods per pixel\n", conn, (long long)r.tiles.floods, per_px);
    EXPECT_GT(r.tiles.floods, 0);
  }
}

// The engine's CUDA path (whole-tile floods by a TilePropagator, each tile's
// core starting unreached, the seeds' first flood on the first visit) with
// the CPU's whole-tile rule in the GPU's place: the rule the CUDA kernel
// reproduces exactly (watershed_cuda_test), so this checks what the GPU run
// does around it, here.
TEST(Watershed, DevicePathWithTheCpuRule) {
  int cases = 0;
  for (uint64_t seed = 1; seed <= 4; ++seed)
    for (SampleType t : {SampleType::kU8, SampleType::kF32}) {
      const int64_t W = 90 + static_cast<int64_t>(seed * 23 % 40), H = 70 + static_cast<int64_t>(seed * 11 % 30);
      const RandomCase c = random_case(t, W, H, seed * 3 + 1);
      const auto fs = test::named_source(c.f, "image"), ms = test::named_source(c.markers, "markers"),
                 ks = test::named_source(c.mask, "mask");
      for (int conn : {4, 8}) {
        const auto rule = make_watershed_rule(conn);
        WsTilesOptions o;
        o.connectivity = conn;
        o.tile = 16 << (seed % 2);
        o.memory = seed == 3 ? 16 << 10 : size_t{1} << 30;
        o.gpu = rule.get();
        const WsTilesResult r = watershed_tiles(*fs, *ms, ks.get(), o);
        EXPECT_EQ(
            test::diff_images(r.labels->read(0, c.f.rect()).view(), reference(c.f, c.markers, &c.mask, conn).view()),
            "")
            << "seed " << seed << " " << sample_name(t) << " conn " << conn;
        ++cases;
      }
    }
  std::printf("[ info     ] %d cases of the device path equal to the whole-image Dijkstra\n", cases);
}

TEST(Watershed, WorstCases) {
  // Flat image, one seed: every pixel takes it; no seed: all 0.
  Image flat(kGray8, Rect(0, 0, 70, 45)), m(kU32x1, Rect(0, 0, 70, 45));
  flat.fill_zero(), m.fill_zero();
  Image none = run_job(flat, m, nullptr, 8, 16);
  for (int64_t y = 0; y < 45; ++y)
    for (int64_t x = 0; x < 70; ++x) ASSERT_EQ(*none.ptr<uint32_t>(x, y), 0u);
  *m.ptr<uint32_t>(69, 44) = 7;
  Image all = run_job(flat, m, nullptr, 4, 16);
  for (int64_t y = 0; y < 45; ++y)
    for (int64_t x = 0; x < 70; ++x) ASSERT_EQ(*all.ptr<uint32_t>(x, y), 7u);
  // Two seeds on a plateau: each pixel goes to the nearer one (d), ties to
  // the smaller label; 1xN and Nx1 strips across tiles.
  for (auto [W, H] : {std::pair<int64_t, int64_t>{1, 100}, {100, 1}, {70, 45}}) {
    Image f(kGray8, Rect(0, 0, W, H)), mk(kU32x1, Rect(0, 0, W, H));
    f.fill_zero(), mk.fill_zero();
    *mk.ptr<uint32_t>(0, 0) = 9;
    *mk.ptr<uint32_t>(W - 1, H - 1) = 3;
    for (int conn : {4, 8})
      EXPECT_EQ(test::diff_images(run_job(f, mk, nullptr, conn, 16).view(), reference(f, mk, nullptr, conn).view()), "")
          << W << "x" << H;
  }
}

// A seed keeps its label even where a cheaper path from a lower seed with a
// smaller label reaches it (the definition; skimage does the same).
TEST(Watershed, SeedsKeepTheirLabels) {
  Image f(kGray8, Rect(0, 0, 20, 20)), mk(kU32x1, Rect(0, 0, 20, 20));
  f.fill_zero(), mk.fill_zero();
  for (int64_t x = 10; x < 20; ++x)
    for (int64_t y = 0; y < 20; ++y) *f.ptr<uint8_t>(x, y) = 100;
  *mk.ptr<uint32_t>(2, 2) = 1;
  *mk.ptr<uint32_t>(10, 5) = 2;  // on the step, next to basin 1's flood
  const Image out = run_job(f, mk, nullptr, 8, 16);
  EXPECT_EQ(*out.ptr<uint32_t>(10, 5), 2u);
  EXPECT_EQ(*out.ptr<uint32_t>(5, 5), 1u);
}

TEST(Watershed, MaskAndConnectivity) {
  // Two diagonal pixels of the mask touch only with 8-connectivity: the
  // seed's flood crosses to the other side with 8, not with 4.
  Image f(kGray8, Rect(0, 0, 40, 40)), mk(kU32x1, Rect(0, 0, 40, 40)), mask(kGray8, Rect(0, 0, 40, 40));
  f.fill_zero(), mk.fill_zero(), mask.fill_zero();
  for (int64_t y = 0; y < 40; ++y)
    for (int64_t x = 0; x < 40; ++x) *mask.ptr<uint8_t>(x, y) = (x < 16 && y < 16) || (x >= 16 && y >= 16) ? 1 : 0;
  *mk.ptr<uint32_t>(3, 3) = 5;
  const Image four = run_job(f, mk, &mask, 4, 16), eight = run_job(f, mk, &mask, 8, 16);
  EXPECT_EQ(*four.ptr<uint32_t>(15, 15), 5u);
  EXPECT_EQ(*four.ptr<uint32_t>(16, 16), 0u);  // no 4-path inside the mask: unreached
  EXPECT_EQ(*eight.ptr<uint32_t>(39, 39), 5u);
  for (int64_t y = 0; y < 40; ++y)
    for (int64_t x = 0; x < 40; ++x)
      if (*mask.ptr<uint8_t>(x, y) == 0) {
        ASSERT_EQ(*four.ptr<uint32_t>(x, y), 0u) << x << "," << y;
        ASSERT_EQ(*eight.ptr<uint32_t>(x, y), 0u) << x << "," << y;
      }
  // A marker outside the mask is dropped.
  *mk.ptr<uint32_t>(30, 2) = 8;
  EXPECT_EQ(*run_job(f, mk, &mask, 8, 16).ptr<uint32_t>(30, 2), 0u);
}

class WatershedSkimage : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!test::python_has("skimage.segmentation")) GTEST_SKIP() << "scikit-image missing";
  }
  void oracle(const std::string& what, int64_t W, int64_t H, int seed, int conn) {
    const auto r = test::run_python(
        test::oracle("watershed_oracle.py"),
        {what, std::to_string(W), std::to_string(H), std::to_string(seed), std::to_string(conn), tmp.path()});
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  test::TempDir tmp;
};

// Touching discs: -EDT flooded from the h-maxima of the EDT inside the discs,
// through the registered op (as the CLI and pipelines run it), tiles of 64.
TEST_F(WatershedSkimage, TouchingDiscsAgree) {
  for (int conn : {4, 8}) {
    oracle("discs", 420, 300, 3 + conn, conn);
    const Image f = test::load_npy(tmp.file("image.npy")), mk = test::load_npy(tmp.file("markers.npy")),
                mask = test::load_npy(tmp.file("mask.npy")), want = test::load_npy(tmp.file("ws.npy"));
    const auto run = test::run_registered(
        "watershed",
        {test::named_source(f, "image"), test::named_source(mk, "markers"), test::named_source(mask, "mask")},
        {{"connectivity", std::to_string(conn)}, {"mask", "mask"}}, 64);
    const double a = agreement(run.image, want, &mask);
    std::printf("[ info     ] touching discs, connectivity %d: %.4f%% of mask pixels agree with skimage\n", conn,
                100 * a);
    EXPECT_GE(a, 0.99);
    // And exactly the definition.
    EXPECT_EQ(test::diff_images(run.image.view(), reference(f, mk, &mask, conn).view()), "");
    // Binary u8 markers are labelled first (8-connected, numbered as
    // skimage.measure.label numbers them, as the oracle did): the same labels.
    Image bin(kGray8, mk.rect());
    for (int64_t y = 0; y < mk.rect().h; ++y)
      for (int64_t x = 0; x < mk.rect().w; ++x) *bin.ptr<uint8_t>(x, y) = *mk.ptr<uint32_t>(x, y) ? 255 : 0;
    const auto from_bin = test::run_registered(
        "watershed",
        {test::named_source(f, "image"), test::named_source(bin, "markers"), test::named_source(mask, "mask")},
        {{"connectivity", std::to_string(conn)}, {"mask", "mask"}}, 64);
    EXPECT_EQ(test::diff_images(from_bin.image.view(), run.image.view()), "");
  }
}

TEST_F(WatershedSkimage, NoisyGradientAgrees) {
  for (int conn : {4, 8}) {
    oracle("gradient", 380, 260, 11 + conn, conn);
    const Image f = test::load_npy(tmp.file("image.npy")), mk = test::load_npy(tmp.file("markers.npy")),
                want = test::load_npy(tmp.file("ws.npy"));
    const Image got = run_job(f, mk, nullptr, conn, 64);
    const double a = agreement(got, want, nullptr);
    std::printf("[ info     ] noisy gradient, connectivity %d: %.4f%% of pixels agree with skimage\n", conn, 100 * a);
    EXPECT_GE(a, 0.99);
    EXPECT_EQ(test::diff_images(got.view(), reference(f, mk, nullptr, conn).view()), "");
  }
}

// Tile sizes 16, 64, 256 (and a budget that spills) give the same labels.
TEST_F(WatershedSkimage, TileInvariance) {
  oracle("discs", 333, 277, 5, 8);
  const Image f = test::load_npy(tmp.file("image.npy")), mk = test::load_npy(tmp.file("markers.npy")),
              mask = test::load_npy(tmp.file("mask.npy"));
  const Image want = reference(f, mk, &mask, 8);
  for (int64_t tile : {16, 64, 256})
    EXPECT_EQ(test::diff_images(run_job(f, mk, &mask, 8, tile).view(), want.view()), "") << "tile " << tile;
  WatershedResult r;
  const Image spilled = run_job(f, mk, &mask, 8, 16, 64 << 10, &r);
  EXPECT_EQ(test::diff_images(spilled.view(), want.view()), "");
  EXPECT_GT(r.store.spills, 0u);
}

test::TiffSpec lossless(int tile) {
  test::TiffSpec s;
  s.tile_w = s.tile_h = tile;
  s.compression = COMPRESSION_ADOBE_DEFLATE;
  return s;
}

// Through the command line, on an image whose working rasters are 8x the
// --memory budget and more: the same labels as with plenty of memory, and as
// the definition; memory within the budget; the mpp carried over; u32 out.
TEST_F(WatershedSkimage, CliOutOfCore) {
  const int64_t W = 1280, H = 1280;
  oracle("discs", W, H, 9, 0);
  const Image f = test::load_npy(tmp.file("image.npy")), mk = test::load_npy(tmp.file("markers.npy")),
              mask = test::load_npy(tmp.file("mask.npy"));
  test::TiffSpec fs = lossless(128);
  fs.xres = 10000.0f / 0.5f;  // 0.5 um/px
  test::write_tiff(tmp.file("f.tif"), f.view(), fs);
  test::write_tiff(tmp.file("m.tif"), mk.view(), lossless(128));
  test::write_tiff(tmp.file("k.tif"), mask.view(), lossless(128));
  // The fixed cost: the same command on a tiny image.
  test::write_tiff(tmp.file("f0.tif"), f.view().sub(Rect(0, 0, 64, 64)), lossless(64));
  test::write_tiff(tmp.file("m0.tif"), mk.view().sub(Rect(0, 0, 64, 64)), lossless(64));
  const auto base = test::run_cli({"watershed", tmp.file("f0.tif"), tmp.file("m0.tif"), tmp.file("s.tif")});
  ASSERT_EQ(base.exit_code, 0) << base.err;
  // Packed inputs (2 bytes a pixel) and u32 labels: 6 bytes a pixel of
  // working memory, 9.4 MiB for 4 MiB (the smallest budget), of which the
  // op's stores get well under half: both spill.
  const auto small =
      test::run_cli({"watershed", tmp.file("f.tif"), tmp.file("m.tif"), tmp.file("a.tif"), "--mask", tmp.file("k.tif"),
                     "--memory", "4M", "--tile", "64", "--report", tmp.file("a.json")});
  ASSERT_EQ(small.exit_code, 0) << small.err;
  std::printf("[ info     ] %lldx%lld watershed, --memory 4M: peak RSS %.1f MiB (%.1f MiB on 64x64), %.2f s\n",
              (long long)W, (long long)H, small.peak_rss_bytes / 1048576.0, base.peak_rss_bytes / 1048576.0,
              small.seconds);
  if (!test::kSanitizerBuild) {
    EXPECT_LE(small.peak_rss_bytes, base.peak_rss_bytes + (size_t{4 + 24} << 20));
  }
  EXPECT_GT(test::read_json(tmp.file("a.json"))["tiles_spilled"], 0) << "nothing spilled";
  const auto big = test::run_cli({"watershed", tmp.file("f.tif"), tmp.file("m.tif"), tmp.file("b.tif"), "--mask",
                                  tmp.file("k.tif"), "--memory", "1G", "--tile", "256"});
  ASSERT_EQ(big.exit_code, 0) << big.err;
  const Image a = test::read_tiff_libtiff(tmp.file("a.tif"), 0), b = test::read_tiff_libtiff(tmp.file("b.tif"), 0);
  EXPECT_EQ(a.fmt(), kU32x1);
  EXPECT_EQ(test::diff_images(a.view(), b.view()), "");
  EXPECT_EQ(test::diff_images(a.view(), reference(f, mk, &mask, 8).view()), "");
  const test::TiffDirTags tags = test::read_tiff_tags(tmp.file("a.tif"), 0);
  EXPECT_NEAR(tags.xres, fs.xres, 1e-3 * fs.xres);
}

// Nuclei markers from existing ops: h-maxima of the EDT are the h-dome of a
// u16 EDT (x10) thresholded at H - 1; the watershed floods -EDT (convert with
// an inverted range) from them within the mask. The markers equal
// skimage.morphology.h_maxima on the same u16 EDT; the labels agree with
// skimage's watershed of the same markers on 98.9-99.3% of the mask
// (seeds 1-8 and 21): perfect discs make the EDT full of exact ties, which
// skimage breaks by its global queue order and we by label.
TEST_F(WatershedSkimage, NucleiMarkersPipeline) {
  oracle("discs", 500, 400, 21, 0);
  const Image mask = test::load_npy(tmp.file("mask.npy"));
  test::write_tiff(tmp.file("bin.tif"), mask.view(), lossless(64));
  const auto r =
      test::run_cli({"run", tmp.file("bin.tif"), tmp.file("ws.tif"), "mask: filter convert --type u8", "dist: edt",
                     "d16: filter convert dist --type u16 --from 0 --to 6553.5", "dome: hdome d16 --h 10",
                     "m8: filter convert dome --type u8 --from 0 --to 255", "markers: filter threshold m8 --value 9",
                     "neg: filter convert dist --type f32 --from 0 --to -1", "watershed neg markers --mask mask",
                     "--keep", "markers=" + tmp.file("mk.tif")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string py =
      "import sys, numpy as np\n"
      "from scipy import ndimage as ndi\n"
      "from skimage.morphology import h_maxima\n"
      "from skimage.measure import label\n"
      "from skimage.segmentation import watershed\n"
      "m = np.load(sys.argv[1]) > 0\n"
      "dist = ndi.distance_transform_edt(m)\n"
      "d16 = np.clip(np.floor(dist * 10 + 0.5), 0, 65535).astype(np.uint16)\n"
      "hm = h_maxima(d16, 10)\n"
      "np.save(sys.argv[2], (hm > 0).astype(np.uint8) * 255)\n"
      "ws = watershed(-dist, label(hm, connectivity=2), mask=m, connectivity=2)\n"
      "np.save(sys.argv[3], ws.astype(np.uint32))\n";
  { std::ofstream(tmp.file("nuclei.py")) << py; }
  const auto o = test::run_python(tmp.file("nuclei.py"), {tmp.file("mask.npy"), tmp.file("hm.npy"), tmp.file("w.npy")});
  ASSERT_EQ(o.exit_code, 0) << o.err;
  EXPECT_EQ(test::diff_images(test::read_tiff_libtiff(tmp.file("mk.tif"), 0).view(),
                              test::load_npy(tmp.file("hm.npy")).view()),
            "");
  const double a = agreement(test::read_tiff_libtiff(tmp.file("ws.tif"), 0), test::load_npy(tmp.file("w.npy")), &mask);
  std::printf(
      "[ info     ] nuclei pipeline (edt, hdome markers, watershed): %.4f%% of mask pixels agree with skimage\n",
      100 * a);
  EXPECT_GE(a, 0.985);
}

TEST(WatershedBadInput, OneLineNothingLeft) {
  test::TempDir tmp;
  Image g(kGray8, Rect(0, 0, 50, 40)), m(kU32x1, Rect(0, 0, 50, 40)), small(kU32x1, Rect(0, 0, 20, 20));
  Image nan(kF32x1, Rect(0, 0, 50, 40));
  g.fill_zero(), m.fill_zero(), small.fill_zero(), nan.fill_zero();
  *nan.ptr<float>(33, 21) = std::numeric_limits<float>::quiet_NaN();
  test::write_tiff(tmp.file("g.tif"), g.view(), lossless(16));
  test::write_tiff(tmp.file("m.tif"), m.view(), lossless(16));
  test::write_tiff(tmp.file("small.tif"), small.view(), lossless(16));
  test::write_tiff(tmp.file("nan.tif"), nan.view(), lossless(16));
  test::write_tiff(tmp.file("rgb.tif"), test::pattern_image(kRgb8, 50, 40, 1).view(), lossless(16));
  struct Case {
    std::vector<std::string> args;
    std::string fragment;
    int code;
  } cases[] = {
      {{"watershed", tmp.file("rgb.tif"), tmp.file("m.tif"), "OUT"}, "u8, u16 or f32", 1},
      {{"watershed", tmp.file("g.tif"), tmp.file("small.tif"), "OUT"}, "20x20", 1},
      {{"watershed", tmp.file("g.tif"), tmp.file("m.tif"), "OUT", "--mask", tmp.file("small.tif")}, "20x20", 1},
      {{"watershed", tmp.file("g.tif"), tmp.file("rgb.tif"), "OUT"}, "u32 labels", 1},
      {{"watershed", tmp.file("g.tif"), tmp.file("m.tif"), "OUT", "--mask", tmp.file("rgb.tif")}, "one channel", 1},
      {{"watershed", tmp.file("nan.tif"), tmp.file("m.tif"), "OUT"}, "NaN at (33, 21)", 1},
      // Outside the mask too, in a tile with no mask pixel at all.
      {{"watershed", tmp.file("nan.tif"), tmp.file("m.tif"), "OUT", "--mask", tmp.file("m.tif")}, "NaN at (33, 21)", 1},
      {{"watershed", tmp.file("g.tif"), tmp.file("m.tif"), "OUT", "--connectivity", "6"}, "4 or 8", 2},
      {{"watershed", tmp.file("g.tif"), "OUT"}, "", 2},
  };
  for (const auto& c : cases) {
    std::vector<std::string> args = c.args;
    for (auto& s : args)
      if (s == "OUT") s = tmp.file("out.tif");
    const auto before = tmp.list().size();
    const auto r = test::run_cli(args);
    EXPECT_EQ(r.exit_code, c.code) << c.fragment << ": " << r.err;
    EXPECT_NE(r.err.find(c.fragment), std::string::npos) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_EQ(tmp.list().size(), before) << "left files behind: " << c.fragment;
  }
}

}  // namespace
}  // namespace tw
