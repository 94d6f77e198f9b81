// CpuVsCuda for images of more than four channels (multiplex slides): the
// CUDA cascade's pyramid (reduce_any_channels, one channel per block) equals
// the CPU's tile for tile, byte for byte, at odd sizes, with stripes under
// a small device budget, and through the CLI on a TIFF of 8 planar u16
// channels. Label `gpu`; skipped where there is no CUDA device.
#include <gtest/gtest.h>

#include "engine/memory_source.hpp"
#include "io/tiff/tiff_source.hpp"
#include "jobs/pyramid/pyramid_job.hpp"
#include "tests/support/gpu.hpp"
#include "tests/support/memory_sink.hpp"
#include "tests/support/test_support.hpp"

namespace tw {
namespace {

void compare_backends(const TileSource& src, int64_t tile, size_t gpu_memory, const std::string& what) {
  const PixelFormat fmt = src.info().fmt;
  test::MemorySink cpu_sink(fmt, tile), gpu_sink(fmt, tile);
  PyramidJobOptions opt;
  opt.tile = tile;
  opt.min_size = 1;
  opt.memory = size_t{512} << 20;
  run_pyramid(src, cpu_sink, opt);
  opt.backend.kind = Backend::Kind::kCuda;
  opt.gpu_memory = gpu_memory;
  const PyramidStats st = run_pyramid(src, gpu_sink, opt);
  EXPECT_GT(st.kernel_s, 0) << what << ": the GPU did not run";
  ASSERT_EQ(cpu_sink.tile_count(), gpu_sink.tile_count()) << what;
  int reported = 0;
  for (const auto& [key, bytes] : cpu_sink.tiles()) {
    auto it = gpu_sink.tiles().find(key);
    ASSERT_NE(it, gpu_sink.tiles().end()) << what;
    if (it->second != bytes && reported++ < 3) {
      const auto [level, tx, ty] = key;
      size_t i = 0;
      while (i < bytes.size() && bytes[i] == it->second[i]) ++i;
      const size_t px = i / fmt.bytes_per_pixel();
      ADD_FAILURE() << what << ": level " << level << " tile (" << tx << ", " << ty << ") differs first at pixel ("
                    << px % tile << ", " << px / tile << ") channel "
                    << (i % fmt.bytes_per_pixel()) / sample_bytes(fmt.type) << ": cpu " << int(bytes[i]) << " gpu "
                    << int(it->second[i]);
    }
  }
}

TEST(ReduceChannelsCuda, CpuVsCudaManyChannels) {
  TW_REQUIRE_GPU();
  for (PixelFormat fmt : {PixelFormat{SampleType::kU8, 5}, PixelFormat{SampleType::kU8, 40},
                          PixelFormat{SampleType::kU16, 8}, PixelFormat{SampleType::kU16, 64}})
    for (auto [w, h] : {std::pair<int64_t, int64_t>{1, 1}, {1, 300}, {300, 1}, {257, 129}, {1000, 613}}) {
      MemorySource src(test::random_image(fmt, w, h, uint64_t(w * 7 + h)));
      compare_backends(src, 64, 0, fmt.str() + " " + std::to_string(w) + "x" + std::to_string(h));
    }
}

// A device budget of a few bands: stripes, carries between bands.
TEST(ReduceChannelsCuda, StripesUnderASmallDeviceBudget) {
  TW_REQUIRE_GPU();
  const PixelFormat fmt{SampleType::kU16, 12};
  MemorySource src(test::random_image(fmt, 3001, 517, 3));
  compare_backends(src, 64, size_t{24} << 20, "u16 x12 3001x517, 24 MiB of device memory");
}

TEST(ReduceChannelsCuda, CliPyramidOfPlanarTiff) {
  TW_REQUIRE_GPU();
  test::TempDir tmp;
  const Image img = test::random_image(PixelFormat{SampleType::kU16, 8}, 1000, 777, 9);
  test::TiffSpec spec;
  spec.tile_w = spec.tile_h = 64, spec.planar_separate = true, spec.compression = 8;
  test::write_tiff(tmp.file("in.tif"), img.view(), spec);
  for (const char* dev : {"cpu", "cuda"}) {
    const auto r = test::run_cli({"pyramid", tmp.file("in.tif"), tmp.file(std::string(dev) + ".tif"), "--device", dev,
                                  "--compression", "deflate"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  TiffSource a(tmp.file("cpu.tif")), b(tmp.file("cuda.tif"));
  ASSERT_EQ(a.level_count(), b.level_count());
  for (int l = 0; l < a.level_count(); ++l)
    EXPECT_EQ(test::diff_images(a.read(l, a.level(l).bounds()).view(), b.read(l, b.level(l).bounds()).view()), "")
        << "level " << l;
}

}  // namespace
}  // namespace tw
