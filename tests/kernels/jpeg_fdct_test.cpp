// The split JPEG encode: coefficients from kernels/jpeg_fdct (the GPU
// kernel's arithmetic, run on the CPU) entropy-coded by
// JpegEncoder::encode_coefficients give libjpeg-turbo's own bytes for the
// same pixels, for gray, 4:4:4 and 4:2:0, coarse to lossless-ish quality,
// noise (large coefficients) and flat saturated colours (clamping).
#include "io/codec/jpeg_transform/jpeg_fdct.hpp"

#include <gtest/gtest.h>

#include <cstring>

#include "io/codec/jpeg_codec.hpp"
#include "tests/support/test_support.hpp"

namespace tw {
namespace {

Image saturated(PixelFormat fmt, int64_t t) {
  Image img(fmt, Rect(0, 0, t, t));
  for (int64_t y = 0; y < t; ++y)
    for (int64_t x = 0; x < t; ++x)
      for (int c = 0; c < fmt.channels; ++c)
        img.row_bytes(y)[x * fmt.channels + c] =
            static_cast<uint8_t>(((x / 5 + y / 3 + c) % 3 == 0) ? 255 : ((x + y) % 7 ? 0 : 254));
  return img;
}

TEST(JpegFdct, CoefficientsEncodeToLibjpegBytes) {
  int checked = 0;
  for (int channels : {1, 3})
    for (ChromaSubsampling sub : {ChromaSubsampling::k420, ChromaSubsampling::k444})
      for (int64_t t : {16, 64, 256})
        for (int quality : {5, 30, 75, 90, 100}) {
          if (channels == 1 && sub == ChromaSubsampling::k444) continue;
          const PixelFormat fmt{SampleType::kU8, channels};
          JpegEncoder enc(channels, quality, sub, t, t);
          const JpegCoefLayout layout = enc.coef_layout();
          const std::vector<uint16_t> quant = enc.quant_tables();
          ASSERT_EQ(quant.size(), layout.quant_per_tile());
          for (int content = 0; content < 3; ++content) {
            const Image img = content == 0   ? test::random_image(fmt, t, t, uint64_t(t * 31 + quality))
                              : content == 1 ? test::pattern_image(fmt, t, t, uint64_t(quality))
                                             : saturated(fmt, t);
            std::vector<uint8_t> want, got;
            enc.encode(img.view(), want);
            std::vector<int16_t> coefs(layout.coefs_per_tile());
            jpeg_forward_tile(img.view(), layout, quant.data(), coefs.data());
            enc.encode_coefficients(coefs.data(), got);
            ASSERT_EQ(got, want) << channels << " channels, " << (sub == ChromaSubsampling::k420 ? "4:2:0" : "4:4:4")
                                 << ", tile " << t << ", quality " << quality << ", content " << content;
            ++checked;
          }
        }
  EXPECT_EQ(checked, 3 * 5 * 3 * 3);
}

}  // namespace
}  // namespace tw
