// `tilewave region` and `tilewave thumbnail` (jobs/region/): regions equal
// to openslide-python's read_region (RGB, alpha dropped) on a pyramid vips
// wrote and on an Aperio-like SVS, 16-bit regions equal to tifffile's
// pixels, thumbnails close to vips thumbnail's, and bad input refused
// before any work with nothing written.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <fstream>

#include "tests/support/test_support.hpp"

namespace tw {
namespace {

// python3 SCRIPT MODE ...
//  openslide SLIDE OURS.png LEVEL X Y W H: ours == read_region's RGB.
//  tiff TIF PAGE OURS.png X0 Y0 W H: ours == the page's pixels (0 outside).
//  close OURS.png VIPS.png: same shape (vips sizes the shorter side from the
//    level it loads, so it may be a pixel longer: ours is then resized to it
//    by area), mean |diff| <= 2.5, PSNR >= 30 dB.
constexpr const char* kOracle = R"PY(
import sys
import numpy as np
import cv2

def load(path):
    img = cv2.imread(path, cv2.IMREAD_UNCHANGED)
    assert img is not None, path
    return img[..., ::-1] if img.ndim == 3 else img

mode = sys.argv[1]
if mode == 'openslide':
    import openslide
    slide, ours = openslide.OpenSlide(sys.argv[2]), load(sys.argv[3])
    level, x, y, w, h = map(int, sys.argv[4:9])
    want = np.asarray(slide.read_region((x, y), level, (w, h)))[..., :3]
    assert ours.shape == want.shape, (ours.shape, want.shape)
    bad = np.argwhere((ours != want).any(axis=2))
    assert len(bad) == 0, (len(bad), bad[0].tolist(), ours[tuple(bad[0])].tolist(), want[tuple(bad[0])].tolist())
elif mode == 'tiff':
    import tifffile
    page = tifffile.TiffFile(sys.argv[2]).pages[int(sys.argv[3])].asarray()
    ours = load(sys.argv[4])
    x0, y0, w, h = map(int, sys.argv[5:9])
    want = np.zeros((h, w) + page.shape[2:], page.dtype)
    sx0, sy0 = max(x0, 0), max(y0, 0)
    sx1, sy1 = min(x0 + w, page.shape[1]), min(y0 + h, page.shape[0])
    if sx1 > sx0 and sy1 > sy0:
        want[sy0 - y0:sy1 - y0, sx0 - x0:sx1 - x0] = page[sy0:sy1, sx0:sx1]
    assert ours.dtype == want.dtype and ours.shape == want.shape, (ours.dtype, ours.shape, want.shape)
    assert (ours == want).all(), int(np.abs(ours.astype(np.int64) - want).max())
else:
    a, b = load(sys.argv[2]), load(sys.argv[3])
    assert abs(a.shape[0] - b.shape[0]) <= 1 and abs(a.shape[1] - b.shape[1]) <= 1, (a.shape, b.shape)
    if a.shape != b.shape:
        a = cv2.resize(a, (b.shape[1], b.shape[0]), interpolation=cv2.INTER_AREA)
    a, b = a.astype(np.float64), b.astype(np.float64)
    mad = np.abs(a - b).mean()
    psnr = 10 * np.log10(255.0 ** 2 / max(((a - b) ** 2).mean(), 1e-12))
    print(mad, psnr)
    assert mad <= 2.5 and psnr >= 30, (mad, psnr)
)PY";

class RegionCli : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!test::python_has("cv2") || !test::python_has("openslide") || !test::python_has("tifffile"))
      GTEST_SKIP() << "python3 cv2/openslide/tifffile missing";
    oracle_ = tmp_.file("region_oracle.py");
    std::ofstream(oracle_) << kOracle;
  }
  static bool have_vips() { return test::run({"vips", "--version"}).exit_code == 0; }
  static bool exists(const std::string& p) {
    struct stat st {};
    return ::lstat(p.c_str(), &st) == 0;
  }
  // A pyramid vips writes (deflate, 256 tiles) of a libtiff-written image.
  std::string vips_pyramid(int64_t w, int64_t h) {
    const std::string base = tmp_.file("base.tif"), out = tmp_.file("vips.tif");
    test::TiffSpec spec;
    spec.compression = 8;
    test::write_tiff(base, test::pattern_image(kRgb8, w, h, 3).view(), spec);
    const auto r = test::run({"vips", "tiffsave", base, out, "--tile", "--pyramid", "--compression", "deflate",
                              "--tile-width", "256", "--tile-height", "256"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return out;
  }
  void expect_same_as_openslide(const std::string& slide, int level, const std::string& rect) {
    const std::string out = tmp_.file("r.png");
    const auto r = test::run_cli({"region", slide, out, "--level", std::to_string(level), "--rect", rect});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    std::vector<std::string> args{"openslide", slide, out, std::to_string(level)};
    std::string s = rect;
    for (size_t p; (p = s.find(',')) != std::string::npos; s = s.substr(p + 1)) args.push_back(s.substr(0, p));
    args.push_back(s);
    const auto c = test::run_python(oracle_, args);
    EXPECT_EQ(c.exit_code, 0) << slide << " level " << level << " " << rect << ": " << c.err;
  }
  test::TempDir tmp_;
  std::string oracle_;
};

TEST_F(RegionCli, EqualsOpenSlideOnAVipsPyramid) {
  if (!have_vips()) GTEST_SKIP() << "vips missing";
  const std::string slide = vips_pyramid(1024, 768);
  expect_same_as_openslide(slide, 0, "100,37,300,151");
  expect_same_as_openslide(slide, 1, "200,64,257,129");
  // (Not level 2: OpenSlide leaves parts of a level whose 256-pixel tiles
  // are taller than the level itself transparent.)
  // Partly outside: openslide's transparent pixels are 0 in RGB, as ours.
  expect_same_as_openslide(slide, 0, "-20,-7,64,33");
  expect_same_as_openslide(slide, 1, "900,700,120,90");
  expect_same_as_openslide(slide, 0, "5000,5000,16,16");
}

// An Aperio-like SVS (JPEG tiles, levels without the reduced flag, a
// thumbnail between them), read by our TIFF reader and by OpenSlide's.
TEST_F(RegionCli, EqualsOpenSlideOnAnSvs) {
  const std::string path = tmp_.file("slide.svs");
  test::TiffSpec spec;
  spec.compression = 7;  // JPEG
  spec.tile_w = spec.tile_h = 64;
  spec.description =
      "Aperio Image Library v12.0.5\r\n400x320 [0,0 400x320] (64x64) JPEG/RGB Q=70|AppMag = 40|MPP = 0.25";
  test::write_tiff(path, test::pattern_image(kRgb8, 400, 320, 1).view(), spec);
  test::TiffSpec thumb = spec;
  thumb.tiled = false;
  thumb.rows_per_strip = 16;
  thumb.description = "Aperio Image Library v12.0.5\r\n400x320 -> 100x80 - |AppMag = 40";
  test::append_tiff_directory(path, test::pattern_image(kRgb8, 100, 80, 2).view(), thumb, 0);
  spec.description = "Aperio Image Library v12.0.5\r\n400x320 -> 200x160";
  test::append_tiff_directory(path, test::pattern_image(kRgb8, 200, 160, 3).view(), spec, 0);
  expect_same_as_openslide(path, 0, "10,20,300,200");
  expect_same_as_openslide(path, 1, "64,32,100,100");
  expect_same_as_openslide(path, 1, "-8,-8,30,30");
}

// 16-bit gray: the PNG keeps all 16 bits (tifffile reads the level).
TEST_F(RegionCli, SixteenBitRegionEqualsTifffile) {
  const std::string tif = tmp_.file("g16.tif"), out = tmp_.file("g16.png");
  ASSERT_EQ(test::run_cli({"pyramid", "synthetic:700x500,gray,16bit", tif, "--compression", "deflate", "--min-size",
                           "100", "--no-associated"})
                .exit_code,
            0);
  auto r = test::run_cli({"region", tif, out, "--level", "1", "--rect", "300,100,250,200"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto c = test::run_python(oracle_, {"tiff", tif, "1", out, "150", "50", "250", "200"});
  EXPECT_EQ(c.exit_code, 0) << c.err;
  r = test::run_cli({"region", tif, out, "--level", "0", "--rect", "650,480,100,40"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  c = test::run_python(oracle_, {"tiff", tif, "0", out, "650", "480", "100", "40"});
  EXPECT_EQ(c.exit_code, 0) << c.err;
}

TEST_F(RegionCli, ThumbnailCloseToVips) {
  if (!have_vips()) GTEST_SKIP() << "vips missing";
  const std::string slide = vips_pyramid(1500, 1000);
  for (const char* size : {"333", "128", "700"}) {
    const std::string ours = tmp_.file("t.png"), vips = tmp_.file("v.png");
    const auto r = test::run_cli({"thumbnail", slide, ours, "--size", size});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    ASSERT_EQ(test::run({"vips", "thumbnail", slide, vips, size}).exit_code, 0);
    const auto c = test::run_python(oracle_, {"close", ours, vips});
    EXPECT_EQ(c.exit_code, 0) << size << ": " << c.err;
  }
  // JPEG output, any input we read.
  const auto j = test::run_cli({"thumbnail", "synthetic:3000x1000", tmp_.file("s.jpg"), "--size", "300"});
  EXPECT_EQ(j.exit_code, 0) << j.err;
  EXPECT_NE(j.out.find("300 x 100"), std::string::npos) << j.out;
}

void expect_refused(const test::RunResult& r, const std::string& text, int code = 1) {
  EXPECT_EQ(r.exit_code, code) << r.err;
  EXPECT_NE(r.err.find(text), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
}

TEST_F(RegionCli, BadInputIsRefusedBeforeAnyWork) {
  const std::string out = tmp_.file("o.png");
  // 100000^2 RGB is 28 GiB: refused at once, not after reading.
  const auto big = test::run_cli({"region", "synthetic:200000x200000", out, "--rect", "0,0,100000,100000"});
  expect_refused(big, "more than --memory");
  EXPECT_LT(big.seconds, 5);
  expect_refused(test::run_cli({"region", "synthetic:300x200", out, "--level", "7", "--rect", "0,0,10,10"}), "not 7");
  expect_refused(test::run_cli({"region", "synthetic:300x200", out, "--rect", "0,0,10"}), "X,Y,W,H", 2);
  expect_refused(test::run_cli({"region", "synthetic:300x200", out, "--rect", "0,0,0,10"}), "at least 1", 2);
  expect_refused(test::run_cli({"region", "synthetic:300x200", out}), "--rect", 2);
  expect_refused(test::run_cli({"region", "synthetic:300x200", tmp_.file("o.bmp"), "--rect", "0,0,10,10"}),
                 ".png, .jpg or .jpeg");
  expect_refused(test::run_cli({"region", "synthetic:300x200,gray,16bit", tmp_.file("o.jpg"), "--rect", "0,0,10,10"}),
                 "write a .png");
  expect_refused(test::run_cli({"thumbnail", "synthetic:300x200", out, "--size", "301"}), "never enlarges");
  expect_refused(test::run_cli({"thumbnail", "synthetic:300x200", tmp_.file("missing/t.png"), "--size", "30"}),
                 "does not exist");
  EXPECT_EQ(tmp_.list().size(), 1u);  // the oracle script only
}

}  // namespace
}  // namespace tw
