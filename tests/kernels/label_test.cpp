// Connected-component labelling (`tilewave label`): the tile kernel and the
// out-of-core job against scipy.ndimage.label (and skimage.measure.label,
// which the oracle checks equal) on real thresholded content, nuclei-like
// masks, serpentines through hundreds of tiles, the checkerboard worst case,
// tile sizes and budgets, out of core through the CLI, and bad input.
#include "kernels/label/label.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>

#include "engine/memory_source.hpp"
#include "jobs/label/label_job.hpp"
#include "jobs/label/sparse_label.hpp"
#include "tests/support/test_support.hpp"

namespace tw {
namespace {

std::string diff_labels(const Image& got, const Image& want) {
  return test::diff_images(got.view(), want.view());
}

Image label_of(const Image& mask, int conn, int64_t tile, size_t memory = size_t{1} << 30, LabelStats* st = nullptr) {
  Image c(mask.fmt(), mask.rect());
  copy_overlap(mask.view(), c.view());
  ExecContext ctx;
  ctx.tile = tile;
  ctx.memory = memory;
  const auto out = label_components(std::make_shared<MemorySource>(std::move(c)), conn, ctx, st);
  EXPECT_EQ(out->info().fmt, (PixelFormat{SampleType::kU32, 1}));
  return out->read(0, mask.rect());
}

// scipy's labels of a mask, through the oracle.
Image scipy_label(const Image& mask, int conn) {
  test::TempDir tmp;
  test::save_npy(tmp.file("m.npy"), mask.view());
  const auto r = test::run_python(test::oracle("label_oracle.py"),
                                  {"label", tmp.file("m.npy"), std::to_string(conn), tmp.file("ref.npy")});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return test::load_npy(tmp.file("ref.npy"));
}

Image random_mask(int64_t w, int64_t h, double p, uint64_t seed) {
  Image m(kGray8, Rect(0, 0, w, h));
  std::mt19937_64 rng(seed);
  std::bernoulli_distribution b(p);
  for (int64_t y = 0; y < h; ++y)
    for (int64_t x = 0; x < w; ++x) *m.ptr<uint8_t>(x, y) = b(rng) ? 255 : 0;
  return m;
}

// A one-pixel serpentine: runs on rows 4k joined alternately at the right
// and left ends, so it crosses every tile border many times; between its
// runs (rows 4k + 2), dashes of 3 pixels, each a component of its own.
Image serpentine(int64_t w, int64_t h, int64_t* dashes) {
  Image m(kGray8, Rect(0, 0, w, h));
  m.fill_zero();
  *dashes = 0;
  for (int64_t y = 0; y < h; ++y) {
    const int64_t k = y / 4;
    if (y % 4 == 0)
      for (int64_t x = 1; x < w - 1; ++x) *m.ptr<uint8_t>(x, y) = 255;
    else
      *m.ptr<uint8_t>(k % 2 == 0 ? w - 2 : 1, y) = 255;
    if (y % 4 == 2)
      for (int64_t x = 3; x + 2 < w - 4; x += 6, ++*dashes)
        for (int64_t d = 0; d < 3; ++d) *m.ptr<uint8_t>(x + d, y) = 255;
  }
  return m;
}

TEST(LabelTile, HandCases) {
  // 8-connected: the diagonal joins; 4-connected: it does not.
  const uint8_t px[] = {1, 0, 0, 1,  //
                        0, 1, 0, 1,  //
                        0, 0, 0, 0,  //
                        1, 1, 0, 1};
  std::vector<uint32_t> out(16), first;
  label::TileScratch s;
  EXPECT_EQ(label::label_tile(px, 4, 4, 4, 8, out.data(), 4, first, s), 4u);
  EXPECT_EQ(out, (std::vector<uint32_t>{1, 0, 0, 2, 0, 1, 0, 2, 0, 0, 0, 0, 3, 3, 0, 4}));
  EXPECT_EQ(first, (std::vector<uint32_t>{0, 3, 12, 15}));
  EXPECT_EQ(label::label_tile(px, 4, 4, 4, 4, out.data(), 4, first, s), 5u);
  EXPECT_EQ(out, (std::vector<uint32_t>{1, 0, 0, 2, 0, 3, 0, 2, 0, 0, 0, 0, 4, 4, 0, 5}));
  // A U whose arms meet late keeps the number of its first pixel.
  const uint8_t u[] = {0, 1, 0, 1,  //
                       0, 1, 0, 1,  //
                       0, 1, 1, 1};
  EXPECT_EQ(label::label_tile(u, 4, 4, 3, 4, out.data(), 4, first, s), 1u);
}

TEST(LabelTile, FloatNanIsSetAndMinusZeroIsNot) {
  const float v[] = {std::numeric_limits<float>::quiet_NaN(), -0.0f, 0.5f, 0.0f};
  uint8_t fg[4];
  label::foreground_row(reinterpret_cast<const uint8_t*>(v), SampleType::kF32, 4, fg);
  EXPECT_EQ(fg[0], 1);
  EXPECT_EQ(fg[1], 0);
  EXPECT_EQ(fg[2], 1);
  EXPECT_EQ(fg[3], 0);
}

TEST(Label, RandomMasksAgainstScipyEveryTile) {
  if (!test::python_has("scipy.ndimage")) GTEST_SKIP() << "scipy missing";
  const Image m = random_mask(301, 173, 0.55, 7);
  for (int conn : {4, 8}) {
    const Image ref = scipy_label(m, conn);
    for (int64_t tile : {16, 48, 64, 256})
      EXPECT_EQ(diff_labels(label_of(m, conn, tile), ref), "") << conn << " " << tile;
  }
}

TEST(Label, ThresholdedIhcAgainstScipy) {
  if (!test::python_has("skimage.data")) GTEST_SKIP() << "scikit-image missing";
  test::TempDir tmp;
  ASSERT_EQ(test::run_python(test::oracle("label_oracle.py"), {"ihc_mask", tmp.file("ihc.npy")}).exit_code, 0);
  const Image m = test::load_npy(tmp.file("ihc.npy"));
  for (int conn : {4, 8}) {
    const Image ref = scipy_label(m, conn);
    for (int64_t tile : {16, 64, 256}) {
      LabelStats st;
      EXPECT_EQ(diff_labels(label_of(m, conn, tile, size_t{1} << 30, &st), ref), "") << conn << " " << tile;
      EXPECT_GT(st.components, 100u);
    }
  }
}

TEST(Label, NucleiMaskAgainstScipy) {
  if (!test::python_has("scipy.ndimage")) GTEST_SKIP() << "scipy missing";
  test::TempDir tmp;
  ASSERT_EQ(test::run_python(test::oracle("label_oracle.py"), {"nuclei_mask", "700", "500", "3", tmp.file("n.npy")})
                .exit_code,
            0);
  const Image m = test::load_npy(tmp.file("n.npy"));
  for (int conn : {4, 8}) {
    const Image ref = scipy_label(m, conn);
    for (int64_t tile : {32, 256}) EXPECT_EQ(diff_labels(label_of(m, conn, tile), ref), "") << conn << " " << tile;
    // A budget far below the tables: the tile store and the records spill.
    LabelStats st;
    EXPECT_EQ(diff_labels(label_of(m, conn, 16, 256 << 10, &st), ref), "") << conn;
    EXPECT_GT(st.tiles_spilled, 0u);
  }
}

TEST(Label, SerpentineCrossesHundredsOfTiles) {
  int64_t dashes = 0;
  const int64_t w = 515, h = 387;  // the last run ends the serpentine (h - 1 = 4k + 2)
  const Image m = serpentine(w, h, &dashes);
  for (int conn : {4, 8})
    for (int64_t tile : {16, 64}) {
      LabelStats st;
      const Image got = label_of(m, conn, tile, size_t{1} << 30, &st);
      EXPECT_EQ(st.components, static_cast<uint64_t>(1 + dashes));
      EXPECT_GE(st.tiles, (w / tile) * (h / tile));
      // The serpentine starts at (1, 0): it is 1 everywhere.
      int64_t bad = 0;
      for (int64_t y = 0; y < h; y += 4)
        for (int64_t x = 1; x < w - 1; ++x) bad += *got.ptr<uint32_t>(x, y) != 1u;
      EXPECT_EQ(bad, 0) << conn << " " << tile;
    }
  if (!test::python_has("scipy.ndimage")) return;
  for (int conn : {4, 8}) EXPECT_EQ(diff_labels(label_of(m, conn, 16), scipy_label(m, conn)), "");
}

TEST(Label, CheckerboardWorstCase) {
  const int64_t w = 203, h = 157;
  Image m(kGray8, Rect(0, 0, w, h));
  for (int64_t y = 0; y < h; ++y)
    for (int64_t x = 0; x < w; ++x) *m.ptr<uint8_t>(x, y) = (x + y) % 2 ? 0 : 1;
  // 4-connected: every set pixel its own component, numbered in raster order.
  LabelStats st;
  const Image four = label_of(m, 4, 16, 192 << 10, &st);
  EXPECT_EQ(st.components, static_cast<uint64_t>((w * h + 1) / 2));
  EXPECT_GT(st.table_pages_spilled, 0u);  // the records did not fit the budget
  uint32_t next = 0;
  int64_t bad = 0;
  for (int64_t y = 0; y < h; ++y)
    for (int64_t x = 0; x < w; ++x) {
      const uint32_t v = *four.ptr<uint32_t>(x, y);
      bad += (x + y) % 2 ? v != 0 : v != ++next;
    }
  EXPECT_EQ(bad, 0);
  // 8-connected: one component.
  const Image eight = label_of(m, 8, 16, 192 << 10, &st);
  EXPECT_EQ(st.components, 1u);
  bad = 0;
  for (int64_t y = 0; y < h; ++y)
    for (int64_t x = 0; x < w; ++x) bad += *eight.ptr<uint32_t>(x, y) != ((x + y) % 2 ? 0u : 1u);
  EXPECT_EQ(bad, 0);
}

TEST(Label, WorstCasesFlatAndThin) {
  for (auto [w, h] : {std::pair<int64_t, int64_t>{1, 300}, {300, 1}, {1, 1}, {37, 41}}) {
    Image full(kGray8, Rect(0, 0, w, h)), empty(kGray8, Rect(0, 0, w, h));
    for (int64_t y = 0; y < h; ++y)
      for (int64_t x = 0; x < w; ++x) *full.ptr<uint8_t>(x, y) = 9, *empty.ptr<uint8_t>(x, y) = 0;
    LabelStats st;
    const Image a = label_of(full, 8, 16, size_t{1} << 30, &st);
    EXPECT_EQ(st.components, 1u);
    for (int64_t y = 0; y < h; ++y)
      for (int64_t x = 0; x < w; ++x) ASSERT_EQ(*a.ptr<uint32_t>(x, y), 1u);
    label_of(empty, 4, 16, size_t{1} << 30, &st);
    EXPECT_EQ(st.components, 0u);
  }
  // Other sample types: u16, u32 and f32 (NaN set) label alike.
  Image f(PixelFormat{SampleType::kF32, 1}, Rect(0, 0, 40, 30)),
      u(PixelFormat{SampleType::kU16, 1}, Rect(0, 0, 40, 30));
  const Image m = random_mask(40, 30, 0.5, 3);
  for (int64_t y = 0; y < 30; ++y)
    for (int64_t x = 0; x < 40; ++x) {
      const bool s = *m.ptr<uint8_t>(x, y) != 0;
      *f.ptr<float>(x, y) = s ? ((x + y) % 3 ? -2.5f : std::numeric_limits<float>::quiet_NaN()) : -0.0f;
      *u.ptr<uint16_t>(x, y) = s ? 65535 : 0;
    }
  const Image want = label_of(m, 8, 16);
  EXPECT_EQ(diff_labels(label_of(f, 8, 16), want), "");
  EXPECT_EQ(diff_labels(label_of(u, 8, 32), want), "");
}

// The sparse labelling of few pixels (a watershed's markers) gives
// label_components' numbers, read back through any rect: random masks of
// several densities and sizes (one row, one column, one pixel), the
// serpentine across hundreds of tiles, the checkerboard, both
// connectivities, any tile size. More set pixels than it may hold, or not
// u8: nothing (the caller labels with label_components).
TEST(LabelSparse, EqualsLabelComponents) {
  auto copy_of = [](const Image& a) {
    Image c(a.fmt(), a.rect());
    copy_overlap(a.view(), c.view());
    return c;
  };
  auto sparse_of = [&](const Image& m, int conn, int64_t tile, LabelStats* st = nullptr) {
    MemorySource src(copy_of(m));
    const auto out = label_sparse(src, conn, tile, size_t{1} << 30, st);
    EXPECT_NE(out, nullptr);
    if (!out) return Image(PixelFormat{SampleType::kU32, 1}, m.rect());
    EXPECT_EQ(out->info().fmt, (PixelFormat{SampleType::kU32, 1}));
    // Read in odd pieces, as the watershed's tiles and halos read it.
    Image all(PixelFormat{SampleType::kU32, 1}, m.rect());
    for (int64_t y = 0; y < m.rect().h; y += 23)
      for (int64_t x = 0; x < m.rect().w; x += 37) {
        const Rect r = Rect(x, y, 37, 23).intersect(m.rect());
        copy_overlap(out->read(0, r).view(), all.view());
      }
    return all;
  };
  int64_t dashes = 0;
  std::vector<Image> masks;
  masks.push_back(random_mask(301, 257, 0.002, 1));
  masks.push_back(random_mask(301, 257, 0.05, 2));
  masks.push_back(random_mask(128, 96, 0.5, 3));
  masks.push_back(random_mask(1, 300, 0.3, 4));
  masks.push_back(random_mask(300, 1, 0.3, 5));
  masks.push_back(random_mask(1, 1, 1.0, 6));
  masks.push_back(serpentine(515, 387, &dashes));
  Image board(kGray8, Rect(0, 0, 61, 43));
  for (int64_t y = 0; y < 43; ++y)
    for (int64_t x = 0; x < 61; ++x) *board.ptr<uint8_t>(x, y) = (x + y) % 2 ? 0 : 7;
  masks.push_back(std::move(board));
  for (size_t k = 0; k < masks.size(); ++k)
    for (int conn : {4, 8})
      for (int64_t tile : {16, 64, 256, 1024}) {
        LabelStats want_st, got_st;
        const Image want = label_of(masks[k], conn, tile, size_t{1} << 30, &want_st);
        EXPECT_EQ(diff_labels(sparse_of(masks[k], conn, tile, &got_st), want), "")
            << "mask " << k << ", connectivity " << conn << ", tile " << tile;
        EXPECT_EQ(got_st.components, want_st.components) << "mask " << k;
      }
  // Limits and types.
  const Image dense = random_mask(100, 80, 0.5, 7);
  MemorySource src(copy_of(dense));
  EXPECT_EQ(label_sparse(src, 8, 64, 100), nullptr);
  EXPECT_NE(label_sparse(src, 8, 64, 8000), nullptr);
  MemorySource wide(Image(PixelFormat{SampleType::kU16, 1}, Rect(0, 0, 8, 8)));
  EXPECT_EQ(label_sparse(wide, 8, 64, 1000), nullptr);
  EXPECT_THROW(label_sparse(src, 6, 64, 8000), InputError);
}

// A nuclei-like mask 8x --memory through the CLI: the same bytes as a run
// that fits in memory, within the budget, at tiles 16/64/256 alike.
TEST(LabelCli, OutOfCoreEightTimesTheBudget) {
  test::TempDir tmp;
  const int64_t n = 5800;  // 33.6 MB of u8 mask against --memory 4M
  Image m(kGray8, Rect(0, 0, n, n));
  std::mt19937_64 rng(5);
  m.fill_zero();
  for (int k = 0; k < n * n / 300; ++k) {
    const int64_t cx = rng() % n, cy = rng() % n, r = 2 + rng() % 7;
    for (int64_t y = std::max<int64_t>(0, cy - r); y < std::min(n, cy + r + 1); ++y)
      for (int64_t x = std::max<int64_t>(0, cx - r); x < std::min(n, cx + r + 1); ++x)
        if ((x - cx) * (x - cx) + (y - cy) * (y - cy) <= r * r) *m.ptr<uint8_t>(x, y) = 255;
  }
  test::TiffSpec spec;
  spec.compression = 8;
  test::write_tiff(tmp.file("m.tif"), m.view(), spec);
  // The fixed cost: the same command on a 64x64 corner (with a GPU present,
  // it includes the CUDA context, ~100 MB), as the memory contract counts it
  // (docs/HARDENING.md: the budget plus a fixed overhead per process).
  test::write_tiff(tmp.file("tiny.tif"), m.view().sub(Rect(0, 0, 64, 64)), spec);
  const auto base = test::run_cli({"label", tmp.file("tiny.tif"), tmp.file("t.tif"), "--memory", "4M", "--tile", "64"});
  ASSERT_EQ(base.exit_code, 0) << base.err;
  const auto small = test::run_cli({"label", tmp.file("m.tif"), tmp.file("a.tif"), "--memory", "4M", "--tile", "64",
                                    "--report", tmp.file("a.json")});
  ASSERT_EQ(small.exit_code, 0) << small.err;
  if (!test::kSanitizerBuild) {
    EXPECT_LE(small.peak_rss_bytes, base.peak_rss_bytes + (size_t{4} << 20) + (size_t{8} << 20))
        << "peak RSS " << small.peak_rss_bytes / 1048576.0 << " MiB, fixed cost " << base.peak_rss_bytes / 1048576.0;
  }
  std::printf("[ info     ] label %lldx%lld, --memory 4M: peak RSS %.1f MiB (64x64: %.1f MiB), %.2f s\n",
              static_cast<long long>(n), static_cast<long long>(n), small.peak_rss_bytes / 1048576.0,
              base.peak_rss_bytes / 1048576.0, small.seconds);
  const nlohmann::json rep = test::read_json(tmp.file("a.json"));
  const Image a = test::read_tiff_libtiff(tmp.file("a.tif"), 0);
  for (const char* tile : {"16", "256"}) {
    const auto big = test::run_cli({"label", tmp.file("m.tif"), tmp.file("b.tif"), "--tile", tile});
    ASSERT_EQ(big.exit_code, 0) << big.err;
    EXPECT_EQ(test::diff_images(a.view(), test::read_tiff_libtiff(tmp.file("b.tif"), 0).view()), "") << tile;
  }
  if (test::python_has("scipy.ndimage")) {
    EXPECT_EQ(diff_labels(a, scipy_label(m, 8)), "");
  }
  (void)rep;
}

TEST(LabelCli, BadInputOneLine) {
  test::TempDir tmp;
  test::write_tiff(tmp.file("rgb.tif"), test::random_image(kRgb8, 32, 32, 1).view(), {});
  auto r = test::run_cli({"label", tmp.file("rgb.tif"), tmp.file("o.tif")});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("one-channel"), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  test::write_tiff(tmp.file("g.tif"), test::random_image(kGray8, 32, 32, 1).view(), {});
  r = test::run_cli({"label", tmp.file("g.tif"), tmp.file("o.tif"), "--connectivity", "6"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("connectivity"), std::string::npos) << r.err;
  EXPECT_TRUE(tmp.list().size() == 2u) << "no output left behind";
}

}  // namespace
}  // namespace tw
