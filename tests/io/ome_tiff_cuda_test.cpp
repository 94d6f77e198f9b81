// OME-TIFF written with --device cuda: the GPU computes the cascade and, for
// JPEG levels, the DCT coefficients that the OME-TIFF sink only entropy-codes
// (its JpegCoefSink facet); the tiles must be the CPU run's byte for byte.
// Skipped without a CUDA device.
#include <gtest/gtest.h>

#include <fstream>

#include "tests/support/gpu.hpp"
#include "tests/support/test_support.hpp"

namespace tw {
namespace {

TEST(OmeTiffCuda, TilesEqualTheCpuRun) {
  TW_REQUIRE_GPU();
  if (!test::python_has("tifffile")) GTEST_SKIP() << "tifffile missing";
  test::TempDir tmp;
  struct Case {
    const char* src;
    const char* compression;
  } cases[] = {{"synthetic:1500x1100", "jpeg"}, {"synthetic:1031x517,gray,16bit", "deflate"}};
  for (const Case& c : cases) {
    for (const char* device : {"cpu", "cuda"}) {
      const auto r = test::run_cli({"pyramid", c.src, tmp.file(std::string(device) + ".ome.tif"), "--device", device,
                                    "--compression", c.compression, "--min-size", "32"});
      ASSERT_EQ(r.exit_code, 0) << r.err;
    }
    // Every tile of every level and plane, in the series' order.
    std::ofstream py(tmp.file("same.py"));
    py << "import sys, tifffile\n"
          "def tiles(p):\n"
          "    with tifffile.TiffFile(p) as t:\n"
          "        out = []\n"
          "        for lv in t.series[0].levels:\n"
          "            for page in lv.pages:\n"
          "                for o, n in zip(page.dataoffsets, page.databytecounts):\n"
          "                    t.filehandle.seek(o); out.append(t.filehandle.read(n))\n"
          "        return out\n"
          "a, b = tiles(sys.argv[1]), tiles(sys.argv[2])\n"
          "assert len(a) == len(b), (len(a), len(b))\n"
          "bad = [i for i in range(len(a)) if a[i] != b[i]]\n"
          "assert not bad, f'{len(bad)} of {len(a)} tiles differ, first {bad[0]}'\n"
          "print(len(a))\n";
    py.close();
    const auto s = test::run_python(tmp.file("same.py"), {tmp.file("cpu.ome.tif"), tmp.file("cuda.ome.tif")});
    EXPECT_EQ(s.exit_code, 0) << c.src << ": " << s.err;
  }
}

}  // namespace
}  // namespace tw
