// tilewave overlay IMAGE LABELS OUT (kernels/overlay): outlines against a
// plain loop over the whole image, for every tile size (the labels' halo),
// gray and RGB images, and the errors.
#include <gtest/gtest.h>
#include <tiffio.h>

#include <fstream>
#include <random>

#include "tests/support/test_support.hpp"

namespace tw {
namespace {

// Blobs of labels (rectangles that touch and overlap, later ones on top).
Image blob_labels(int64_t w, int64_t h, uint64_t seed) {
  Image img(PixelFormat{SampleType::kU32, 1}, Rect(0, 0, w, h));
  for (int64_t y = 0; y < h; ++y)
    for (int64_t x = 0; x < w; ++x) img.row<uint32_t>(y)[x] = 0;
  std::mt19937_64 rng(seed);
  for (uint32_t k = 1; k <= 60; ++k) {
    const int64_t x0 = static_cast<int64_t>(rng() % static_cast<uint64_t>(w)),
                  y0 = static_cast<int64_t>(rng() % static_cast<uint64_t>(h));
    const int64_t bw = 3 + static_cast<int64_t>(rng() % 25), bh = 3 + static_cast<int64_t>(rng() % 25);
    for (int64_t y = y0; y < std::min(h, y0 + bh); ++y)
      for (int64_t x = x0; x < std::min(w, x0 + bw); ++x) img.row<uint32_t>(y)[x] = k * 1000003u;
  }
  return img;
}

Image reference_overlay(const Image& image, const Image& labels, uint8_t r, uint8_t g, uint8_t b) {
  const Rect rc = image.rect();
  Image out(kRgb8, rc);
  auto at = [&](int64_t x, int64_t y) -> uint32_t {
    return x < 0 || y < 0 || x >= rc.w || y >= rc.h ? 0u : labels.row<uint32_t>(y)[x];
  };
  const int ch = image.fmt().channels;
  for (int64_t y = 0; y < rc.h; ++y)
    for (int64_t x = 0; x < rc.w; ++x) {
      const uint32_t v = at(x, y);
      const bool edge = v && (at(x - 1, y) != v || at(x + 1, y) != v || at(x, y - 1) != v || at(x, y + 1) != v);
      uint8_t* o = out.row_bytes(y) + 3 * x;
      const uint8_t* in = image.row_bytes(y) + ch * x;
      for (int c = 0; c < 3; ++c) o[c] = edge ? (c == 0 ? r : c == 1 ? g : b) : in[ch == 1 ? 0 : c];
    }
  return out;
}

TEST(Overlay, MatchesAPlainLoopForEveryTileSize) {
  test::TempDir tmp;
  const int64_t w = 203, h = 171;
  const Image labels = blob_labels(w, h, 7);
  test::write_tiff(tmp.file("labels.tif"), labels.view(), test::TiffSpec{});
  for (int channels : {1, 3}) {
    const Image image = test::random_image(PixelFormat{SampleType::kU8, channels}, w, h, 11);
    test::write_tiff(tmp.file("image.tif"), image.view(), test::TiffSpec{});
    const Image expect = reference_overlay(image, labels, 255, 0, 128);
    for (const char* tile : {"16", "48", "256"}) {
      const auto r = test::run_cli({"overlay", tmp.file("image.tif"), tmp.file("labels.tif"), tmp.file("out.tif"),
                                    "--color", "255,0,128", "--tile", tile, "--compression", "deflate"});
      ASSERT_EQ(r.exit_code, 0) << r.err;
      const Image got = test::read_tiff_libtiff(tmp.file("out.tif"), 0);
      EXPECT_EQ(test::diff_images(got.view(), expect.view()), "") << channels << " channel(s), tile " << tile;
    }
  }
}

TEST(Overlay, DefaultsToJpegGreen) {
  test::TempDir tmp;
  const Image labels = blob_labels(96, 80, 3);
  const Image image = test::pattern_image(kRgb8, 96, 80, 5);
  test::write_tiff(tmp.file("labels.tif"), labels.view(), test::TiffSpec{});
  test::write_tiff(tmp.file("image.tif"), image.view(), test::TiffSpec{});
  const auto r = test::run_cli({"overlay", tmp.file("image.tif"), tmp.file("labels.tif"), tmp.file("out.tif")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(test::read_tiff_tags(tmp.file("out.tif"), 0).compression, COMPRESSION_JPEG);
  // Outline pixels come out green through JPEG's 4:2:0 (most of them: thin
  // lines lose some chroma).
  const Image got = test::read_tiff_libtiff(tmp.file("out.tif"), 0);
  const Image expect = reference_overlay(image, labels, 0, 255, 0);
  int64_t outline = 0, green = 0;
  for (int64_t y = 0; y < 80; ++y)
    for (int64_t x = 0; x < 96; ++x) {
      const uint8_t* e = expect.row_bytes(y) + 3 * x;
      const uint8_t* g = got.row_bytes(y) + 3 * x;
      if (e[0] != 0 || e[1] != 255 || e[2] != 0) continue;
      ++outline;
      green += g[1] > g[0] + 40 && g[1] > g[2] + 40;
    }
  ASSERT_GT(outline, 100);
  EXPECT_GT(green, outline * 8 / 10);
}

TEST(Overlay, BadInput) {
  test::TempDir tmp;
  const Image labels = blob_labels(64, 64, 1);
  test::write_tiff(tmp.file("labels.tif"), labels.view(), test::TiffSpec{});
  test::write_tiff(tmp.file("small.tif"), test::random_image(kRgb8, 32, 64, 2).view(), test::TiffSpec{});
  test::write_tiff(tmp.file("image.tif"), test::random_image(kRgb8, 64, 64, 2).view(), test::TiffSpec{});
  Image f(PixelFormat{SampleType::kF32, 1}, Rect(0, 0, 64, 64));
  test::write_tiff(tmp.file("float.tif"), f.view(), test::TiffSpec{});
  struct Case {
    std::vector<std::string> args;
    std::string says;
  } cases[] = {
      {{"overlay", tmp.file("small.tif"), tmp.file("labels.tif"), tmp.file("o.tif")}, "both images must have one size"},
      {{"overlay", tmp.file("image.tif"), tmp.file("float.tif"), tmp.file("o.tif")}, "one channel of integers"},
      {{"overlay", tmp.file("labels.tif"), tmp.file("labels.tif"), tmp.file("o.tif")}, "8-bit gray or RGB"},
      {{"overlay", tmp.file("image.tif"), tmp.file("labels.tif"), tmp.file("o.tif"), "--color", "0,300,0"}, "R,G,B"},
      {{"overlay", tmp.file("image.tif"), tmp.file("labels.tif"), tmp.file("o.tif"), "--color", "1,2"}, "R,G,B"},
  };
  for (const auto& c : cases) {
    const auto r = test::run_cli(c.args);
    EXPECT_NE(r.exit_code, 0) << c.says;
    EXPECT_NE(r.err.find(c.says), std::string::npos) << r.err;
    EXPECT_FALSE(std::ifstream(tmp.file("o.tif")).good());
  }
}

}  // namespace
}  // namespace tw
