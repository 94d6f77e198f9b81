// REDUCE against a direct 5x5 loop written from the definition, against
// scipy (random and real microscopy content), and the streaming cascade
// against whole-image REDUCE for every band height and odd size.
#include "kernels/pyramid_reduce/pyramid_reduce.hpp"

#include <gtest/gtest.h>

#include "engine/border.hpp"
#include "engine/image_pool.hpp"
#include "jobs/pyramid/cascade.hpp"
#include "tests/support/test_support.hpp"

namespace tw {
namespace {

// Seed 004, eq. 1, with the mirrored border: the non-separable 5x5 sum.
template <class T>
Image naive_reduce_t(const Image& src) {
  static const int w[5] = {1, 4, 6, 4, 1};
  const int64_t W = src.rect().w, H = src.rect().h, C = src.fmt().channels;
  Image out(src.fmt(), Rect(0, 0, (W + 1) / 2, (H + 1) / 2));
  for (int64_t y = 0; y < out.rect().h; ++y)
    for (int64_t x = 0; x < out.rect().w; ++x)
      for (int64_t c = 0; c < C; ++c) {
        uint64_t s = 0;
        for (int m = -2; m <= 2; ++m)
          for (int n = -2; n <= 2; ++n) {
            const int64_t sy = border_index(2 * y + m, H, BorderMode::kReflect101);
            const int64_t sx = border_index(2 * x + n, W, BorderMode::kReflect101);
            s += static_cast<uint64_t>(w[m + 2] * w[n + 2]) * src.ptr<T>(sx, sy)[c];
          }
        out.ptr<T>(x, y)[c] = static_cast<T>((s + 128) >> 8);
      }
  return out;
}

Image naive_reduce(const Image& src) {
  return src.fmt().type == SampleType::kU8 ? naive_reduce_t<uint8_t>(src) : naive_reduce_t<uint16_t>(src);
}

TEST(PyramidReduce, ReferenceTiny) {
  // A flat image stays flat; a single pixel survives unchanged.
  Image one(kGray8, Rect(0, 0, 1, 1));
  one.ptr<uint8_t>(0, 0)[0] = 200;
  Image r = reduce_image(one);
  EXPECT_EQ(r.rect(), Rect(0, 0, 1, 1));
  EXPECT_EQ(r.ptr<uint8_t>(0, 0)[0], 200);
  // 3x1 row [0, 255, 0]: out(0) = (6*0 + 4*255*2 + 1*0*2) * 16 / 256 rows...
  // vertically the kernel sums to 16, so out(0) = (16 * (6*0 + 8*255 + 2*0) + 128) >> 8 = 128
  Image row(kGray8, Rect(0, 0, 3, 1));
  row.ptr<uint8_t>(0, 0)[0] = 0, row.ptr<uint8_t>(1, 0)[0] = 255, row.ptr<uint8_t>(2, 0)[0] = 0;
  r = reduce_image(row);
  ASSERT_EQ(r.rect().w, 2);
  EXPECT_EQ(r.ptr<uint8_t>(0, 0)[0], 128);
  // out(1) centred on x=2: columns 0,1,2,1(=3),0(=4): 1*0 + 4*255 + 6*0 + 4*255 + 1*0 = 2040 -> 128
  EXPECT_EQ(r.ptr<uint8_t>(1, 0)[0], 128);
}

TEST(PyramidReduce, MatchesDirectLoopAllShapes) {
  const int64_t sizes[][2] = {{1, 1}, {1, 7}, {7, 1}, {2, 2}, {3, 5}, {4, 4}, {17, 33}, {64, 64}, {257, 129}, {2, 301}};
  for (PixelFormat fmt : {kGray8, kRgb8, PixelFormat{SampleType::kU8, 2}, PixelFormat{SampleType::kU8, 4}, kGray16,
                          PixelFormat{SampleType::kU16, 3}}) {
    for (auto& s : sizes) {
      const Image src = test::random_image(fmt, s[0], s[1], static_cast<uint64_t>(s[0] * 1000 + s[1]));
      const Image got = reduce_image(src), want = naive_reduce(src);
      EXPECT_EQ(test::diff_images(got.view(), want.view()), "") << fmt.str() << " " << s[0] << "x" << s[1];
    }
  }
}

// u32 (labels) by nearest: the pixel at (2X, 2Y), for every pixel size the
// row copy has a fixed-size path for (1 to 4 channels) and odd sizes, with
// the row's output starting at odd and even columns of a held span.
TEST(PyramidReduce, LabelsTakeTheEvenPixel) {
  for (int ch = 1; ch <= 5; ++ch) {
    const PixelFormat fmt{SampleType::kU32, ch};
    for (auto [w, h] : {std::pair<int64_t, int64_t>{1, 1}, {7, 3}, {64, 65}, {301, 2}}) {
      const Image src = test::random_image(fmt, w, h, static_cast<uint64_t>(w * 10 + ch));
      const Image got = reduce_image(src);
      ASSERT_EQ(got.rect(), Rect(0, 0, (w + 1) / 2, (h + 1) / 2));
      for (int64_t y = 0; y < got.rect().h; ++y)
        for (int64_t x = 0; x < got.rect().w; ++x)
          for (int c = 0; c < ch; ++c)
            ASSERT_EQ(got.ptr<uint32_t>(x, y)[c], src.ptr<uint32_t>(2 * x, 2 * y)[c])
                << fmt.str() << " " << x << "," << y;
      // Part of a row: output columns 3.. from input columns held from 5.
      if (w < 64) continue;
      const int64_t row = std::min<int64_t>(6, h - 1);
      const uint8_t* rows[5];
      for (int i = 0; i < 5; ++i) rows[i] = src.view().ptr_bytes(5, row);
      std::vector<uint8_t> out(20 * fmt.bytes_per_pixel());
      std::vector<uint32_t> scratch;
      reduce_row(fmt, rows, 5, w - 5, w, 3, 20, out.data(), scratch);
      for (int64_t x = 0; x < 20; ++x)
        for (int c = 0; c < ch; ++c)
          ASSERT_EQ(reinterpret_cast<const uint32_t*>(out.data())[x * ch + c], src.ptr<uint32_t>(2 * (3 + x), row)[c]);
    }
  }
}

TEST(PyramidReduce, ExtremeValues) {
  for (PixelFormat fmt : {kRgb8, kGray16}) {
    Image src(fmt, Rect(0, 0, 37, 23));
    const size_t n = src.view().row_length_bytes();
    for (int64_t y = 0; y < 23; ++y) std::memset(src.row_bytes(y), 0xff, n);
    Image r = reduce_image(src);
    EXPECT_EQ(test::diff_images(r.view(), naive_reduce(src).view()), "");
    // All-max stays all-max: no overflow in the 16-bit accumulators.
    if (fmt.type == SampleType::kU8)
      EXPECT_EQ(r.ptr<uint8_t>(5, 5)[1], 255);
    else
      EXPECT_EQ(r.ptr<uint16_t>(5, 5)[0], 65535);
  }
}

// scipy.ndimage (float64 correlate1d, mode='mirror') as the independent oracle.
TEST(PyramidReduce, MatchesScipy) {
  if (!test::python_has("scipy.ndimage")) GTEST_SKIP() << "scipy not available";
  test::TempDir tmp;
  for (PixelFormat fmt : {kRgb8, kGray16}) {
    const Image src = test::random_image(fmt, 211, 97, 7);
    test::save_npy(tmp.file("in.npy"), src.view());
    const auto r = test::run_python(test::oracle("reduce_oracle.py"), {tmp.file("in.npy"), tmp.file("out.npy"), "3"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const Image want = test::load_npy(tmp.file("out.npy"));
    const Image got = reduce_image(reduce_image(reduce_image(src)));
    EXPECT_EQ(test::diff_images(got.view(), want.view()), "") << fmt.str();
  }
}

TEST(PyramidReduce, MatchesScipyOnMicroscopy) {
  if (!test::python_has("skimage.data")) GTEST_SKIP() << "scikit-image not available";
  test::TempDir tmp;
  const auto r =
      test::run_python(test::oracle("reduce_oracle.py"), {"--ihc", tmp.file("in.npy"), tmp.file("out.npy"), "2"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const Image src = test::load_npy(tmp.file("in.npy"));
  const Image want = test::load_npy(tmp.file("out.npy"));
  EXPECT_EQ(test::diff_images(reduce_image(reduce_image(src)).view(), want.view()), "");
}

// Streams an image through the cascade in bands of `chunk` rows and checks
// every level against repeated whole-image REDUCE.
void check_cascade(PixelFormat fmt, int64_t w, int64_t h, int64_t band_rows, int64_t chunk, int64_t min_size) {
  const Image src = test::pattern_image(fmt, w, h, 99);
  const auto sizes = pyramid_level_sizes(w, h, min_size);
  std::vector<CascadeLevel> levels;
  for (auto [lw, lh] : sizes) levels.push_back({lw, lh, 0, lw});
  ImagePool pool;
  PyramidCascade cascade(fmt, levels, band_rows, pool);
  std::vector<Image> got;
  for (auto [lw, lh] : sizes) got.emplace_back(fmt, Rect(0, 0, lw, lh));
  std::vector<int64_t> next_row(sizes.size(), 0);
  for (int64_t y = 0; y < h; y += chunk) {
    auto rows = std::make_shared<Image>(fmt, Rect(0, y, w, std::min(chunk, h - y)));
    copy_overlap(src.view(), rows->view());
    cascade.push(rows, [&](int k, const std::shared_ptr<const Image>& band) {
      ASSERT_EQ(band->rect().y, next_row[k]) << "bands of level " << k << " out of order";
      ASSERT_TRUE(band->rect().h == band_rows || band->rect().y1() == sizes[k].second);
      next_row[k] = band->rect().y1();
      copy_overlap(band->view(), got[k].view());
    });
  }
  Image want = reduce_image(src);
  for (size_t k = 1; k < sizes.size(); ++k) {
    EXPECT_EQ(next_row[k], sizes[k].second) << "level " << k << " incomplete";
    EXPECT_EQ(test::diff_images(got[k].view(), want.view()), "")
        << fmt.str() << " " << w << "x" << h << " band " << band_rows << " chunk " << chunk << " level " << k;
    if (k + 1 < sizes.size()) want = reduce_image(want);
  }
}

TEST(PyramidCascade, TileInvariance) {
  for (int64_t band : {16, 64, 67, 256})
    for (int64_t chunk : {int64_t{1}, int64_t{7}, band}) check_cascade(kRgb8, 300, 517, band, chunk, 4);
}

TEST(PyramidCascade, WorstCases) {
  check_cascade(kGray8, 1, 1000, 16, 16, 1);      // one pixel wide
  check_cascade(kGray8, 1000, 1, 16, 1, 1);       // one pixel high
  check_cascade(kGray16, 257, 257, 256, 256, 1);  // just above a tile multiple
  check_cascade(kRgb8, 3, 5, 16, 2, 1);
  check_cascade(PixelFormat{SampleType::kU8, 4}, 129, 65, 32, 5, 2);
}

TEST(PyramidReduce, LevelSizes) {
  auto s = pyramid_level_sizes(1000, 10, 256);
  ASSERT_EQ(s.size(), 3u);  // 1000x10 -> 500x5 -> 250x3
  EXPECT_EQ(s[2], std::make_pair(int64_t{250}, int64_t{3}));
  EXPECT_EQ(pyramid_level_sizes(256, 256, 256).size(), 1u);
  EXPECT_EQ(pyramid_level_sizes(257, 1, 256).size(), 2u);
  EXPECT_EQ(pyramid_level_sizes(1, 1, 1).size(), 1u);
}

}  // namespace
}  // namespace tw
