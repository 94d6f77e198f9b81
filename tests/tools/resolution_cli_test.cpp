// Every op's result is in its input's coordinates: it carries the input's
// microns per pixel into the file it writes (jobs/op_runner.hpp,
// carry_resolution). The EDT, reconstructions and Canny once wrote theirs
// without, and `tilewave nuclei` lost its micron columns.
#include <gtest/gtest.h>

#include "tests/support/test_support.hpp"

namespace tw {
namespace {

TEST(Resolution, EveryKindOfOpCarriesTheInputs) {
  test::TempDir tmp;
  test::TiffSpec spec;
  spec.tile_w = spec.tile_h = 64;
  spec.xres = 20000;  // 0.5 um/px
  test::write_tiff(tmp.file("g.tif"), test::pattern_image(kGray8, 150, 130, 3).view(), spec);
  const std::string g = tmp.file("g.tif"), o = tmp.file("o.tif");
  const std::vector<std::vector<std::string>> commands = {
      {"edt", g, o},
      {"fill-holes", g, o},
      {"reconstruct", g, g, o},
      {"hdome", g, o, "--h", "5"},
      {"filter", "canny", g, o, "--low", "20", "--high", "60"},
      {"filter", "threshold", g, o, "--otsu"},
      {"filter", "erode", g, o, "--radius", "2"},
      {"label", g, o},
      {"objects", g, o, "--min-area", "3"},
      {"run", g, o, "filter gaussian --sigma 1", "filter threshold --otsu", "fill-holes", "edt"},
  };
  for (const auto& c : commands) {
    const auto r = test::run_cli(c);
    ASSERT_EQ(r.exit_code, 0) << c[0] << ": " << r.err;
    EXPECT_NEAR(test::read_tiff_tags(o, 0).xres, 20000.0f, 1.0f) << c[0] << " " << c[1];
  }
}

}  // namespace
}  // namespace tw
