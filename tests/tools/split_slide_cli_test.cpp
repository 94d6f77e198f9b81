// One slide split over MPI ranks (`mpirun -np N tilewave pyramid|run|OP ...`,
// jobs/pyramid/banded_pyramid.hpp): the file written is byte for byte the one
// a single process writes, for pyramids (encoded and passed-through level 0,
// TIFF, OME-TIFF and OME-Zarr), pipelines of neighbourhood steps and a
// budget 8x smaller than the image; a failure on one rank ends the job with
// an error and no output. Skipped where there is no mpirun or no MPI build.
#include <dirent.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <tiffio.h>
#include <unistd.h>

#include <fstream>

#include "tests/support/mpi_run.hpp"
#include "tests/support/test_support.hpp"

namespace tw {
namespace {

using test::mpi_ready;
using test::mpirun;

std::vector<std::string> names_in(const std::string& dir) {
  std::vector<std::string> n;
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* e = readdir(d))
      if (std::string(e->d_name) != "." && std::string(e->d_name) != "..") n.push_back(e->d_name);
    closedir(d);
  }
  std::sort(n.begin(), n.end());
  return n;
}

// The command on one process, then on 2 and 3 ranks: the same bytes. The
// output (named like the layouts name their images) takes the place of
// "OUT" in args; each run writes it in a folder of its own.
void expect_same_split(const test::TempDir& tmp, std::vector<std::string> args, const std::string& out_name,
                       bool folder = false) {
  auto with_out = [&](const std::string& dir) {
    test::run({"mkdir", "-p", tmp.file(dir)});
    std::vector<std::string> a = args;
    for (std::string& w : a)
      if (w == "OUT") w = tmp.file(dir + "/" + out_name);
    return a;
  };
  const std::string one = tmp.file("one/" + out_name);
  const auto r1 = test::run_cli(with_out("one"));
  ASSERT_EQ(r1.exit_code, 0) << r1.err;
  for (int np : {2, 3}) {
    const std::string dir = "np" + std::to_string(np);
    const auto r = mpirun(np, with_out(dir));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    // Rank 0 says what it wrote, once.
    EXPECT_EQ(r.out.find("wrote"), r.out.rfind("wrote")) << r.out;
    const std::string many = tmp.file(dir + "/" + out_name);
    if (folder) {
      const auto d = test::run({"diff", "-r", one, many});
      EXPECT_EQ(d.exit_code, 0) << args[0] << " on " << np << " ranks: " << d.out;
    } else {
      EXPECT_TRUE(test::file_bytes(one) == test::file_bytes(many))
          << args[0] << " " << args[1] << " on " << np << " ranks differs";
    }
  }
}

TEST(SplitSlide, PyramidIsByteIdentical) {
  std::string why;
  if (!mpi_ready(&why)) GTEST_SKIP() << why;
  test::TempDir tmp;
  expect_same_split(tmp, {"pyramid", "synthetic:1500x5000", "OUT", "--threads", "1"}, "p.tif");
  expect_same_split(tmp, {"pyramid", "synthetic:900x9000,seed=3", "OUT", "--tile", "512", "--threads", "1"}, "t.tif");
  expect_same_split(tmp, {"pyramid", "synthetic:700x3000", "OUT", "--threads", "1"}, "p.ome.tif");
  expect_same_split(tmp, {"pyramid", "synthetic:600x2500", "OUT", "--threads", "1"}, "p.zarr", true);
}

// Level 0 copied from the input's own JPEG tiles (pass-through), a 16-bit
// input with deflate, and an image 8x the --memory budget.
TEST(SplitSlide, PassThroughSixteenBitsAndOutOfCore) {
  std::string why;
  if (!mpi_ready(&why)) GTEST_SKIP() << why;
  test::TempDir tmp;
  ASSERT_EQ(test::run_cli({"pyramid", "synthetic:2000x4000", tmp.file("in.tif")}).exit_code, 0);
  expect_same_split(tmp, {"pyramid", tmp.file("in.tif"), "OUT", "--threads", "1"}, "pass.tif");
  test::TiffSpec spec;
  spec.compression = 8;
  spec.tile_w = spec.tile_h = 128;
  test::write_tiff(tmp.file("g16.tif"), test::pattern_image(kGray16, 700, 2300, 9).view(), spec);
  expect_same_split(tmp, {"pyramid", tmp.file("g16.tif"), "OUT", "--threads", "1", "--tile", "128"}, "g16.tif");
  // 4000x8000 RGB: 96 MB of pixels under a 12 MB budget.
  expect_same_split(tmp, {"pyramid", "synthetic:4000x8000", "OUT", "--memory", "12M", "--threads", "1"}, "ooc.tif");
}

TEST(SplitSlide, PipelineOfNeighbourhoodStepsIsByteIdentical) {
  std::string why;
  if (!mpi_ready(&why)) GTEST_SKIP() << why;
  test::TempDir tmp;
  expect_same_split(tmp,
                    {"run", "synthetic:1200x4000", "OUT", "filter gray", "filter gaussian --sigma 2", "filter sobel",
                     "--threads", "1"},
                    "run.tif");
  expect_same_split(tmp, {"filter", "gaussian", "synthetic:800x3000", "OUT", "--sigma", "3", "--threads", "1"},
                    "g.tif");
}

// A serpentine corridor of background from the top edge, running down and
// up the whole height column after column: fill-holes must carry "reached
// from the border" across every boundary between ranks many times (the
// ranked wavefront, engine/wavefront/ranked_wavefront.hpp); the enclosed
// dots are holes. And a pipeline with barriers (Otsu, fill-holes, EDT).
TEST(SplitSlide, WavefrontAcrossEveryRankBoundary) {
  std::string why;
  if (!mpi_ready(&why)) GTEST_SKIP() << why;
  test::TempDir tmp;
  const int64_t w = 413, h = 1500;
  Image img(kGray8, Rect(0, 0, w, h));
  for (int64_t y = 0; y < h; ++y)
    for (int64_t x = 0; x < w; ++x) {
      const int64_t col = x / 8, in = x % 8;
      // Corridors 4 pixels wide in every 8 columns, joined alternately at
      // the bottom and the top; the first opens onto the top edge.
      bool corridor = in >= 2 && in < 6 && y >= 4 && y < h - 4;
      if (in >= 2 && (y >= h - 8 && y < h - 4) && col % 2 == 0) corridor = true;  // bottom turn to the next
      if (in < 2 && (y >= h - 8 && y < h - 4) && col % 2 == 1) corridor = true;
      if (in >= 2 && y >= 4 && y < 8 && col % 2 == 1) corridor = true;  // top turn
      if (in < 2 && y >= 4 && y < 8 && col % 2 == 0 && col > 0) corridor = true;
      if (col == 0 && in >= 2 && in < 6 && y < 4) corridor = true;  // the opening
      const bool hole = (x % 8 == 7) && (y % 37 == 0) && y > 10 && y < h - 10;
      *img.ptr<uint8_t>(x, y) = corridor || hole ? 0 : 255;
    }
  test::TiffSpec spec;
  spec.compression = 8;
  spec.tile_w = spec.tile_h = 64;
  test::write_tiff(tmp.file("serp.tif"), img.view(), spec);
  expect_same_split(tmp, {"fill-holes", tmp.file("serp.tif"), "OUT", "--tile", "64", "--threads", "1"}, "f.tif");
  expect_same_split(tmp,
                    {"run", "synthetic:900x2600", "OUT", "filter gray", "filter threshold --otsu", "fill-holes", "edt",
                     "filter convert --type u8 --from 0 --to 40", "--threads", "1"},
                    "chain.tif");
}

// A damaged tile in the last rank's rows: every rank stops, the job exits
// non-zero, rank 0 names the failing rank's error, nothing is left at the
// output's path or beside it.
TEST(SplitSlide, AFailingRankEndsTheJobWithoutOutput) {
  std::string why;
  if (!mpi_ready(&why)) GTEST_SKIP() << why;
  test::TempDir tmp;
  test::TiffSpec spec;
  spec.compression = 8;
  spec.tile_w = spec.tile_h = 64;
  test::write_tiff(tmp.file("in.tif"), test::pattern_image(kGray8, 300, 3000, 2).view(), spec);
  std::string bytes = test::file_bytes(tmp.file("in.tif"));
  TIFF* t = TIFFOpen(tmp.file("in.tif").c_str(), "r");
  uint64_t* offs = nullptr;
  uint64_t* counts = nullptr;
  TIFFGetField(t, TIFFTAG_TILEOFFSETS, &offs);
  TIFFGetField(t, TIFFTAG_TILEBYTECOUNTS, &counts);
  const uint32_t n = TIFFNumberOfTiles(t);
  const uint64_t at = offs[n - 3], len = counts[n - 3];
  TIFFClose(t);
  for (uint64_t i = 0; i < len; ++i) bytes[at + i] = static_cast<char>(0xA5);
  std::ofstream(tmp.file("bad.tif"), std::ios::binary) << bytes;
  test::run({"mkdir", tmp.file("out")});
  const auto r = mpirun(2, {"pyramid", tmp.file("bad.tif"), tmp.file("out/o.tif"), "--threads", "1"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("tilewave: error:"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("rank 1"), std::string::npos) << r.err;
  EXPECT_TRUE(names_in(tmp.file("out")).empty()) << names_in(tmp.file("out"))[0];
}

// The split without MPI: shares on the CPU in one process (the path several
// GPUs take, with the CPU in place of each device), so sanitizer builds,
// which leave MPI out, run the banded pyramid end to end too.
TEST(SplitSlide, SharesInOneProcessWriteWhatOneProcessWrites) {
  test::TempDir tmp;
  test::run({"mkdir", tmp.file("one"), tmp.file("three")});
  for (const std::string out : {"p.tif", "p.ome.tif"}) {
    const auto one = test::run_cli({"pyramid", "synthetic:900x4000", tmp.file("one/" + out), "--threads", "2"});
    ASSERT_EQ(one.exit_code, 0) << one.err;
    test::RunOptions o;
    o.env = {{"TW_TEST_CPU_SHARES", "3"}};
    const auto three = test::run({test::cli_path(), "pyramid", "synthetic:900x4000", tmp.file("three/" + out),
                                  "--threads", "2", "--report", tmp.file("r.json")},
                                 o);
    ASSERT_EQ(three.exit_code, 0) << three.err;
    EXPECT_EQ(test::read_json(tmp.file("r.json"))["ranks"], 3);
    EXPECT_TRUE(test::file_bytes(tmp.file("one/" + out)) == test::file_bytes(tmp.file("three/" + out))) << out;
  }
}

// A rank bound to fewer cores than its share of the host (Open MPI's
// default with two ranks or fewer) is told how to unbind it.
TEST(SplitSlide, ARankBoundToOneCoreIsWarned) {
  if (sysconf(_SC_NPROCESSORS_ONLN) < 2) GTEST_SKIP() << "one core: nothing to bind away";
  if (test::run({"bash", "-c", "command -v taskset"}).exit_code != 0) GTEST_SKIP() << "no taskset";
  test::TempDir tmp;
  test::RunOptions o;
  o.env = {{"OMPI_COMM_WORLD_LOCAL_SIZE", "1"}, {"OMPI_COMM_WORLD_RANK", "0"}};
  const auto r =
      test::run({"taskset", "-c", "0", test::cli_path(), "pyramid", "synthetic:200x200", tmp.file("o.tif")}, o);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("--bind-to none"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace tw
