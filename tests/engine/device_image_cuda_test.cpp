// Images in device memory that the caller owns (engine/cuda/device_image.hpp,
// the Python binding's CuPy and DLPack arrays): a chain of GPU ops reads one
// where it lies and computes into another with no byte through the host,
// bit-equal to the CPU; whole-image ops and host readers get the pixels
// copied down, also equal; rows may lie further apart than their length.
// Uses only the engine's API (no CUDA header): it builds in every build.
#include <gtest/gtest.h>

#include "engine/byte_counters.hpp"
#include "engine/cuda/device_image.hpp"
#include "engine/memory_source.hpp"
#include "engine/op_registry.hpp"
#include "jobs/op_runner.hpp"
#include "tests/support/gpu.hpp"
#include "tests/support/test_support.hpp"

namespace tw {
namespace {

struct DeviceCopy {
  std::shared_ptr<uint8_t> memory;
  DeviceImage image;
};

Image copy_of(const Image& img) {
  Image c(img.fmt(), img.rect());
  copy_overlap(img.view(), c.view());
  return c;
}

// img in device memory, rows `extra` bytes further apart than their length
// (copied up by the engine's own host path, so that this test needs no CUDA
// header and builds everywhere; it skips without a GPU).
DeviceCopy upload(const Image& img, size_t extra) {
  DeviceCopy d;
  d.image.fmt = img.fmt();
  d.image.width = img.rect().w, d.image.height = img.rect().h;
  d.image.pitch = static_cast<size_t>(img.rect().w) * img.fmt().bytes_per_pixel() + extra;
  d.memory = allocate_device_bytes(0, d.image.pitch * static_cast<size_t>(d.image.height));
  d.image.data = d.memory.get();
  EXPECT_FALSE(compute_into_device(MemorySource(copy_of(img)), d.image)) << "a host source goes up through the host";
  return d;
}

Image download(const DeviceImage& d) {
  const SourcePtr s = make_device_image_source(d, nullptr, "device");
  return s->read(0, s->level(0).bounds());
}

SourcePtr run_op(const std::string& name, SourcePtr in, const std::vector<std::pair<std::string, std::string>>& params,
                 Backend backend) {
  const OpDef* op = op_registry().find(name);
  EXPECT_NE(op, nullptr) << name;
  OpParams p = op->params_for();
  for (const auto& [k, v] : params) p.set(k, v);
  ExecContext ctx;
  ctx.backend = backend;
  ctx.tile = 128;
  return run_registered_op(*op, {std::move(in)}, p, ctx).image;
}

// gaussian -> erode -> invert: a separable, a neighbourhood and a pixel op.
SourcePtr chain(SourcePtr in, Backend b) {
  SourcePtr g = run_op("gaussian", std::move(in), {{"sigma", "2"}}, b);
  SourcePtr e = run_op("erode", std::move(g), {{"radius", "2"}}, b);
  return run_op("invert", std::move(e), {}, b);
}

Image read_all(const TileSource& s) {
  return s.read(0, s.level(0).bounds());
}

TEST(DeviceImage, AGpuChainFromDeviceMemoryIntoDeviceMemoryMovesNothingThroughTheHost) {
  TW_REQUIRE_GPU();
  for (const auto& [w, h] : {std::pair<int64_t, int64_t>{301, 257}, {2500, 2100}, {1, 1}, {4097, 3}}) {
    SCOPED_TRACE(std::to_string(w) + "x" + std::to_string(h));
    const Image img = test::pattern_image({SampleType::kU8, 1}, w, h, 3);
    const Image want = read_all(*chain(std::make_shared<MemorySource>(copy_of(img)), Backend{}));
    const DeviceCopy in = upload(img, 96);
    const SourcePtr result = chain(make_device_image_source(in.image, in.memory, "device"), Backend::cuda(0));
    DeviceCopy out = upload(Image({SampleType::kU8, 1}, Rect(0, 0, w, h)), 0);
    const ByteCounts before = process_byte_counts();
    EXPECT_TRUE(compute_into_device(*result, out.image));
    const ByteCounts moved = process_byte_counts() - before;
    EXPECT_EQ(moved.uploaded, 0u);
    EXPECT_EQ(moved.downloaded, 0u);
    EXPECT_EQ(test::diff_images(download(out.image).view(), want.view()), "");
  }
}

TEST(DeviceImage, WholeImageOpsAndHostReadersGetThePixelsCopiedDown) {
  TW_REQUIRE_GPU();
  const Image img = test::pattern_image({SampleType::kU8, 3}, 611, 409, 5);
  const DeviceCopy in = upload(img, 13);
  const SourcePtr src = make_device_image_source(in.image, in.memory, "device");
  // A read with a halo reaching outside, as a CPU op's is: the border rule applies.
  const Rect r(-5, 400, 40, 20);
  const Border b{BorderMode::kReflect101, 0};
  EXPECT_EQ(test::diff_images(src->read(0, r, b).view(), MemorySource(copy_of(img)).read(0, r, b).view()), "");
  // gray, then a whole-image op (Otsu's threshold reads every pixel first).
  const SourcePtr gray = run_op("gray", src, {}, Backend::cuda(0));
  const SourcePtr mask = run_op("threshold", gray, {{"otsu", "1"}}, Backend::cuda(0));
  const SourcePtr want =
      run_op("threshold", run_op("gray", std::make_shared<MemorySource>(copy_of(img)), {}, Backend{}), {{"otsu", "1"}},
             Backend{});
  DeviceCopy out = upload(Image({SampleType::kU8, 1}, Rect(0, 0, 611, 409)), 0);
  compute_into_device(*mask, out.image);
  EXPECT_EQ(test::diff_images(download(out.image).view(), read_all(*want).view()), "");
}

// A device image brought down band by band through the two pinned buffers:
// every band in order, the last one short, rows wider than their length on
// the device; each band's pixels are the image's, and the bytes are counted.
TEST(DeviceImage, BandsComeDownInOrder) {
  TW_REQUIRE_GPU();
  for (PixelFormat fmt : {kGray8, kGray16, kRgb8})
    for (int64_t rows : {1, 7, 64, 1000}) {
      const Image img = test::pattern_image(fmt, 301, 257, 3);
      const DeviceCopy d = upload(img, 40);
      Image back(fmt, img.rect());
      int64_t next = 0;
      const ByteCounts before = process_byte_counts();
      for_each_band_from_device(d.image, rows, [&](const ImageView& band) {
        EXPECT_EQ(band.rect.y, next);
        EXPECT_EQ(band.rect.x, 0);
        EXPECT_EQ(band.rect.w, 301);
        EXPECT_EQ(band.rect.h, std::min<int64_t>(rows, 257 - next));
        next = band.rect.y1();
        copy_overlap(band, back.view());
      });
      EXPECT_EQ(next, 257);
      EXPECT_EQ(test::diff_images(back.view(), img.view()), "") << fmt.str() << " rows " << rows;
      EXPECT_EQ((process_byte_counts() - before).downloaded, static_cast<uint64_t>(301 * 257) * fmt.bytes_per_pixel());
    }
}

TEST(DeviceImage, HostMemoryIsNotADevicePointer) {
  TW_REQUIRE_GPU();
  std::vector<uint8_t> host(64);
  EXPECT_EQ(device_of_pointer(host.data()), -1);
  const DeviceCopy d = upload(Image({SampleType::kU8, 1}, Rect(0, 0, 8, 8)), 0);
  EXPECT_EQ(device_of_pointer(d.image.data), 0);
}

}  // namespace
}  // namespace tw
