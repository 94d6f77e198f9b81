// reconstruct, fill-holes, hdome and edt as users run them: TIFF in, TIFF out,
// against scikit-image and scipy; out of core; bad input.
#include <gtest/gtest.h>
#include <tiffio.h>

#include <fstream>

#include "tests/support/test_support.hpp"

namespace tw {
namespace {

Image copy_of(const Image& a) {
  Image b(a.fmt(), a.rect());
  copy_overlap(a.view(), b.view());
  return b;
}

test::TiffSpec lossless(int tile = 64) {
  test::TiffSpec s;
  s.tile_w = s.tile_h = tile;
  s.compression = COMPRESSION_ADOBE_DEFLATE;
  return s;
}

class WavefrontCli : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!test::python_has("skimage.morphology")) GTEST_SKIP() << "scikit-image missing";
    ASSERT_EQ(test::run_python(test::oracle("morph_oracle.py"), {"ihc", tmp.file("ihc.npy")}).exit_code, 0);
    ihc = test::load_npy(tmp.file("ihc.npy"));
    test::write_tiff(tmp.file("ihc.tif"), ihc.view(), lossless());
  }
  Image oracle_reconstruct(const Image& seed, const Image& mask, const char* method, int conn) {
    test::save_npy(tmp.file("s.npy"), seed.view());
    test::save_npy(tmp.file("m.npy"), mask.view());
    const auto r = test::run_python(
        test::oracle("morph_oracle.py"),
        {"reconstruct", tmp.file("s.npy"), tmp.file("m.npy"), method, std::to_string(conn), tmp.file("o.npy")});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return test::load_npy(tmp.file("o.npy"));
  }
  test::TempDir tmp;
  Image ihc;
};

TEST_F(WavefrontCli, ReconstructMatchesScikitImage) {
  Image seed = copy_of(ihc);
  for (int64_t y = 0; y < 512; ++y)
    for (int64_t x = 0; x < 512; ++x)
      seed.ptr<uint8_t>(x, y)[0] = uint8_t(std::max(0, seed.ptr<uint8_t>(x, y)[0] - 25));
  test::write_tiff(tmp.file("seed.tif"), seed.view(), lossless(32));
  for (int conn : {4, 8}) {
    const auto r = test::run_cli({"reconstruct", tmp.file("seed.tif"), tmp.file("ihc.tif"), tmp.file("r.tif"), "--tile",
                                  "48", "--connectivity", std::to_string(conn), "--report", tmp.file("r.json")});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(test::diff_images(test::read_tiff_libtiff(tmp.file("r.tif"), 0).view(),
                                oracle_reconstruct(seed, ihc, "dilation", conn).view()),
              "")
        << "conn " << conn;
  }
  EXPECT_GT(test::read_json(tmp.file("r.json"))["tile_visits"], 0);
}

TEST_F(WavefrontCli, FillHolesMatchesScipy) {
  Image bin = copy_of(ihc);
  for (int64_t y = 0; y < 512; ++y)
    for (int64_t x = 0; x < 512; ++x) bin.ptr<uint8_t>(x, y)[0] = ihc.ptr<uint8_t>(x, y)[0] < 150 ? 255 : 0;
  test::write_tiff(tmp.file("bin.tif"), bin.view(), lossless());
  test::save_npy(tmp.file("bin.npy"), bin.view());
  for (int conn : {4, 8}) {
    const auto r = test::run_cli(
        {"fill-holes", tmp.file("bin.tif"), tmp.file("f.tif"), "--tile", "64", "--connectivity", std::to_string(conn)});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    ASSERT_EQ(test::run_python(test::oracle("morph_oracle.py"),
                               {"fill_holes", tmp.file("bin.npy"), std::to_string(conn), tmp.file("fh.npy")})
                  .exit_code,
              0);
    EXPECT_EQ(test::diff_images(test::read_tiff_libtiff(tmp.file("f.tif"), 0).view(),
                                test::load_npy(tmp.file("fh.npy")).view()),
              "")
        << "conn " << conn;
  }
  // Grayscale: reconstruction by erosion from the border, as skimage computes it.
  ASSERT_EQ(test::run_cli({"fill-holes", tmp.file("ihc.tif"), tmp.file("g.tif"), "--tile", "96"}).exit_code, 0);
  Image seed = copy_of(ihc);
  for (int64_t y = 1; y < 511; ++y)
    for (int64_t x = 1; x < 511; ++x) seed.ptr<uint8_t>(x, y)[0] = 255;
  EXPECT_EQ(test::diff_images(test::read_tiff_libtiff(tmp.file("g.tif"), 0).view(),
                              oracle_reconstruct(seed, ihc, "erosion", 4).view()),
            "");
}

TEST_F(WavefrontCli, HdomeMatchesScikitImage) {
  const auto r = test::run_cli({"hdome", tmp.file("ihc.tif"), tmp.file("h.tif"), "--h", "30", "--tile", "80"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  Image seed = copy_of(ihc);
  for (int64_t y = 0; y < 512; ++y)
    for (int64_t x = 0; x < 512; ++x) seed.ptr<uint8_t>(x, y)[0] = uint8_t(std::max(0, ihc.ptr<uint8_t>(x, y)[0] - 30));
  const Image rec = oracle_reconstruct(seed, ihc, "dilation", 8);
  Image want = copy_of(ihc);
  for (int64_t y = 0; y < 512; ++y)
    for (int64_t x = 0; x < 512; ++x)
      want.ptr<uint8_t>(x, y)[0] = uint8_t(ihc.ptr<uint8_t>(x, y)[0] - rec.ptr<uint8_t>(x, y)[0]);
  EXPECT_EQ(test::diff_images(test::read_tiff_libtiff(tmp.file("h.tif"), 0).view(), want.view()), "");
}

// An h-dome of a slide 9x larger than --memory spills tiles to disk, stays
// within the budget, and gives the same pixels as a run that fits in memory.
TEST(WavefrontOutOfCore, HdomeLargerThanBudget) {
  test::TempDir tmp;
  // The fixed cost: the same command on a tiny image, on the same default
  // device (a CUDA context alone is ~100 MB of RSS).
  const auto base = test::run_cli({"hdome", "synthetic:100x100,gray", tmp.file("s.tif"), "--h", "20"});
  ASSERT_EQ(base.exit_code, 0) << base.err;
  const size_t overhead = base.peak_rss_bytes + (size_t{24} << 20);
  // A sanitizer build checks no RSS bound, so an image twice the budget
  // (it still spills) does, in a quarter of the time.
  const std::string slide = test::kSanitizerBuild ? "synthetic:3000x3000,gray" : "synthetic:6000x6000,gray";
  const auto big =
      test::run_cli({"hdome", slide, tmp.file("a.tif"), "--h", "20", "--memory", "4M", "--report", tmp.file("a.json")});
  ASSERT_EQ(big.exit_code, 0) << big.err;
  if (!test::kSanitizerBuild) {
    EXPECT_LE(big.peak_rss_bytes, (size_t{4} << 20) + overhead)
        << "peak RSS " << big.peak_rss_bytes / 1048576.0 << " MiB with --memory 4M";
  }
  std::printf("[ info     ] %s h-dome, --memory 4M: peak RSS %.1f MiB, %.1f s\n", slide.c_str(),
              big.peak_rss_bytes / 1048576.0, big.seconds);
  EXPECT_GT(test::read_json(tmp.file("a.json"))["tiles_spilled"], 0) << "nothing spilled";
  ASSERT_EQ(test::run_cli({"hdome", slide, tmp.file("b.tif"), "--h", "20", "--memory", "1G"}).exit_code, 0);
  EXPECT_EQ(test::diff_images(test::read_tiff_libtiff(tmp.file("a.tif"), 0).view(),
                              test::read_tiff_libtiff(tmp.file("b.tif"), 0).view()),
            "");
}

TEST(WavefrontBadInput, OneLineNothingLeft) {
  test::TempDir tmp;
  Image a(kGray8, Rect(0, 0, 50, 40)), b(kGray8, Rect(0, 0, 50, 40)), small(kGray8, Rect(0, 0, 20, 20));
  a.fill_zero(), b.fill_zero(), small.fill_zero();
  a.ptr<uint8_t>(30, 20)[0] = 200;  // marker above the mask
  test::write_tiff(tmp.file("a.tif"), a.view(), lossless(16));
  test::write_tiff(tmp.file("b.tif"), b.view(), lossless(16));
  test::write_tiff(tmp.file("small.tif"), small.view(), lossless(16));
  test::write_tiff(tmp.file("rgb.tif"), test::pattern_image(kRgb8, 50, 40, 1).view(), lossless(16));
  struct Case {
    std::vector<std::string> args;
    std::string fragment;
    int code;
  } cases[] = {
      {{"reconstruct", tmp.file("a.tif"), tmp.file("b.tif"), "OUT"}, "above the mask at (30, 20)", 1},
      {{"reconstruct", tmp.file("small.tif"), tmp.file("b.tif"), "OUT"}, "marker is 20x20", 1},
      {{"reconstruct", tmp.file("rgb.tif"), tmp.file("b.tif"), "OUT"}, "single-channel", 1},
      {{"reconstruct", tmp.file("a.tif"), tmp.file("b.tif"), "OUT", "--connectivity", "6"}, "4 or 8", 2},
      // A bad option value is a usage mistake (2), like every other one.
      {{"reconstruct", tmp.file("a.tif"), tmp.file("b.tif"), "OUT", "--method", "opening"}, "method", 2},
      {{"hdome", tmp.file("b.tif"), "OUT"}, "--h", 2},
      {{"hdome", tmp.file("b.tif"), "OUT", "--h", "999"}, "--h", 2},
      {{"fill-holes", tmp.file("missing.tif"), "OUT"}, "No such file", 1},
      {{"edt", tmp.file("rgb.tif"), "OUT", "--threshold", "x"}, "--threshold", 2},
  };
  for (const auto& c : cases) {
    std::vector<std::string> args = c.args;
    for (auto& s : args)
      if (s == "OUT") s = tmp.file("out.tif");
    const auto before = tmp.list().size();
    const auto r = test::run_cli(args);
    EXPECT_EQ(r.exit_code, c.code) << args[0] << " " << c.fragment << ": " << r.err;
    EXPECT_NE(r.err.find(c.fragment), std::string::npos) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_EQ(tmp.list().size(), before) << "left files behind: " << c.fragment;
  }
  // --clip makes the same inputs valid.
  EXPECT_EQ(
      test::run_cli({"reconstruct", tmp.file("a.tif"), tmp.file("b.tif"), tmp.file("out.tif"), "--clip"}).exit_code, 0);
}

}  // namespace
}  // namespace tw
