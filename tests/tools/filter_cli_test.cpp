// tilewave filter and stats as users run them: TIFF in, pyramidal TIFF (or
// JSON) out; results independent of --tile; clear errors for bad input.
#include <gtest/gtest.h>
#include <tiffio.h>

#include "engine/memory_source.hpp"
#include "engine/ops/run_op.hpp"
#include "io/open_source.hpp"
#include "jobs/canny/canny_job.hpp"
#include "kernels/canny/canny.hpp"
#include "kernels/point/point_ops.hpp"
#include "tests/support/test_support.hpp"

namespace tw {
namespace {

class FilterCli : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!test::python_has("skimage")) GTEST_SKIP() << "scikit-image missing";
    for (const char* name : {"ihc", "coins"}) {
      const auto r =
          test::run_python(test::oracle("filter_oracle.py"), {"image", name, tmp.file(std::string(name) + ".npy")});
      ASSERT_EQ(r.exit_code, 0) << r.err;
      test::TiffSpec s;
      s.tile_w = s.tile_h = 64;
      s.compression = COMPRESSION_ADOBE_DEFLATE;
      test::write_tiff(tmp.file(std::string(name) + ".tif"),
                       test::load_npy(tmp.file(std::string(name) + ".npy")).view(), s);
    }
  }
  Image level0(const std::string& f) {
    const SourcePtr s = open_source(tmp.file(f));
    return s->read(0, s->level(0).bounds());
  }
  test::RunResult cli(std::vector<std::string> args) { return test::run_cli(args); }
  test::TempDir tmp;
};

TEST_F(FilterCli, ResultsDoNotDependOnTheTileSize) {
  struct Case {
    std::vector<std::string> args;
  };
  for (const Case& c : {Case{{"gaussian", "ihc.tif", "--sigma", "3"}}, Case{{"sobel", "ihc.tif"}},
                        Case{{"canny", "coins.tif", "--low", "20", "--high", "60"}}, Case{{"hed", "ihc.tif"}}}) {
    SCOPED_TRACE(c.args[0]);
    for (const char* tile : {"64", "512"}) {
      std::vector<std::string> a = {
          "filter", c.args[0], tmp.file(c.args[1]), tmp.file(std::string("o") + tile + ".tif"), "--tile", tile};
      a.insert(a.end(), c.args.begin() + 2, c.args.end());
      const auto r = cli(a);
      ASSERT_EQ(r.exit_code, 0) << r.err;
    }
    EXPECT_EQ(test::diff_images(level0("o64.tif").view(), level0("o512.tif").view()), "");
  }
}

TEST_F(FilterCli, CannyFileEqualsTheLibraryResult) {
  ASSERT_EQ(
      cli({"filter", "canny", tmp.file("coins.tif"), tmp.file("c.tif"), "--low", "20", "--high", "60", "--tile", "48"})
          .exit_code,
      0);
  ops::CannyParams p;
  p.low = 20, p.high = 60;
  ReconstructJob job;
  job.scratch_near = tmp.file("x.tif");
  auto src = std::make_shared<MemorySource>(test::load_npy(tmp.file("coins.npy")));
  const auto r = ops::canny_classic(src, p, job);
  const Image want = r.edges->read(0, r.edges->level(0).bounds());
  EXPECT_EQ(test::diff_images(level0("c.tif").view(), want.view()), "");
  EXPECT_EQ(test::read_tiff_tags(tmp.file("c.tif"), 1).width, (want.rect().w + 1) / 2) << "a pyramid";
}

TEST_F(FilterCli, OtsuAndStats) {
  const auto r = cli({"filter", "threshold", tmp.file("coins.tif"), tmp.file("t.tif"), "--otsu"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto s = cli({"stats", tmp.file("coins.tif"), "--histogram", "256"});
  ASSERT_EQ(s.exit_code, 0) << s.err;
  const auto at = r.out.find("Otsu threshold: ");
  ASSERT_NE(at, std::string::npos) << r.out;
  const int t = std::stoi(r.out.substr(at + 16));
  // Parsed as JSON (a hand-written printer once quoted the path twice).
  const auto stats = nlohmann::json::parse(s.out);
  EXPECT_EQ(stats["otsu_threshold"], t) << s.out;
  EXPECT_EQ(stats["input"], tmp.file("coins.tif"));
  const Image img = test::load_npy(tmp.file("coins.npy")), bin = level0("t.tif");
  uint64_t sum = 0;
  for (int64_t y = 0; y < img.rect().h; ++y)
    for (int64_t x = 0; x < img.rect().w; ++x) {
      const int v = img.ptr<uint8_t>(x, y)[0];
      sum += v;
      ASSERT_EQ(bin.ptr<uint8_t>(x, y)[0], v > t ? 255 : 0);
    }
  EXPECT_EQ(stats["sum"], nlohmann::json::array({sum})) << s.out;
  const auto rgb = cli({"stats", tmp.file("ihc.tif"), "--histogram", "8"});
  ASSERT_EQ(rgb.exit_code, 0) << rgb.err;
  const auto rgb_stats = nlohmann::json::parse(rgb.out);
  EXPECT_EQ(rgb_stats["channels"], 3);
  EXPECT_EQ(rgb_stats["histogram"].size(), 3u);
  EXPECT_EQ(rgb_stats["histogram"][0].size(), 8u);
}

TEST_F(FilterCli, BadInputGetsOneLineAndNoOutput) {
  struct Case {
    std::vector<std::string> args;
    int code;
    const char* says;
  };
  const std::string ihc = tmp.file("ihc.tif"), out = tmp.file("bad.tif");
  for (const Case& c :
       {Case{{"filter", "blur", ihc, out}, 2, "unknown filter op"},
        Case{{"filter", "gaussian", ihc, out}, 2, "--sigma"},
        Case{{"filter", "gaussian", ihc, out, "--sigma", "25"}, 2, "out of range"},
        Case{{"filter", "gaussian", ihc, out, "--sigma", "abc"}, 2, "not a number"},
        Case{{"filter", "canny", ihc, out, "--low", "1", "--high", "2", "--variant", "opencv"}, 2, "variant"},
        Case{{"filter", "hed", tmp.file("coins.tif"), out}, 1, "hed needs 8-bit RGB"},
        Case{{"filter", "invert", tmp.file("missing.tif"), out}, 1, "missing.tif"},
        Case{{"filter", "threshold", ihc, out}, 2, "--value"},
        Case{{"stats", tmp.file("missing.tif")}, 1, "missing.tif"}}) {
    const auto r = cli(c.args);
    EXPECT_EQ(r.exit_code, c.code) << c.args[1] << ": " << r.err;
    EXPECT_NE(r.err.find(c.says), std::string::npos) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  }
  EXPECT_EQ(tmp.list().size(), 4u) << "no output left behind";
}

}  // namespace
}  // namespace tw
