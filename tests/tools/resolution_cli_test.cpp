// Every op's result is in its input's coordinates: it carries the input's
// microns per pixel into the file it writes (jobs/op_runner.hpp,
// carry_resolution). The EDT, reconstructions and Canny once wrote theirs
// without, and `tilewave nuclei` lost its micron columns. A resolution no
// slide can have (4294967295 pixels per cm, its inverse, `MPP = nan`) is no
// pixel size: read as unknown with a warning, and never written as a 0/1
// rational (io/vendor_metadata.hpp plausible_mpp).
#include <gtest/gtest.h>

#include <algorithm>

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

// tifffile's view of a written file: "X Y UNIT" of page 0's resolution tags
// (or "none"), then whether its OME-XML has a PhysicalSizeX and its
// description an Aperio `MPP =` field.
std::string written_resolution(const std::string& path) {
  const auto r = test::run({test::python(), "-c",
                            "import sys, tifffile\n"
                            "with tifffile.TiffFile(sys.argv[1]) as f:\n"
                            "    p = f.pages[0]\n"
                            "    x, y, u = (p.tags.get(n) for n in ('XResolution', 'YResolution', 'ResolutionUnit'))\n"
                            "    print('%s %s %d' % (x.value, y.value, int(u.value)) if x else 'none')\n"
                            "    print('ome-size' if 'PhysicalSizeX' in (f.ome_metadata or '') else 'no-ome-size')\n"
                            "    print('mpp-field' if 'MPP =' in (p.description or '') else 'no-mpp-field')\n",
                            path});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return r.out;
}

TEST(Resolution, AbsurdValuesAreUnknownNeverZero) {
  if (!test::python_has("tifffile")) GTEST_SKIP() << "tifffile missing";
  test::TempDir tmp;
  const auto made =
      test::run({test::python(), "-c",
                 "import sys, numpy as np, tifffile as tf\n"
                 "a = (np.arange(100 * 100) % 251).astype(np.uint8).reshape(100, 100)\n"
                 "cm = dict(resolutionunit='CENTIMETER', tile=(64, 64), metadata=None)\n"
                 "tf.imwrite(sys.argv[1] + '/big.tif', a, resolution=((4294967295, 1),) * 2, **cm)\n"
                 "tf.imwrite(sys.argv[1] + '/small.tif', a, resolution=((1, 4294967295),) * 2, **cm)\n"
                 "tf.imwrite(sys.argv[1] + '/good.tif', a, resolution=((40000, 1),) * 2, **cm)\n"
                 "tf.imwrite(sys.argv[1] + '/nan.svs', a, tile=(64, 64), metadata=None, description="
                 "'Aperio Image Library v12.0.5\\r\\n100x100 [0,0 100x100] (64x64)|AppMag = 20|MPP = nan')\n",
                 tmp.path()});
  ASSERT_EQ(made.exit_code, 0) << made.err;
  const struct {
    const char* name;
    const char* warns;  // what the warning names
  } cases[] = {{"big.tif", "XResolution/YResolution: 2.32831e-06 x 2.32831e-06 microns per pixel"},
               {"small.tif", "XResolution/YResolution: 4.29497e+13 x 4.29497e+13 microns per pixel"},
               {"nan.svs", "the Aperio description's MPP: nan x nan microns per pixel"}};
  for (const auto& c : cases) {
    const std::string in = tmp.file(c.name);
    const auto info = test::run_cli({"info", in});
    ASSERT_EQ(info.exit_code, 0) << c.name << ": " << info.err;
    EXPECT_EQ(info.out.find("microns per pixel"), std::string::npos) << c.name << ": " << info.out;
    EXPECT_NE(info.err.find(c.warns), std::string::npos) << c.name << ": " << info.err;
    EXPECT_NE(info.err.find("pixel size unknown"), std::string::npos) << c.name << ": " << info.err;
    EXPECT_EQ(std::count(info.err.begin(), info.err.end(), '\n'), 1) << c.name << ": one warning: " << info.err;
    for (const char* suffix : {".tif", ".ome.tif"}) {
      const std::string out = tmp.file(std::string("out_") + c.name + suffix);
      const auto r = test::run_cli({"pyramid", in, out, "--min-size", "16"});
      ASSERT_EQ(r.exit_code, 0) << c.name << suffix << ": " << r.err;
      EXPECT_NE(r.err.find("pixel size unknown"), std::string::npos) << r.err;
      // No resolution tags, no PhysicalSize, no `MPP = nan` handed on.
      EXPECT_EQ(written_resolution(out), "none\nno-ome-size\nno-mpp-field\n") << c.name << suffix;
      const auto back = test::run_cli({"info", out});
      ASSERT_EQ(back.exit_code, 0) << back.err;
      EXPECT_EQ(back.out.find("microns per pixel"), std::string::npos) << back.out;
      EXPECT_EQ(back.err, "") << "the output's metadata is valid: " << back.err;
    }
  }
  // A real pixel size still goes through, correctly scaled: 0.25 um/px is
  // 40000 px/cm at level 0, 20000 at level 1.
  const std::string good = tmp.file("good_out.tif");
  const auto r = test::run_cli({"pyramid", tmp.file("good.tif"), good, "--min-size", "16", "--tile", "64"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  EXPECT_EQ(written_resolution(good), "(40000000, 1000) (40000000, 1000) 3\nno-ome-size\nno-mpp-field\n");
  EXPECT_NEAR(test::read_tiff_tags(good, 1).xres, 20000.0f, 0.01f);
  const auto info = test::run_cli({"info", good});
  EXPECT_NE(info.out.find("0.2500 x 0.2500 microns per pixel"), std::string::npos) << info.out;
  // A synthetic slide's mpp= is held to the same range.
  const auto bad = test::run_cli({"pyramid", "synthetic:64x64,mpp=1e-7", tmp.file("s.tif")});
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_NE(bad.err.find("bad mpp '1e-7'"), std::string::npos) << bad.err;
  EXPECT_EQ(std::count(bad.err.begin(), bad.err.end(), '\n'), 1) << bad.err;
  for (const std::string& name : tmp.list()) EXPECT_NE(name, "s.tif") << "output left behind";
}

}  // namespace
}  // namespace tw
