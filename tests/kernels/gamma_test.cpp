// filter gamma (kernels/gamma): scikit-image's adjust_gamma at test time, any
// tiling, the worst cases, bad input, and the command.
#include "kernels/gamma/gamma.hpp"

#include <gtest/gtest.h>

#include "engine/ops/run_op.hpp"
#include "tests/support/op_test.hpp"
#include "tests/support/test_support.hpp"

namespace tw {
namespace {

const Backend kCpu{};

// scikit-image's adjust_gamma for uint8 as of 0.20 (which rounds; Debian 12's
// 0.19 truncates instead), written out in numpy, through the Debian Python.
Image skimage_gamma(const test::TempDir& tmp, const Image& img, double gamma, double gain) {
  test::save_npy(tmp.file("in.npy"), img.view());
  const auto r = test::run({test::python(), "-c",
                            "import sys, numpy as np\n"
                            "a = np.load(sys.argv[1])\n"
                            "g, k = float(sys.argv[3]), float(sys.argv[4])\n"
                            "lut = np.minimum(np.rint(255 * k * (np.linspace(0, 1, 256) ** g)), 255).astype(np.uint8)\n"
                            "np.save(sys.argv[2], lut[a])\n",
                            tmp.file("in.npy"), tmp.file("out.npy"), std::to_string(gamma), std::to_string(gain)});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return test::load_npy(tmp.file("out.npy"));
}

template <int C>
Image gamma_of(const Image& img, double gamma, double gain, int64_t tile = 0) {
  return test::read_tiled(*ops::run_op(test::source_of(img), ops::make_gamma<C>(gamma, gain), kCpu, "gamma"), tile);
}

TEST(Gamma, Reference) {
  if (!test::python_has("numpy")) GTEST_SKIP() << "numpy missing";
  test::TempDir tmp;
  const Image gray = test::pattern_image(kGray8, 301, 203, 4), rgb = test::pattern_image(kRgb8, 160, 97, 5);
  for (auto [gamma, gain] : {std::pair{0.45, 1.0}, {2.2, 1.0}, {1.0, 1.0}, {0.7, 1.3}, {3.0, 0.5}}) {
    // std::to_string keeps 6 decimals: the same values reach both sides.
    EXPECT_EQ(test::diff_images(gamma_of<1>(gray, gamma, gain).view(), skimage_gamma(tmp, gray, gamma, gain).view()),
              "")
        << "gray, gamma " << gamma << " gain " << gain;
    EXPECT_EQ(test::diff_images(gamma_of<3>(rgb, gamma, gain).view(), skimage_gamma(tmp, rgb, gamma, gain).view()), "")
        << "RGB, gamma " << gamma << " gain " << gain;
  }
}

TEST(Gamma, TileInvariance) {
  const Image rgb = test::pattern_image(kRgb8, 300, 211, 6);
  const Image whole = gamma_of<3>(rgb, 0.6, 1.0);
  for (int64_t tile : {64, 67, 256})
    EXPECT_EQ(test::diff_images(gamma_of<3>(rgb, 0.6, 1.0, tile).view(), whole.view()), "") << tile;
}

TEST(Gamma, WorstCases) {
  // 0 and 255 stay put at gain 1; a 1 x N image; every sample value.
  Image ramp(kGray8, Rect(0, 0, 256, 1));
  for (int k = 0; k < 256; ++k) ramp.row<uint8_t>(0)[k] = static_cast<uint8_t>(k);
  const Image g = gamma_of<1>(ramp, 2.2, 1.0);
  EXPECT_EQ(g.row<uint8_t>(0)[0], 0);
  EXPECT_EQ(g.row<uint8_t>(0)[255], 255);
  for (int k = 1; k < 256; ++k) EXPECT_LE(g.row<uint8_t>(0)[k - 1], g.row<uint8_t>(0)[k]) << "not monotone at " << k;
  // A gain that overflows saturates.
  EXPECT_EQ(gamma_of<1>(ramp, 1.0, 4.0).row<uint8_t>(0)[200], 255);
}

TEST(Gamma, CommandAndBadInput) {
  test::TempDir tmp;
  const auto ok = test::run_cli({"filter", "gamma", "synthetic:300x200", tmp.file("g.tif"), "--gamma", "0.5"});
  ASSERT_EQ(ok.exit_code, 0) << ok.err;
  const Image in = test::read_tiled(*test::source_of(test::read_tiff_libtiff(tmp.file("g.tif"), 0)));
  EXPECT_EQ(in.fmt(), kRgb8);
  struct Case {
    std::vector<std::string> args;
    int code;
    const char* says;
  };
  for (const Case& c :
       {Case{{"filter", "gamma", "synthetic:64x64", tmp.file("o.tif")}, 2, "gamma needs --gamma G"},
        Case{{"filter", "gamma", "synthetic:64x64", tmp.file("o.tif"), "--gamma", "0"}, 2, "out of range"},
        Case{{"filter", "gamma", "synthetic:64x64,16bit", tmp.file("o.tif"), "--gamma", "2"},
             1,
             "gamma needs 8-bit samples"}}) {
    const auto r = test::run_cli(c.args);
    EXPECT_EQ(r.exit_code, c.code) << r.err;
    EXPECT_NE(r.err.find(c.says), std::string::npos) << r.err;
  }
}

}  // namespace
}  // namespace tw
