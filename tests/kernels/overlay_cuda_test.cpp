// tilewave overlay on the GPU (kernels/overlay/overlay_cuda.cu) equals the
// CPU bit for bit: gray and RGB images made on the device, labels of every
// integer type on the host or the device, objects touching each other and
// the image's edges, at tile sizes that cut the image unevenly and whole.
// An image on the host stays on the CPU. (The slide's JPEG tiles decoded the
// split way: pipeline_cuda_test's PipelineCudaResidency.OverlayOfAJpegSlide.)
#include <gtest/gtest.h>

#include <random>

#include "tests/kernels/registered_op.hpp"
#include "tests/support/device_source.hpp"
#include "tests/support/gpu.hpp"
#include "tests/support/test_support.hpp"

namespace tw {
namespace {

using test::on_device;

// Rectangles of labels that touch, overlap and cross the edges; values up to
// the type's top.
Image blob_labels(SampleType t, int64_t w, int64_t h, uint64_t seed) {
  Image img(PixelFormat{t, 1}, Rect(0, 0, w, h));
  img.fill_zero();
  std::mt19937_64 rng(seed);
  const uint64_t top = t == SampleType::kU8 ? 255 : t == SampleType::kU16 ? 65535 : 2147483647;
  for (int k = 0; k < 80; ++k) {
    const int64_t x0 = static_cast<int64_t>(rng() % static_cast<uint64_t>(w)) - 5,
                  y0 = static_cast<int64_t>(rng() % static_cast<uint64_t>(h)) - 5;
    const int64_t bw = 2 + static_cast<int64_t>(rng() % 30), bh = 2 + static_cast<int64_t>(rng() % 30);
    const uint64_t v = k == 0 ? top : 1 + rng() % top;
    for (int64_t y = std::max<int64_t>(0, y0); y < std::min(h, y0 + bh); ++y)
      for (int64_t x = std::max<int64_t>(0, x0); x < std::min(w, x0 + bw); ++x) {
        uint8_t* p = img.ptr_bytes(x, y);
        switch (t) {
          case SampleType::kU8:
            *p = static_cast<uint8_t>(v);
            break;
          case SampleType::kU16:
            *reinterpret_cast<uint16_t*>(p) = static_cast<uint16_t>(v);
            break;
          case SampleType::kI32:
            *reinterpret_cast<int32_t*>(p) = static_cast<int32_t>(v);
            break;
          default:
            *reinterpret_cast<uint32_t*>(p) = static_cast<uint32_t>(v);
        }
      }
  }
  return img;
}

TEST(CpuVsCuda, Overlay) {
  TW_REQUIRE_GPU();
  const int64_t w = 301, h = 257;
  uint64_t seed = 40;
  for (int channels : {1, 3}) {
    const Image image = test::random_image(PixelFormat{SampleType::kU8, channels}, w, h, seed++);
    const auto host_image = test::named_source(image, "image.tif");
    const auto dev_image = on_device(image);
    for (SampleType t : {SampleType::kU8, SampleType::kU16, SampleType::kI32, SampleType::kU32}) {
      const Image labels = blob_labels(t, w, h, seed++);
      const auto host_labels = test::named_source(labels, "labels.tif");
      const auto dev_labels = on_device(labels);
      const std::string what = std::to_string(channels) + " channel(s), labels " + sample_name(t);
      for (int64_t tile : {67, 256, 0}) {
        const test::Params color = {{"color", "255,0,128"}};
        const Image cpu = test::run_registered("overlay", {host_image, host_labels}, color, tile).image;
        for (const auto& [lab, where] :
             {std::pair{host_labels, "labels on the host"}, std::pair{dev_labels, "labels on the device"}}) {
          const auto gpu = test::run_registered("overlay", {dev_image, lab}, color, tile, Backend::cuda(0));
          EXPECT_EQ(gpu.values["op_device"], "cuda:0") << what << ", " << where;
          EXPECT_EQ(test::bits_diff(cpu.view(), gpu.image.view()), "") << what << ", " << where << ", tile " << tile;
        }
      }
      const auto host = test::run_registered("overlay", {host_image, dev_labels}, {}, 0, Backend::cuda(0));
      EXPECT_EQ(host.values["op_device"], "cpu") << what << ": an image on the host stays on the CPU";
    }
  }
}

}  // namespace
}  // namespace tw
