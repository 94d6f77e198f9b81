// The exact Euclidean distance transform: brute force on small images, the
// row pass on its own, the seed's patterns against scipy through the CLI,
// band boundaries anywhere, the empty cases, and out of core.
#include <gtest/gtest.h>
#include <tbb/parallel_for.h>
#include <tiffio.h>

#include <cmath>
#include <fstream>
#include <limits>
#include <random>
#include <vector>

#include "engine/memory_source.hpp"
#include "io/tiff/tiff_source.hpp"
#include "jobs/edt/edt_job.hpp"
#include "jobs/edt/edt_support.hpp"
#include "tests/support/test_support.hpp"

namespace tw {
namespace {

Image brute(const Image& in) {
  const int64_t W = in.rect().w, H = in.rect().h;
  Image out(PixelFormat{SampleType::kF32, 1}, in.rect());
  for (int64_t y = 0; y < H; ++y)
    for (int64_t x = 0; x < W; ++x) {
      double best = std::numeric_limits<double>::infinity();
      if (in.ptr<uint8_t>(x, y)[0] == 0)
        best = 0;
      else
        for (int64_t v = 0; v < H; ++v)
          for (int64_t u = 0; u < W; ++u)
            if (in.ptr<uint8_t>(u, v)[0] == 0) best = std::min(best, std::hypot(double(u - x), double(v - y)));
      out.ptr<float>(x, y)[0] = static_cast<float>(best);
    }
  return out;
}

double max_diff(const Image& a, const Image& b) {
  double m = 0;
  for (int64_t y = 0; y < a.rect().h; ++y)
    for (int64_t x = 0; x < a.rect().w; ++x) {
      const float p = a.ptr<float>(a.rect().x + x, a.rect().y + y)[0],
                  q = b.ptr<float>(b.rect().x + x, b.rect().y + y)[0];
      if (std::isinf(p) || std::isinf(q)) {
        if (p != q) return std::numeric_limits<double>::infinity();
        continue;
      }
      m = std::max(m, std::fabs(double(p) - double(q)));
    }
  return m;
}

Image crop(const Image& img, const Rect& r) {
  Image out(img.fmt(), r);
  copy_overlap(img.view(), out.view());
  return out;
}

Image run(const Image& in, size_t memory) {
  Image copy(in.fmt(), in.rect());
  copy_overlap(in.view(), copy.view());
  MemorySource src(std::move(copy));
  auto d = euclidean_distance(src, {}, memory, "/tmp/tilewave-test");
  return d->read(0, Rect(0, 0, in.rect().w, in.rect().h));
}

TEST(Edt, RowPassMatchesBruteForce) {
  std::mt19937_64 rng(3);
  for (int trial = 0; trial < 200; ++trial) {
    const int64_t n = 1 + static_cast<int64_t>(rng() % 40), inf2 = 1 << 30;
    std::vector<int64_t> g2(n), out(n), s(n), t(n);
    // Half the trials with many zeros (background), which split the row
    // into runs solved apart.
    const uint64_t zeros = trial % 2 ? 3 : 1000;
    for (auto& g : g2)
      g = rng() % 4 == 0 ? inf2 : rng() % zeros == 0 ? 0 : static_cast<int64_t>((rng() % 30) * (rng() % 30));
    edt_row(g2.data(), n, inf2, out.data(), s.data(), t.data());
    for (int64_t u = 0; u < n; ++u) {
      int64_t best = inf2 * 4;
      for (int64_t i = 0; i < n; ++i) best = std::min(best, (u - i) * (u - i) + g2[i]);
      ASSERT_EQ(out[u], best) << "trial " << trial << " u " << u;
    }
  }
}

TEST(Edt, MatchesBruteForceAnyBand) {
  std::mt19937_64 rng(9);
  for (auto [w, h] : {std::pair<int64_t, int64_t>{1, 1}, {1, 40}, {40, 1}, {23, 17}, {64, 37}}) {
    Image in(kGray8, Rect(0, 0, w, h));
    for (int64_t y = 0; y < h; ++y)
      for (int64_t x = 0; x < w; ++x) in.ptr<uint8_t>(x, y)[0] = rng() % 23 == 0 ? 0 : 200;
    in.ptr<uint8_t>(0, 0)[0] = 0;  // at least one background pixel
    const Image want = brute(in);
    // A budget of a few hundred bytes forces one-row bands.
    for (size_t mem : {size_t{200}, size_t{1} << 20}) EXPECT_EQ(max_diff(run(in, mem), want), 0.0) << w << "x" << h;
  }
}

// The result's rows are made in bands that a small cache keeps (at most 64);
// reads in any order, from many threads at once, over far more bands than
// that (a band evicted and made again) give the same pixels as one read.
TEST(Edt, ResultReadInAnyOrderOverTheBandCache) {
  const int64_t W = 45, H = 4000;  // 125 bands of 32 rows
  std::mt19937_64 rng(11);
  Image in(kGray8, Rect(0, 0, W, H));
  for (int64_t y = 0; y < H; ++y)
    for (int64_t x = 0; x < W; ++x) in.ptr<uint8_t>(x, y)[0] = rng() % 97 == 0 ? 0 : 255;
  MemorySource src(std::move(in));
  for (size_t memory : {size_t{1} << 16, size_t{1} << 30}) {
    const auto d = euclidean_distance(src, {}, memory, "/tmp/tilewave-test");
    const Image whole = d->read(0, Rect(0, 0, W, H));
    for (int64_t y0 = H; y0 > 0; y0 -= 37) {  // bottom up, pieces across band edges
      const Rect r(0, std::max<int64_t>(0, y0 - 37), W, std::min<int64_t>(37, y0));
      ASSERT_EQ(max_diff(d->read(0, r), crop(whole, r)), 0) << "rows from " << r.y;
    }
    std::vector<Rect> windows;
    for (int k = 0; k < 400; ++k) {
      const int64_t h = 1 + static_cast<int64_t>(rng() % 300), w = 1 + static_cast<int64_t>(rng() % W);
      windows.emplace_back(static_cast<int64_t>(rng() % (W - w + 1)), static_cast<int64_t>(rng() % (H - h + 1)), w, h);
    }
    std::vector<double> diff(windows.size(), -1);
    tbb::parallel_for(size_t{0}, windows.size(),
                      [&](size_t k) { diff[k] = max_diff(d->read(0, windows[k]), crop(whole, windows[k])); });
    for (size_t k = 0; k < windows.size(); ++k) EXPECT_EQ(diff[k], 0) << "window " << k << " at memory " << memory;
  }
}

// Readers that need more bands at once than the cache holds would have the
// row pass run for every tile: threads reading tiles of different tile rows
// of a wide image, or one reader down tile columns. The result is then
// stored once (a scratch file at these budgets) and read from there: the
// same pixels, and the bands made bounded by a few passes. Reads in raster
// order of tile rows, as the writer reads, make each band once and store
// nothing.
TEST(Edt, ReadersTheCacheCannotHoldGetTheResultStored) {
  const int64_t W = 2048, H = 1600, T = 64, bands = (H + 31) / 32;
  std::mt19937_64 rng(5);
  Image in(kGray8, Rect(0, 0, W, H));
  for (int64_t y = 0; y < H; ++y)
    for (int64_t x = 0; x < W; ++x) in.ptr<uint8_t>(x, y)[0] = rng() % 97 == 0 ? 0 : 255;
  MemorySource src(std::move(in));
  const size_t memory = size_t{4} << 20;  // a cache of 2 bands of 2048 x 32 floats
  const Image whole = euclidean_distance(src, {}, size_t{1} << 30, "/tmp/tilewave-test")->read(0, Rect(0, 0, W, H));
  std::vector<Rect> tiles;
  for (int64_t x = 0; x < W; x += T)
    for (int64_t y = 0; y < H; y += T) tiles.emplace_back(x - 3, y - 3, T + 6, T + 6);  // a halo across band edges

  const auto down_columns = euclidean_distance(src, {}, memory, "/tmp/tilewave-test");
  for (const Rect& r : tiles) {
    const Rect in_image = r.intersect(Rect(0, 0, W, H));
    ASSERT_EQ(max_diff(down_columns->read(0, in_image), crop(whole, in_image)), 0) << in_image.x << "," << in_image.y;
  }
  EdtReadCounts c = edt_read_counts(*down_columns);
  EXPECT_TRUE(c.stored);
  EXPECT_LE(c.bands_made, 4 * bands) << "of " << bands << " bands";

  // Many threads, tile rows far apart.
  const auto scattered = euclidean_distance(src, {}, memory, "/tmp/tilewave-test");
  std::vector<double> diff(tiles.size(), -1);
  tbb::parallel_for(size_t{0}, tiles.size(), [&](size_t k) {
    const Rect r = tiles[(k * 389) % tiles.size()].intersect(Rect(0, 0, W, H));
    diff[k] = max_diff(scattered->read(0, r), crop(whole, r));
  });
  for (size_t k = 0; k < tiles.size(); ++k) ASSERT_EQ(diff[k], 0) << "tile " << k;
  c = edt_read_counts(*scattered);
  EXPECT_TRUE(c.stored);
  EXPECT_LE(c.bands_made, 4 * bands);

  // The writer's order: tile row after tile row, each across the image.
  const auto rows = euclidean_distance(src, {}, memory, "/tmp/tilewave-test");
  for (int64_t y = 0; y < H; y += 32)
    for (int64_t x = 0; x < W; x += T) {
      const Rect r = Rect(x, y, T, 32).intersect(Rect(0, 0, W, H));
      ASSERT_EQ(max_diff(rows->read(0, r), crop(whole, r)), 0);
    }
  c = edt_read_counts(*rows);
  EXPECT_FALSE(c.stored);
  EXPECT_EQ(c.bands_made, bands);
  EXPECT_EQ(edt_read_counts(src).bands_made, -1);
}

TEST(Edt, NoBackgroundNoForeground) {
  Image all(kGray8, Rect(0, 0, 30, 20)), none(kGray8, Rect(0, 0, 30, 20));
  for (int64_t y = 0; y < 20; ++y) std::memset(all.row<uint8_t>(y), 7, 30);
  none.fill_zero();
  const Image a = run(all, 1 << 20), n = run(none, 1 << 20);
  for (int64_t y = 0; y < 20; ++y)
    for (int64_t x = 0; x < 30; ++x) {
      EXPECT_TRUE(std::isinf(a.ptr<float>(x, y)[0]));  // documented: +inf, no background to measure to
      EXPECT_EQ(n.ptr<float>(x, y)[0], 0.0f);
    }
}

// The seed's EDT patterns, through the CLI, against scipy.
TEST(Edt, SeedPatternsMatchScipy) {
  if (!test::python_has("scipy.ndimage")) GTEST_SKIP() << "scipy missing";
  test::TempDir tmp;
  for (const char* name :
       {"random", "circles16", "big_circle", "squares_on_corners", "diagonal", "x", "central_circle"}) {
    const int64_t n = 700;
    ASSERT_EQ(test::run_python(test::oracle("morph_oracle.py"),
                               {"edt_pattern", name, std::to_string(n), tmp.file("in.npy"), tmp.file("ref.npy")})
                  .exit_code,
              0);
    const Image in = test::load_npy(tmp.file("in.npy"));
    test::TiffSpec spec;
    spec.tile_w = spec.tile_h = 64;
    spec.compression = COMPRESSION_ADOBE_DEFLATE;
    test::write_tiff(tmp.file("in.tif"), in.view(), spec);
    const auto r = test::run_cli({"edt", tmp.file("in.tif"), tmp.file("out.tif"), "--tile", "96", "--memory", "4M"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    TiffSource out(tmp.file("out.tif"));
    EXPECT_EQ(out.info().fmt, (PixelFormat{SampleType::kF32, 1}));
    const Image got = out.read(0, Rect(0, 0, n, n));
    EXPECT_LE(max_diff(got, test::load_npy(tmp.file("ref.npy"))), 1e-3) << name;
  }
}

// Real microscopy, thresholded, against scipy.
TEST(Edt, MicroscopyMatchesScipy) {
  if (!test::python_has("skimage.data")) GTEST_SKIP() << "scikit-image missing";
  test::TempDir tmp;
  ASSERT_EQ(test::run_python(test::oracle("morph_oracle.py"), {"ihc", tmp.file("ihc.npy")}).exit_code, 0);
  ASSERT_EQ(test::run_python(test::oracle("morph_oracle.py"), {"edt", tmp.file("ihc.npy"), "140", tmp.file("ref.npy")})
                .exit_code,
            0);
  const Image ihc = test::load_npy(tmp.file("ihc.npy"));
  EdtParams p;
  p.threshold = 140;
  MemorySource src([&] {
    Image c(ihc.fmt(), ihc.rect());
    copy_overlap(ihc.view(), c.view());
    return c;
  }());
  const Image got = euclidean_distance(src, p, 1 << 16, "/tmp/tilewave-test")->read(0, Rect(0, 0, 512, 512));
  EXPECT_LE(max_diff(got, test::load_npy(tmp.file("ref.npy"))), 1e-3);
}

// An image 9x larger than --memory: the same distances, within the budget.
TEST(Edt, OutOfCore) {
  test::TempDir tmp;
  // The fixed overhead: the same command on a tiny image (on a GPU machine
  // that includes the CUDA context, ~100 MB of RSS).
  const auto base = test::run_cli({"edt", "synthetic:100x100,gray", tmp.file("tiny.tif"), "--threshold", "200"});
  ASSERT_EQ(base.exit_code, 0) << base.err;
  const size_t overhead = base.peak_rss_bytes + (size_t{24} << 20);
  const auto big =
      test::run_cli({"edt", "synthetic:5000x5000,gray", tmp.file("a.tif"), "--threshold", "200", "--memory", "10M"});
  ASSERT_EQ(big.exit_code, 0) << big.err;
  if (!test::kSanitizerBuild) {
    EXPECT_LE(big.peak_rss_bytes, (size_t{10} << 20) + overhead) << big.peak_rss_bytes / 1048576.0 << " MiB";
  }
  std::printf("[ info     ] 25 MP edt (100 MB of float32), --memory 10M: peak RSS %.1f MiB, %.1f s\n",
              big.peak_rss_bytes / 1048576.0, big.seconds);
  ASSERT_EQ(test::run_cli({"edt", "synthetic:5000x5000,gray", tmp.file("b.tif"), "--threshold", "200"}).exit_code, 0);
  TiffSource a(tmp.file("a.tif")), b(tmp.file("b.tif"));
  EXPECT_EQ(max_diff(a.read(0, Rect(0, 0, 5000, 5000)), b.read(0, Rect(0, 0, 5000, 5000))), 0.0);
}

// The foreground test of integer images (compared as integers) gives what
// the double compare gives, for every value and thresholds between,
// at, below and above the type's range, and NaN.
TEST(Edt, ForegroundOfIntegersEqualsTheDoubleCompare) {
  std::mt19937 rng(11);
  const double thresholds[] = {-1e9,
                               -0.5,
                               0,
                               0.25,
                               1,
                               7.999,
                               128,
                               254.5,
                               255,
                               255.5,
                               65534.7,
                               65535,
                               4294967294.5,
                               4294967295.0,
                               1e12,
                               std::numeric_limits<double>::quiet_NaN()};
  for (SampleType t : {SampleType::kU8, SampleType::kU16, SampleType::kU32}) {
    Image img(PixelFormat{t, 1}, Rect(0, 0, 67, 3));
    for (int64_t y = 0; y < 3; ++y)
      for (int64_t x = 0; x < 67; ++x) {
        const uint32_t v = x < 4 ? (x == 0 ? 0u : x == 1 ? 255u : x == 2 ? 65535u : 4294967295u) : rng();
        if (t == SampleType::kU8) *img.ptr<uint8_t>(x, y) = static_cast<uint8_t>(v);
        if (t == SampleType::kU16) *img.ptr<uint16_t>(x, y) = static_cast<uint16_t>(v);
        if (t == SampleType::kU32) *img.ptr<uint32_t>(x, y) = v;
      }
    for (double thr : thresholds)
      for (int64_t row = 0; row < 3; ++row) {
        std::vector<uint8_t> fg(67, 9);
        const int64_t n = foreground_row(img, thr, fg.data(), row);
        int64_t want_n = 0;
        for (int64_t x = 0; x < 67; ++x) {
          const double v = t == SampleType::kU8    ? *img.ptr<uint8_t>(x, row)
                           : t == SampleType::kU16 ? *img.ptr<uint16_t>(x, row)
                                                   : *img.ptr<uint32_t>(x, row);
          const uint8_t want = v > thr;
          want_n += want;
          ASSERT_EQ(fg[static_cast<size_t>(x)], want) << "type " << int(t) << " threshold " << thr << " x " << x;
        }
        EXPECT_EQ(n, want_n);
      }
  }
}

// Tall narrow images whose squared distances pass 2^29 (the row pass in
// 32-bit integers up to 2^31, 64-bit beyond: 2 x 40000 and 5 x 20000 are
// 32-bit, 3 x 70000 is not): the definition, min over the columns of dx^2
// + the column's distance^2.
TEST(Edt, TallImagesAgainstTheDefinition) {
  for (auto [w, h] : {std::pair<int64_t, int64_t>{2, 40000}, {5, 20000}, {3, 70000}}) {
    // Background only at the top of column 0 and the bottom of the last:
    // distances run to the height, and their squares need the wide type
    // where the height's do not fit 32 bits. Column 1 has none.
    Image in(kGray8, Rect(0, 0, w, h));
    for (int64_t y = 0; y < h; ++y)
      for (int64_t x = 0; x < w; ++x) in.ptr<uint8_t>(x, y)[0] = 255;
    in.ptr<uint8_t>(0, 0)[0] = 0;
    in.ptr<uint8_t>(w - 1, h - 1)[0] = 0;
    // Column distances by two scans, then the minimum over columns.
    std::vector<std::vector<double>> col(static_cast<size_t>(w), std::vector<double>(static_cast<size_t>(h)));
    for (int64_t x = 0; x < w; ++x) {
      double d = INFINITY;
      for (int64_t y = 0; y < h; ++y) col[x][y] = d = in.ptr<uint8_t>(x, y)[0] ? d + 1 : 0;
      d = INFINITY;
      for (int64_t y = h - 1; y >= 0; --y) col[x][y] = std::min(col[x][y], d = in.ptr<uint8_t>(x, y)[0] ? d + 1 : 0);
    }
    const Image got = run(in, size_t{1} << 30);
    for (int64_t y = 0; y < h; ++y)
      for (int64_t x = 0; x < w; ++x) {
        double best = INFINITY;
        for (int64_t c = 0; c < w; ++c) best = std::min(best, double((x - c) * (x - c)) + col[c][y] * col[c][y]);
        ASSERT_EQ(got.ptr<float>(x, y)[0], static_cast<float>(std::sqrt(best)))
            << w << "x" << h << " at " << x << "," << y;
      }
  }
}

// Of a held input (a pipeline's stored result), the EDT keeps only the
// column distances' band edges and reads the input's bands again: the same
// distances, to the bit, as the raster's, for odd sizes (narrower and
// shorter than a band, a last band of one row), columns without background,
// no background at all, the 32-bit path of images 65535 and more tall, a
// threshold on 16-bit and RGB input, with its table in memory and spilled,
// read whole and in windows from many threads.
TEST(Edt, OfAHeldInputEqualsTheRaster) {
  std::mt19937_64 rng(17);
  struct Case {
    int64_t w, h;
    int bg_one_in;  // background pixels: about one in this many (0: none)
    PixelFormat fmt;
  };
  const PixelFormat u16{SampleType::kU16, 1}, rgb{SampleType::kU8, 3};
  const Case cases[] = {{1, 1, 2, kGray8},   {1, 40, 5, kGray8},       {40, 1, 5, kGray8},     {23, 17, 23, kGray8},
                        {64, 37, 3, kGray8}, {300, 95, 97, kGray8},    {45, 4000, 97, kGray8}, {130, 65, 400, kGray8},
                        {77, 33, 0, kGray8}, {3, 70000, 9000, kGray8}, {50, 90, 11, u16},      {61, 70, 13, rgb}};
  for (const Case& c : cases) {
    Image in(c.fmt, Rect(0, 0, c.w, c.h));
    const int64_t ch = c.fmt.channels;
    for (int64_t y = 0; y < c.h; ++y)
      for (int64_t x = 0; x < c.w; ++x)
        for (int64_t k = 0; k < ch; ++k) {
          // Every seventh column without background, the rest at random.
          const bool bg = c.bg_one_in > 0 && x % 7 != 3 && rng() % static_cast<uint64_t>(c.bg_one_in) == 0;
          if (c.fmt.type == SampleType::kU16)
            in.ptr<uint16_t>(x, y)[0] = static_cast<uint16_t>(bg ? rng() % 1000 : 1001 + rng() % 60000);
          else
            in.ptr<uint8_t>(x, y)[k] = static_cast<uint8_t>(bg ? rng() % 100 : 101 + rng() % 150);
        }
    EdtParams p;
    p.threshold = c.fmt.type == SampleType::kU16 ? 1000 : 100.5;
    auto src = std::make_shared<MemorySource>(std::move(in));
    EdtStats want_st;
    const Image want =
        euclidean_distance(*src, p, size_t{1} << 30, "/tmp/tilewave-test", &want_st)->read(0, Rect(0, 0, c.w, c.h));
    if (c.w * c.h <= 3000) {
      Image mask(kGray8, Rect(0, 0, c.w, c.h));
      for (int64_t y = 0; y < c.h; ++y) foreground_row(src->image(), p.threshold, mask.row<uint8_t>(y), y);
      ASSERT_EQ(max_diff(want, brute(mask)), 0.0) << c.w << "x" << c.h;
    }
    for (size_t memory : {size_t{1} << 12, size_t{1} << 30}) {
      SCOPED_TRACE(std::to_string(c.w) + "x" + std::to_string(c.h) + " at " + std::to_string(memory));
      EdtStats st;
      const auto d = euclidean_distance_of_held(src, p, memory, "/tmp/tilewave-test", &st);
      EXPECT_EQ(st.foreground, want_st.foreground);
      EXPECT_EQ(st.background, want_st.background);
      EXPECT_EQ(max_diff(d->read(0, Rect(0, 0, c.w, c.h)), want), 0.0);
      std::vector<Rect> windows;
      for (int k = 0; k < 60; ++k) {
        const int64_t h = 1 + static_cast<int64_t>(rng() % std::min<int64_t>(c.h, 100)),
                      w = 1 + static_cast<int64_t>(rng() % c.w);
        windows.emplace_back(static_cast<int64_t>(rng() % (c.w - w + 1)), static_cast<int64_t>(rng() % (c.h - h + 1)),
                             w, h);
      }
      std::vector<double> diff(windows.size(), -1);
      tbb::parallel_for(size_t{0}, windows.size(),
                        [&](size_t k) { diff[k] = max_diff(d->read(0, windows[k]), crop(want, windows[k])); });
      for (size_t k = 0; k < windows.size(); ++k) ASSERT_EQ(diff[k], 0) << "window " << k;
    }
  }
}

// In a pipeline on the CPU, the EDT of a held result (a barrier's:
// fill-holes) keeps no raster of column distances (the report says
// `edt_view`), in memory and with the mask 8x the budget, and equals
// `fill-holes` then `edt` as two commands; a streamed input (a threshold)
// takes the raster. With --device auto (the GPU's EDT where there is one)
// the same pixels. The report's budget per step adds up.
TEST(Edt, OfAHeldResultInAPipeline) {
  test::TempDir tmp;
  const std::string slide = "synthetic:6000x5500,gray";  // 33 MB of mask: 8x the 4M budget
  ASSERT_EQ(test::run_cli({"filter", "threshold", slide, tmp.file("m.tif"), "--value", "150"}).exit_code, 0);
  ASSERT_EQ(test::run_cli({"fill-holes", tmp.file("m.tif"), tmp.file("f.tif")}).exit_code, 0);
  ASSERT_EQ(test::run_cli({"edt", tmp.file("f.tif"), tmp.file("want.tif")}).exit_code, 0);
  const Image want = test::read_tiff_libtiff(tmp.file("want.tif"), 0);
  for (const std::string device : {"cpu", "auto"})
    for (const std::string memory : {"1G", "4M"}) {
      SCOPED_TRACE(device + " " + memory);
      ::unlink(tmp.file("d.tif").c_str());
      const auto r = test::run_cli({"run", tmp.file("m.tif"), tmp.file("d.tif"), "f: fill-holes", "edt f", "--tile",
                                    "64", "--memory", memory, "--device", device, "--report", tmp.file("r.json")});
      ASSERT_EQ(r.exit_code, 0) << r.err;
      EXPECT_EQ(test::diff_images(test::read_tiff_libtiff(tmp.file("d.tif"), 0).view(), want.view()), "");
      const nlohmann::json rep = test::read_json(tmp.file("r.json"));
      ASSERT_EQ(rep["steps"].size(), 2u) << rep.dump();
      if (device == "cpu") EXPECT_EQ(rep["steps"][1]["values"]["edt_view"], true) << rep.dump();
      // The budget each step found: the first's, less what the first's
      // result holds (alive to the end: the view reads it).
      const size_t b0 = rep["steps"][0]["budget_bytes"], h0 = rep["steps"][0]["held_bytes"],
                   b1 = rep["steps"][1]["budget_bytes"];
      EXPECT_LE(b0, memory == "1G" ? size_t{1} << 30 : size_t{4} << 20);
      if (device == "cpu") EXPECT_GT(h0, 0u);
      EXPECT_EQ(b1, b0 - h0) << rep.dump();
    }
  ::unlink(tmp.file("d.tif").c_str());
  const auto r = test::run_cli({"run", slide, tmp.file("d.tif"), "filter threshold --value 150", "edt", "--device",
                                "cpu", "--report", tmp.file("r.json")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(test::read_json(tmp.file("r.json"))["steps"][1]["values"]["edt_view"], false);
  ASSERT_EQ(test::run_cli({"edt", tmp.file("m.tif"), tmp.file("want.tif")}).exit_code, 0);
  EXPECT_EQ(test::diff_images(test::read_tiff_libtiff(tmp.file("d.tif"), 0).view(),
                              test::read_tiff_libtiff(tmp.file("want.tif"), 0).view()),
            "");
}

}  // namespace
}  // namespace tw
