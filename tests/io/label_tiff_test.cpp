// u32 label images through the readers and the pyramid writer: values above
// 16 bits survive, lower levels are the nearest sample (never a mean: a
// label 37 beside 38 must stay 37 or 38), lossless codecs only, and what
// cannot be a label image is refused by name.
#include <gtest/gtest.h>
#include <tiffio.h>

#include <fstream>

#include "tests/support/test_support.hpp"

namespace tw {
namespace {

// Labels of blobs in a grid, numbered past 65535 so that 16 bits would
// lose them, with 0 (background) between.
Image label_image(int64_t w, int64_t h) {
  Image img(PixelFormat{SampleType::kU32, 1}, Rect(0, 0, w, h));
  for (int64_t y = 0; y < h; ++y)
    for (int64_t x = 0; x < w; ++x) {
      const bool inside = (x % 13) < 10 && (y % 11) < 8;
      img.row<uint32_t>(y)[x] = inside ? static_cast<uint32_t>(70000 + (y / 11) * 1000 + x / 13) : 0u;
    }
  return img;
}

// a[::2, ::2].
Image every_other(const Image& a) {
  const Rect r = a.rect();
  Image out(a.fmt(), Rect(0, 0, (r.w + 1) / 2, (r.h + 1) / 2));
  for (int64_t y = 0; y < out.rect().h; ++y)
    for (int64_t x = 0; x < out.rect().w; ++x) out.row<uint32_t>(y)[x] = a.row<uint32_t>(2 * y)[2 * x];
  return out;
}

TEST(LabelTiff, RoundTripWithNearestLevels) {
  test::TempDir tmp;
  const Image labels = label_image(301, 217);
  test::TiffSpec spec;
  spec.tile_w = spec.tile_h = 64;
  spec.compression = COMPRESSION_ADOBE_DEFLATE;
  test::write_tiff(tmp.file("in.tif"), labels.view(), spec);
  for (const char* memory : {"64M", "4M"}) {
    // min(L, L) = L: the op only carries the labels to the writer.
    const auto r = test::run_cli({"math", "min", tmp.file("in.tif"), tmp.file("in.tif"), tmp.file("out.tif"), "--tile",
                                  "32", "--min-size", "16", "--memory", memory});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const int dirs = test::count_tiff_directories(tmp.file("out.tif"));
    ASSERT_GE(dirs, 4);
    Image expect(labels.fmt(), labels.rect());
    copy_overlap(labels.view(), expect.view());
    for (int d = 0; d < dirs; ++d) {
      const auto tags = test::read_tiff_tags(tmp.file("out.tif"), d);
      EXPECT_EQ(tags.bits, 32);
      EXPECT_EQ(tags.compression, COMPRESSION_ADOBE_DEFLATE) << "labels are written losslessly";
      const Image got = test::read_tiff_libtiff(tmp.file("out.tif"), d);
      ASSERT_EQ(got.fmt(), expect.fmt());
      EXPECT_EQ(test::diff_images(got.view(), expect.view()), "") << "level " << d << " with --memory " << memory;
      expect = every_other(expect);
    }
  }
}

TEST(LabelTiff, ReadByTifffile) {
  if (!test::python_has("tifffile")) GTEST_SKIP() << "tifffile missing";
  test::TempDir tmp;
  const Image labels = label_image(150, 90);
  test::write_tiff(tmp.file("in.tif"), labels.view(), test::TiffSpec{});
  test::save_npy(tmp.file("in.npy"), labels.view());
  const auto r = test::run_cli({"math", "max", tmp.file("in.tif"), tmp.file("in.tif"), tmp.file("out.tif"), "--tile",
                                "64", "--compression", "deflate"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  {
    std::ofstream py(tmp.file("check.py"));
    py << "import sys, numpy as np, tifffile\n"
          "a = np.load(sys.argv[2])\n"
          "with tifffile.TiffFile(sys.argv[1]) as t:\n"
          "    for k, page in enumerate(t.pages):\n"
          "        b = page.asarray()\n"
          "        assert b.dtype == np.uint32, b.dtype\n"
          "        assert (b == a).all(), k\n"
          "        a = a[::2, ::2]\n";
  }
  const auto p = test::run_python(tmp.file("check.py"), {tmp.file("out.tif"), tmp.file("in.npy")});

  EXPECT_EQ(p.exit_code, 0) << p.out << p.err;
}

TEST(LabelTiff, Refusals) {
  test::TempDir tmp;
  const Image labels = label_image(64, 48);
  test::write_tiff(tmp.file("in.tif"), labels.view(), test::TiffSpec{});
  // JPEG would change the labels.
  auto r = test::run_cli(
      {"math", "min", tmp.file("in.tif"), tmp.file("in.tif"), tmp.file("out.tif"), "--compression", "jpeg"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("JPEG stores 8-bit samples only"), std::string::npos) << r.err;
  EXPECT_FALSE(std::ifstream(tmp.file("out.tif")).good());
  // 32-bit unsigned is a label image only with one channel.
  Image rgb32(PixelFormat{SampleType::kU32, 3}, Rect(0, 0, 32, 32));
  test::write_tiff(tmp.file("rgb32.tif"), rgb32.view(), test::TiffSpec{});
  r = test::run_cli({"info", tmp.file("rgb32.tif")});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("32-bit samples with 3 samples per pixel"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace tw
