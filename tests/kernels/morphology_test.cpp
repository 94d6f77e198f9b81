// filter erode|dilate against scikit-image, scipy and OpenCV: real images,
// 16-bit and RGB, random samples at odd sizes and radii wider than the image,
// every result read in tiles of 16, 48 and 256 pixels (halo = R); through
// the command with --memory far below the image; bad input; and the white
// top-hat by reconstruction as a pipeline.
#include "kernels/morphology/morphology.hpp"

#include <gtest/gtest.h>
#include <tiffio.h>

#include <cstdio>
#include <string>
#include <vector>

#include "engine/memory_source.hpp"
#include "io/tiff/tiff_source.hpp"
#include "tests/kernels/registered_op.hpp"
#include "tests/support/test_support.hpp"

namespace tw {
namespace {

using test::Params;
using test::read_tiled;
using test::source_of;

struct Case {
  std::string op;  // erosion | dilation (the oracle's words)
  std::string shape;
  int r;
  std::string lib = "skimage";
  std::string text() const { return op + ":" + shape + ":" + std::to_string(r) + ":" + lib; }
};

class Morphology : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!test::python_has("skimage") || !test::python_has("scipy.ndimage") || !test::python_has("cv2"))
      GTEST_SKIP() << "scikit-image, scipy or OpenCV missing";
  }
  Image image(const std::string& name) {
    const auto r = test::run_python(test::oracle("morphology_oracle.py"), {"image", name, tmp.file(name + ".npy")});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return test::load_npy(tmp.file(name + ".npy"));
  }
  // The oracle's results for all cases, from one Python process.
  std::vector<Image> references(const Image& in, const std::vector<Case>& cases) {
    test::save_npy(tmp.file("in.npy"), in.view());
    std::string list;
    for (const Case& c : cases) list += (list.empty() ? "" : ",") + c.text();
    const auto r =
        test::run_python(test::oracle("morphology_oracle.py"), {"morph", tmp.file("in.npy"), list, tmp.file("ref")});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    std::vector<Image> out;
    for (size_t k = 0; k < cases.size(); ++k)
      out.push_back(test::load_npy(tmp.file("ref" + std::to_string(k) + ".npy")));
    return out;
  }
  // Ours, read in tiles of 16, 48, 256 and whole: each equal to the reference.
  void expect_cases(const Image& in, const std::vector<Case>& cases, const std::string& what) {
    const std::vector<Image> refs = references(in, cases);
    const test::SourceP src = source_of(in);
    for (size_t k = 0; k < cases.size(); ++k) {
      const Case& c = cases[k];
      const Params p = {{"radius", std::to_string(c.r)}, {"shape", c.shape}};
      for (int64_t tile : {16, 48, 256, 0}) {
        const Image got = test::run_registered(c.op == "erosion" ? "erode" : "dilate", {src}, p, tile).image;
        EXPECT_EQ(test::bits_diff(got.view(), refs[k].view()), "") << what << " " << c.text() << " tile " << tile;
      }
    }
  }
  static std::vector<Case> all_cases(const std::vector<int>& radii, const std::string& lib = "skimage") {
    std::vector<Case> cases;
    for (const char* op : {"erosion", "dilation"})
      for (const char* shape : {"disk", "square"})
        for (int r : radii) cases.push_back({op, shape, r, lib});
    return cases;
  }
  test::TempDir tmp;
};

TEST_F(Morphology, RealImagesEqualScikitImage) {
  for (const char* name : {"camera", "coins", "moon"}) expect_cases(image(name), all_cases({1, 2, 5, 8, 16}), name);
}

// scipy with mode='nearest' and OpenCV (whose default border leaves outside
// pixels out) give the same pixels: the border rule is the element's alone.
TEST_F(Morphology, ScipyNearestAndOpenCvAgree) {
  const Image cam = image("camera");
  expect_cases(cam, all_cases({3, 16}, "nearest"), "camera");
  expect_cases(cam, all_cases({3, 16}, "cv2"), "camera");
}

TEST_F(Morphology, SixteenBitAndRgb) {
  expect_cases(image("camera16"), all_cases({1, 6, 11}), "camera16");
  expect_cases(image("astronaut"), all_cases({2, 9}), "astronaut");
}

// Random samples (every value, no structure), odd sizes, a single row or
// column, and radii up to 64, wider than the image.
TEST_F(Morphology, RandomOddSizesAndWideRadii) {
  for (auto [w, h] : {std::pair<int64_t, int64_t>{77, 53}, {1, 40}, {40, 1}, {5, 3}}) {
    const std::string size = std::to_string(w) + "x" + std::to_string(h);
    expect_cases(test::random_samples(kGray8, w, h, 11), all_cases({1, 4, 7}), "u8 " + size);
    expect_cases(test::random_samples(PixelFormat{SampleType::kU16, 1}, w, h, 12), all_cases({1, 4, 7}), "u16 " + size);
  }
  expect_cases(test::random_samples(kGray8, 70, 61, 13), all_cases({30, 64}), "u8 70x61");
  expect_cases(test::random_samples(PixelFormat{SampleType::kU16, 3}, 33, 29, 14), all_cases({64}), "u16 rgb 33x29");
}

// Hand-checked: one bright pixel dilated is the element itself (its pixel
// count: 1 + 4R + 4 sum_{1..R} floor(sqrt(R^2 - dy^2)) for the disk); the
// dark pixel eroded likewise; extreme values survive untouched elsewhere.
TEST(MorphologyWorstCases, ImpulseIsTheElement) {
  for (int r : {1, 3, 10, 64}) {
    const int64_t n = 2 * r + 9;
    for (bool dilate : {true, false}) {
      Image img(PixelFormat{SampleType::kU16, 1}, Rect(0, 0, n, n));
      for (int64_t y = 0; y < n; ++y)
        for (int64_t x = 0; x < n; ++x) img.row<uint16_t>(y)[x] = dilate ? 0 : 65535;
      img.row<uint16_t>(n / 2)[n / 2] = dilate ? 65535 : 0;
      for (const char* shape : {"disk", "square"}) {
        const Image got = test::run_registered(dilate ? "dilate" : "erode", {source_of(img)},
                                               {{"radius", std::to_string(r)}, {"shape", shape}}, 16)
                              .image;
        int64_t bad = 0;
        for (int64_t y = 0; y < n; ++y)
          for (int64_t x = 0; x < n; ++x) {
            const int64_t dx = x - n / 2, dy = y - n / 2;
            const bool in =
                std::string(shape) == "disk" ? dx * dx + dy * dy <= r * r : std::abs(dx) <= r && std::abs(dy) <= r;
            bad += got.row<uint16_t>(y)[x] != ((in == dilate) ? 65535 : 0);
          }
        EXPECT_EQ(bad, 0) << shape << " r " << r << (dilate ? " dilate" : " erode");
      }
    }
  }
}

TEST(MorphologyBadInput, OneLineErrors) {
  const ImageType gray{kGray8, "in.tif"};
  bool param = false;
  EXPECT_EQ(test::check_error("erode", {gray}, {{"radius", "5"}}), "");
  EXPECT_EQ(test::check_error("dilate", {ImageType{kRgb8, "rgb.tif"}}, {{"radius", "5"}}), "");
  EXPECT_EQ(test::check_error("erode", {ImageType{PixelFormat{SampleType::kU16, 1}, "a"}}, {{"radius", "64"}}), "");
  for (const char* r : {"0", "65", "-1", "2.5", "x"}) {
    param = false;
    EXPECT_NE(test::check_error("erode", {gray}, {{"radius", r}}, &param), "") << r;
    EXPECT_TRUE(param) << r;
  }
  EXPECT_NE(test::check_error("erode", {gray}, {}, &param).find("--radius"), std::string::npos);
  EXPECT_NE(test::check_error("erode", {gray}, {{"radius", "3"}, {"shape", "circle"}}, &param), "");
  EXPECT_TRUE(param);
  // Any channel count is taken (docs/channels.md); other sample types not.
  for (PixelFormat f : {PixelFormat{SampleType::kF32, 1}, PixelFormat{SampleType::kU32, 1},
                        PixelFormat{SampleType::kI32, 1}, PixelFormat{SampleType::kF32, 5}}) {
    const std::string e = test::check_error("dilate", {ImageType{f, "x.tif"}}, {{"radius", "3"}}, &param);
    EXPECT_NE(e.find("x.tif"), std::string::npos) << f.str() << ": " << e;
    EXPECT_NE(e.find("8- or 16-bit samples"), std::string::npos) << e;
    EXPECT_FALSE(param);
  }
  // Through the command: status 2 for a bad option, 1 for a float image.
  test::TempDir tmp;
  test::TiffSpec spec;
  test::write_tiff(tmp.file("g.tif"), test::random_samples(kGray8, 40, 30, 1).view(), spec);
  test::write_tiff(tmp.file("f.tif"), test::random_samples(PixelFormat{SampleType::kF32, 1}, 40, 30, 1).view(), spec);
  auto r = test::run_cli({"filter", "erode", tmp.file("g.tif"), tmp.file("o.tif"), "--radius", "65"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("radius"), std::string::npos) << r.err;
  r = test::run_cli({"filter", "erode", tmp.file("g.tif"), tmp.file("o.tif")});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  r = test::run_cli({"filter", "dilate", tmp.file("f.tif"), tmp.file("o.tif"), "--radius", "2"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("8- or 16-bit samples"), std::string::npos) << r.err;
}

// The command on an image 8x its --memory: the pixels of the op read whole,
// within the budget (plus the fixed overhead of the same command on a tiny
// image).
TEST(MorphologyCli, OutOfCore) {
  test::TempDir tmp;
  const int64_t w = 5800, h = 5800;  // 33.6 MB of 8-bit gray against --memory 4M
  {
    // Written, then freed: a child's peak RSS counts the pages it shares
    // with the test process until exec.
    test::TiffSpec spec;
    spec.compression = COMPRESSION_ADOBE_DEFLATE;
    test::write_tiff(tmp.file("in.tif"), test::pattern_image(kGray8, w, h, 7).view(), spec);
    test::write_tiff(tmp.file("tiny.tif"), test::pattern_image(kGray8, 100, 100, 7).view(), spec);
  }
  const auto base =
      test::run_cli({"filter", "erode", tmp.file("tiny.tif"), tmp.file("tiny_out.tif"), "--radius", "12"});
  ASSERT_EQ(base.exit_code, 0) << base.err;
  const size_t overhead = base.peak_rss_bytes + (size_t{24} << 20);
  for (const char* shape : {"disk", "square"}) {
    const auto r = test::run_cli({"filter", "erode", tmp.file("in.tif"), tmp.file(std::string(shape) + ".tif"),
                                  "--radius", "12", "--shape", shape, "--memory", "4M", "--tile", "192"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    std::printf("[ info     ] erode %s r 12, %lldx%lld u8, --memory 4M: peak RSS %.1f MiB, %.1f s\n", shape,
                static_cast<long long>(w), static_cast<long long>(h), r.peak_rss_bytes / 1048576.0, r.seconds);
    if (!test::kSanitizerBuild) {
      EXPECT_LE(r.peak_rss_bytes, (size_t{4} << 20) + overhead) << shape;
    }
  }
  const Image in = TiffSource(tmp.file("in.tif")).read(0, Rect(0, 0, w, h));
  for (const char* shape : {"disk", "square"}) {
    const Image want = test::run_registered("erode", {source_of(in)}, {{"radius", "12"}, {"shape", shape}}).image;
    TiffSource out(tmp.file(std::string(shape) + ".tif"));
    EXPECT_EQ(test::bits_diff(out.read(0, Rect(0, 0, w, h)).view(), want.view()), "") << shape;
  }
}

// White top-hat by reconstruction as pipeline steps: I minus the opening by
// reconstruction, as scikit-image computes it.
TEST_F(Morphology, TopHatByReconstructionPipeline) {
  for (const char* name : {"coins", "moon"}) {
    const Image img = image(name);
    test::save_npy(tmp.file("in.npy"), img.view());
    ASSERT_EQ(
        test::run_python(test::oracle("morphology_oracle.py"), {"tophat", "5", tmp.file("in.npy"), tmp.file("ref.npy")})
            .exit_code,
        0);
    test::write_tiff(tmp.file("in.tif"), img.view(), test::TiffSpec{});
    const auto r = test::run_cli({"run", tmp.file("in.tif"), tmp.file("out.tif"), "e: filter erode --radius 5",
                                  "o: reconstruct e input", "math subtract input o", "--tile", "64", "--memory", "4M"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    TiffSource out(tmp.file("out.tif"));
    EXPECT_EQ(test::bits_diff(out.read(0, img.rect()).view(), test::load_npy(tmp.file("ref.npy")).view()), "") << name;
  }
}

}  // namespace
}  // namespace tw
