// A slide split over GPUs (jobs/pyramid/banded_pyramid.hpp): each share's
// cascade on the device starts at its ghost rows like the CPU's, so rank
// 0's sink sees the writes of a single CPU pass, in its order — with the
// one GPU listed two and three times (as --device cuda:0,0 does), and
// through the CLI, where --device cuda:0,0 writes the file --device cpu
// writes. Skipped without a CUDA device.
#include <gtest/gtest.h>

#include <fstream>

#include "engine/memory_source.hpp"
#include "engine/ranks/local_ranks.hpp"
#include "jobs/pyramid/banded_pyramid.hpp"
#include "tests/support/gpu.hpp"
#include "tests/support/recording_sink.hpp"
#include "tests/support/test_support.hpp"

namespace tw {
namespace {

void check_on_gpus(PixelFormat fmt, int64_t w, int64_t h, int64_t tile, int ranks) {
  const Image img = test::pattern_image(fmt, w, h, static_cast<uint64_t>(w + 3 * h));
  PyramidJobOptions opt;
  opt.tile = tile;
  opt.min_size = 1;
  opt.memory = size_t{256} << 20;
  PyramidStats st;
  EXPECT_EQ(test::compare_split(
                img, opt, ranks,
                [](PyramidJobOptions& o) {
                  o.backend = Backend::cuda(0);
                  o.gpu_memory = size_t{256} << 20;
                },
                &st),
            "")
      << fmt.str() << " " << w << "x" << h << " ranks " << ranks;
  EXPECT_EQ(st.backend, "cuda:0");
}

TEST(BandedPyramidCuda, SharesOnTheGpuWriteWhatOneCpuPassWrites) {
  TW_REQUIRE_GPU();
  check_on_gpus(kRgb8, 333, 2701, 16, 2);
  check_on_gpus(kGray16, 203, 2049, 32, 3);
  check_on_gpus(kGray8, 1000, 5000, 64, 2);
}

TEST(BandedPyramidCuda, CliDeviceListWritesTheCpuFile) {
  TW_REQUIRE_GPU();
  test::TempDir tmp;
  test::run({"mkdir", tmp.file("cpu"), tmp.file("gpu")});
  // Same names in two folders: OME-XML names the image after its file.
  for (const std::string out : {"a.tif", "b.ome.tif"}) {
    const auto c = test::run_cli({"pyramid", "synthetic:3000x9000", tmp.file("cpu/" + out), "--device", "cpu"});
    ASSERT_EQ(c.exit_code, 0) << c.err;
    const auto g = test::run_cli({"pyramid", "synthetic:3000x9000", tmp.file("gpu/" + out), "--device", "cuda:0,0"});
    ASSERT_EQ(g.exit_code, 0) << g.err;
    EXPECT_TRUE(test::file_bytes(tmp.file("cpu/" + out)) == test::file_bytes(tmp.file("gpu/" + out))) << out;
  }
  const auto r = test::run_cli({"run", "synthetic:2000x6000", tmp.file("run-gpu.tif"), "filter gray",
                                "filter gaussian --sigma 2", "--device", "cuda:all"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto rc = test::run_cli({"run", "synthetic:2000x6000", tmp.file("run-cpu.tif"), "filter gray",
                                 "filter gaussian --sigma 2", "--device", "cpu"});
  ASSERT_EQ(rc.exit_code, 0) << rc.err;
  EXPECT_TRUE(test::file_bytes(tmp.file("run-gpu.tif")) == test::file_bytes(tmp.file("run-cpu.tif")));
  const auto bad = test::run_cli({"pyramid", "synthetic:300x300", tmp.file("x.tif"), "--device", "cuda:0,99"});
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_NE(bad.err.find("only"), std::string::npos) << bad.err;
}

}  // namespace
}  // namespace tw
