// PNG encode and decode (io/codec/png_codec.hpp): our files read by OpenCV's
// libpng-independent path (cv2.imread) sample for sample, files OpenCV
// writes read back by ours, every pixel format PNG holds at odd sizes, and
// a clear error for what it cannot hold or a damaged file.
#include "io/codec/png_codec.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <fstream>

#include "engine/error.hpp"
#include "tests/support/test_support.hpp"

namespace tw {
namespace {

// python3 SCRIPT check FILE.png FILE.npy | write FILE.npy FILE.png
constexpr const char* kOracle = R"PY(
import sys
import numpy as np
import cv2

mode = sys.argv[1]
if mode == 'check':
    for a, b in zip(sys.argv[2::2], sys.argv[3::2]):
        got = cv2.imread(a, cv2.IMREAD_UNCHANGED)
        want = np.load(b)
        if got.ndim == 3:
            got = np.concatenate([got[..., 2::-1], got[..., 3:]], axis=2)  # BGR(A) -> RGB(A)
        if want.ndim == 3 and want.shape[2] == 1:
            want = want[..., 0]
        assert got.dtype == want.dtype, (a, got.dtype, want.dtype)
        assert got.shape == want.shape, (a, got.shape, want.shape)
        assert (got == want).all(), (a, int(np.abs(got.astype(np.int64) - want).max()))
else:
    a, b = sys.argv[2:4]
    img = np.load(a)
    if img.ndim == 3 and img.shape[2] >= 3:
        img = np.concatenate([img[..., 2::-1], img[..., 3:]], axis=2)
    assert cv2.imwrite(b, img)
)PY";

std::vector<uint8_t> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

class PngCodec : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!test::python_has("cv2")) GTEST_SKIP() << "python3 cv2 missing";
    oracle_ = tmp_.file("png_oracle.py");
    std::ofstream(oracle_) << kOracle;
  }
  test::TempDir tmp_;
  std::string oracle_;
};

TEST_F(PngCodec, OursReadByOpenCvAndBack) {
  const PixelFormat formats[] = {
      kGray8, {SampleType::kU8, 2}, kRgb8, {SampleType::kU8, 4}, kGray16, {SampleType::kU16, 3}, {SampleType::kU16, 4}};
  const std::pair<int64_t, int64_t> sizes[] = {{1, 1}, {1, 37}, {37, 1}, {257, 3}, {100, 61}};
  int n = 0;
  std::vector<std::string> files{"check"};
  for (const PixelFormat fmt : formats) {
    // cv2 reads gray+alpha as BGRA: compared through our own round trip only.
    const bool cv2_reads = fmt.channels != 2;
    for (const auto& [w, h] : sizes) {
      // A window with a stride and an origin of its own.
      const Image big = test::random_image(fmt, w + 5, h + 3, static_cast<uint64_t>(n + 1));
      const ImageView img = big.view().sub(Rect{3, 2, w, h});
      std::vector<uint8_t> bytes;
      encode_png(img, n % 10, bytes);
      const Image back = decode_png(bytes.data(), bytes.size(), "round trip");
      ASSERT_EQ(back.fmt(), fmt);
      EXPECT_EQ(back.rect().w, w);
      EXPECT_EQ(back.rect().h, h);
      Image moved(fmt, Rect{0, 0, w, h});
      for (int64_t y = 0; y < h; ++y) std::memcpy(moved.row_bytes(y), img.row_bytes(y + 2), w * fmt.bytes_per_pixel());
      EXPECT_EQ(test::diff_images(back.view(), moved.view()), "") << fmt.str() << " " << w << "x" << h;
      ++n;
      if (!cv2_reads) continue;
      const std::string png = tmp_.file("o" + std::to_string(n) + ".png"),
                        npy = tmp_.file("o" + std::to_string(n) + ".npy");
      std::ofstream(png, std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()), bytes.size());
      test::save_npy(npy, moved.view());
      files.push_back(png);
      files.push_back(npy);
    }
  }
  // One Python for all files (its start costs most of the time).
  const auto c = test::run_python(oracle_, files);
  EXPECT_EQ(c.exit_code, 0) << c.err;
}

TEST_F(PngCodec, ReadsWhatOpenCvWrites) {
  for (const PixelFormat fmt : {kRgb8, PixelFormat{SampleType::kU16, 3}}) {
    const Image img = test::pattern_image(fmt, 131, 67, 5);
    const std::string npy = tmp_.file("w.npy"), png = tmp_.file("w.png");
    test::save_npy(npy, img.view());
    ASSERT_EQ(test::run_python(oracle_, {"write", npy, png}).exit_code, 0);
    const std::vector<uint8_t> bytes = read_file(png);
    const Image back = decode_png(bytes.data(), bytes.size(), png);
    EXPECT_EQ(test::diff_images(back.view(), img.view()), "") << fmt.str();
  }
}

TEST(PngCodecBadInput, ClearErrors) {
  std::vector<uint8_t> out;
  const Image f = test::random_image({SampleType::kF32, 1}, 4, 4, 1);
  EXPECT_THROW(encode_png(f.view(), -1, out), InputError);
  const Image five = test::random_image({SampleType::kU8, 5}, 4, 4, 1);
  EXPECT_THROW(encode_png(five.view(), -1, out), InputError);
  EXPECT_FALSE(png_can_store({SampleType::kU32, 1}));
  encode_png(test::random_image(kRgb8, 40, 40, 2).view(), 6, out);
  for (size_t cut : {size_t{0}, size_t{7}, size_t{40}, out.size() / 2, out.size() - 13}) {
    try {
      decode_png(out.data(), cut, "cut.png");
      ADD_FAILURE() << "a PNG cut at " << cut << " bytes decoded";
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find("cut.png"), std::string::npos) << e.what();
    }
  }
  const std::vector<uint8_t> junk(100, 0x55);
  EXPECT_THROW(decode_png(junk.data(), junk.size(), "junk"), InputError);
}

}  // namespace
}  // namespace tw
