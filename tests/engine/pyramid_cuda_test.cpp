// CpuVsCuda: the CUDA backend's pyramid equals the CPU backend's byte for
// byte: in memory (raw tiles, every pixel format, odd sizes, tile sizes,
// stripes under a small device budget) and through the CLI (every
// compression: identical pixels encode to identical tiles). Skipped, and
// reported as skipped, where there is no CUDA device.
#include <gtest/gtest.h>
#include <tiffio.h>

#include <algorithm>
#include <fstream>

#include "engine/cuda/device.hpp"
#include "engine/memory_source.hpp"
#include "io/open_source.hpp"
#include "io/synthetic/synthetic_source.hpp"
#include "jobs/pyramid/pyramid_job.hpp"
#include "tests/support/gpu.hpp"
#include "tests/support/memory_sink.hpp"
#include "tests/support/test_support.hpp"

namespace tw {
namespace {

Backend cuda0() {
  Backend b;
  b.kind = Backend::Kind::kCuda;
  return b;
}

// Runs the job on both backends and compares every tile.
void compare_backends(const TileSource& src, int64_t tile, int64_t min_size, size_t gpu_memory, size_t memory,
                      const std::string& what, int expect_stripes = 0, const Backend& gpu = cuda0(),
                      int64_t join_row = -1, PyramidStats* stats = nullptr, bool passthrough = false) {
  const PixelFormat fmt = src.info().fmt;
  test::MemorySink cpu_sink(fmt, tile), gpu_sink(fmt, tile);
  PyramidJobOptions opt;
  opt.passthrough = passthrough;
  opt.tile = tile;
  opt.min_size = min_size;
  opt.memory = memory;
  run_pyramid(src, cpu_sink, opt);
  opt.backend = gpu;
  opt.gpu_memory = gpu_memory;
  opt.gpu_join_row = join_row;
  const PyramidStats st = run_pyramid(src, gpu_sink, opt);
  if (stats) *stats = st;
  if (expect_stripes) {
    EXPECT_GE(st.stripes, expect_stripes) << what;
  }
  EXPECT_GT(st.kernel_s, 0) << what;
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
                    << px % tile << ", " << px / tile << "): cpu " << int(bytes[i]) << " gpu " << int(it->second[i]);
    }
  }
}

Image pattern(PixelFormat fmt, int64_t w, int64_t h) {
  return test::pattern_image(fmt, w, h, uint64_t(w * 7 + h));
}

// Every tiled directory of two pyramids holds the same bytes, tile by tile.
void expect_same_tiles(const std::string& a, const std::string& b, const std::string& what) {
  const int dirs = test::count_tiff_directories(a);
  ASSERT_EQ(dirs, test::count_tiff_directories(b)) << what;
  for (int d = 0; d < dirs - 2; ++d) {
    TIFF* ta = TIFFOpen(a.c_str(), "r");
    TIFF* tb = TIFFOpen(b.c_str(), "r");
    TIFFSetDirectory(ta, static_cast<tdir_t>(d));
    TIFFSetDirectory(tb, static_cast<tdir_t>(d));
    const uint32_t n = TIFFNumberOfTiles(ta);
    EXPECT_EQ(n, TIFFNumberOfTiles(tb)) << what;
    std::vector<uint8_t> ba(static_cast<size_t>(TIFFTileSize(ta)) * 2 + 1024), bb(ba.size());
    int reported = 0;
    for (uint32_t i = 0; i < n && reported < 3; ++i) {
      const tmsize_t la = TIFFReadRawTile(ta, i, ba.data(), static_cast<tmsize_t>(ba.size()));
      const tmsize_t lb = TIFFReadRawTile(tb, i, bb.data(), static_cast<tmsize_t>(bb.size()));
      if (!(la == lb && std::equal(ba.begin(), ba.begin() + la, bb.begin()))) {
        ADD_FAILURE() << what << ": directory " << d << " tile " << i << " differs";
        ++reported;
      }
    }
    TIFFClose(ta);
    TIFFClose(tb);
  }
}

TEST(CpuVsCuda, EveryFormatAndOddSizes) {
  TW_REQUIRE_GPU();
  for (PixelFormat fmt : {kGray8, kRgb8, PixelFormat{SampleType::kU8, 2}, PixelFormat{SampleType::kU8, 4}, kGray16,
                          PixelFormat{SampleType::kU16, 3}}) {
    for (auto [w, h] : {std::pair<int64_t, int64_t>{1, 1}, {1, 300}, {300, 1}, {257, 129}, {1000, 613}}) {
      MemorySource src(pattern(fmt, w, h));
      compare_backends(src, 64, 1, 0, size_t{256} << 20, fmt.str() + " " + std::to_string(w) + "x" + std::to_string(h));
    }
  }
}

TEST(CpuVsCuda, TileSizesOnTissue) {
  TW_REQUIRE_GPU();
  SyntheticSpec spec;
  spec.width = 3001, spec.height = 2049;
  SyntheticSource src(spec);
  for (int64_t tile : {16, 64, 256, 512})
    compare_backends(src, tile, 8, 0, size_t{512} << 20, "tile " + std::to_string(tile));
}

// An image far larger than the device budget: bands stream through a few
// megabytes of device memory, and when one band of full-width rows does not
// fit, the image is cut into stripes.
TEST(CpuVsCuda, LargerThanDeviceBudget) {
  TW_REQUIRE_GPU();
  SyntheticSpec spec;
  spec.width = 6000, spec.height = 5000;  // 90 MB of RGB
  SyntheticSource src(spec);
  compare_backends(src, 256, 64, size_t{24} << 20, size_t{512} << 20, "24M device budget");
  compare_backends(src, 256, 64, size_t{6} << 20, size_t{512} << 20, "6M device budget (stripes)", 2);
}

// A pass begun on the CPU while CUDA starts (a pending backend) moves its
// cascade to the GPU between two bands: carry rows and half-made bands of
// every level go with it. Hand-over rows hit every phase of the levels'
// bands; the result is still the CPU's, bit for bit.
TEST(CpuVsCuda, GpuTakesOverMidPass) {
  TW_REQUIRE_GPU();
  Backend pending = cuda0();
  pending.pending = true;
  pending.spelled = "cuda";
  struct Case {
    PixelFormat fmt;
    int64_t w, h, tile;
    std::vector<int64_t> rows;
  };
  for (const Case& c :
       {Case{kRgb8, 1000, 613, 64, {0, 64, 128, 192, 320, 576}}, Case{kGray16, 517, 1029, 16, {16, 48, 112, 500, 1024}},
        Case{PixelFormat{SampleType::kU8, 4}, 301, 257, 32, {32, 96, 224}}}) {
    MemorySource src(pattern(c.fmt, c.w, c.h));
    for (int64_t row : c.rows) {
      const std::string what = c.fmt.str() + " " + std::to_string(c.w) + "x" + std::to_string(c.h) + " tile " +
                               std::to_string(c.tile) + " from row " + std::to_string(row);
      PyramidStats st;
      compare_backends(src, c.tile, 1, 0, size_t{256} << 20, what, 0, pending, row, &st);
      EXPECT_EQ(st.gpu_from_row, (row + c.tile - 1) / c.tile * c.tile) << what;
      EXPECT_EQ(st.backend, "cuda:0") << what;
    }
  }
  SyntheticSpec spec;
  spec.width = 3001, spec.height = 2049;
  SyntheticSource tissue(spec);
  for (int64_t row : {256, 768, 1792}) {
    PyramidStats st;
    compare_backends(tissue, 256, 8, 0, size_t{512} << 20, "tissue from row " + std::to_string(row), 0, pending, row,
                     &st);
    EXPECT_EQ(st.gpu_from_row, row);
  }
}

// JPEG tiles decoded the split way (entropy on the CPU, IDCT, upsampling
// and colour conversion on the GPU) give the CPU decoder's pixels exactly:
// libtiff-written YCbCr 4:2:0 and gray at qualities from coarse to 100
// (large coefficients, clamped samples), our own 4:4:4, edge tiles with
// padding, band heights cut by the image's bottom. RGB-coded JPEG is not
// split (the CPU decodes it) and still matches.
TEST(CpuVsCuda, SplitJpegDecodeMatchesCpu) {
  TW_REQUIRE_GPU();
  Backend pending = cuda0();
  pending.pending = true;
  pending.spelled = "cuda";
  test::TempDir tmp;
  struct Case {
    PixelFormat fmt;
    int64_t w, h;
    int tile, quality;
    bool ycbcr, noise, split;
  };
  int n = 0;
  for (const Case& c :
       {Case{kRgb8, 1000, 613, 256, 90, true, false, true}, Case{kRgb8, 700, 530, 128, 100, true, true, true},
        Case{kRgb8, 517, 300, 64, 20, true, false, true}, Case{kGray8, 1000, 613, 256, 95, false, true, true},
        Case{kGray8, 300, 333, 16, 75, false, false, true}, Case{kRgb8, 600, 400, 128, 90, false, false, false}}) {
    const Image img = c.noise ? test::random_image(c.fmt, c.w, c.h, 11) : test::pattern_image(c.fmt, c.w, c.h, 5);
    test::TiffSpec spec;
    spec.tile_w = spec.tile_h = c.tile;
    spec.compression = COMPRESSION_JPEG;
    spec.jpeg_quality = c.quality;
    spec.jpeg_ycbcr = c.ycbcr;
    const std::string path = tmp.file("in" + std::to_string(n++) + ".tif");
    test::write_tiff(path, img.view(), spec);
    const SourcePtr src = open_source(path);
    const std::string what = path + " " + c.fmt.str() + " q" + std::to_string(c.quality);
    PyramidStats st;
    compare_backends(*src, c.tile, 1, 0, size_t{256} << 20, what, 0, pending, 0, &st, true);
    EXPECT_EQ(st.gpu_idct_bands > 0, c.split) << what << ": " << st.jpeg_decoder;
  }
  // 4:4:4 from our own writer.
  const std::string in = tmp.file("444.tif");
  ASSERT_EQ(test::run_cli({"pyramid", "synthetic:1500x1100", in, "--min-size", "100000", "--subsampling", "444",
                           "--quality", "97", "--device", "cpu"})
                .exit_code,
            0);
  const SourcePtr src = open_source(in);
  PyramidStats st;
  compare_backends(*src, 256, 1, 0, size_t{256} << 20, "4:4:4", 0, pending, 0, &st, true);
  EXPECT_GT(st.gpu_idct_bands, 0) << st.jpeg_decoder;
}

// A damaged JPEG tile met by the split decode: the one-line error the CPU
// gives, exit 1, no output left behind.
TEST(CpuVsCuda, SplitJpegCorruptTile) {
  TW_REQUIRE_GPU();
  test::TempDir tmp;
  const std::string bad = tmp.file("bad.tif");
  ASSERT_EQ(test::run_cli({"pyramid", "synthetic:1800x1500", bad, "--min-size", "100000", "--device", "cpu"}).exit_code,
            0);
  test::damage_tiff_tile(bad, 30);  // row 4 of 6
  test::RunOptions join;
  join.env["TW_TEST_GPU_JOIN_ROW"] = "0";
  const std::string out = tmp.file("out.tif");
  const auto r = test::run_cli({"pyramid", bad, out, "--device", "cuda"}, join);
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("corrupt JPEG"), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_FALSE(std::ifstream(out).good());
}

// A JPEG pyramid's settings on both backends; with a small gpu_memory the
// cascade fits and the split coding's buffers do not (all on the CPU).
struct JpegCase {
  const char* size;  // a synthetic size, or (the second test) a whole source
  const char* tile;
  const char* quality;
  const char* sub;
  const char* gpu_memory;
  const char* ext = ".tif";
};

nlohmann::json read_report(const std::string& path) {
  return test::read_json(path);
}

// A JPEG slide to a JPEG pyramid with the GPU from the first band: level 0
// decoded the split way, the lower levels transformed on the GPU and
// entropy-coded on the CPU: the file is the CPU backend's, byte for byte,
// at 4:2:0 and 4:4:4, coarse and fine quality, 256- and 512-pixel tiles.
TEST(CpuVsCuda, SplitJpegEncodeIdenticalFiles) {
  TW_REQUIRE_GPU();
  test::TempDir tmp;
  using Case = JpegCase;
  int n = 0;
  for (const Case& c : {Case{"3000x2900", "256", "85", "420", "4G"}, Case{"2100x1333", "256", "97", "444", "4G"},
                        Case{"2600x1900", "512", "30", "420", "4G"}, Case{"3000x2900", "256", "85", "420", "12M"}}) {
    const std::string in = tmp.file("in" + std::to_string(n) + ".tif");
    ASSERT_EQ(test::run_cli({"pyramid", std::string("synthetic:") + c.size, in, "--min-size", "100000", "--tile",
                             c.tile, "--subsampling", c.sub, "--device", "cpu"})
                  .exit_code,
              0);
    const std::string a = tmp.file("cpu" + std::to_string(n) + ".tif"),
                      b = tmp.file("gpu" + std::to_string(n) + ".tif");
    ++n;
    for (auto [dev, out] : {std::pair<const char*, std::string>{"cpu", a}, {"cuda", b}}) {
      test::RunOptions join;
      join.env["TW_TEST_GPU_JOIN_ROW"] = "0";
      const auto r = test::run_cli({"pyramid", in, out, "--tile", c.tile, "--quality", c.quality, "--subsampling",
                                    c.sub, "--device", dev, "--gpu-memory", c.gpu_memory, "--report", out + ".json"},
                                   join);
      ASSERT_EQ(r.exit_code, 0) << dev << ": " << r.err;
    }
    const std::string what =
        std::string(c.size) + " tile " + c.tile + " q" + c.quality + " " + c.sub + " --gpu-memory " + c.gpu_memory;
    expect_same_tiles(a, b, what);
    const nlohmann::json json = read_report(b + ".json");
    EXPECT_EQ(json["gpu_from_row"], 0) << what << json;
    const bool split = std::string(c.gpu_memory) != "12M";
    EXPECT_EQ(json["gpu_fdct_tiles"] != 0, split) << what << json;
    EXPECT_EQ(json["gpu_idct_bands"] != 0, split) << what << json;
    // The GPU entropy-codes what it transforms (the bytes checked above).
    EXPECT_EQ(json["gpu_entropy_tiles"] != 0, split) << what << json;
    EXPECT_LE(json["gpu_entropy_tiles"].get<int64_t>(), json["gpu_fdct_tiles"].get<int64_t>()) << what << json;
  }
}

// A pyramid whose level-0 tiles nvJPEG decoded (some of them), against the
// same input's CPU-decoded pyramid: level 0 is the input's bytes either way,
// the levels below match closely (the decoders' IDCT and chroma upsampling
// differ slightly, so not exactly).
void expect_gpu_decoded(const std::string& cpu, const std::string& gpu, const nlohmann::json& json) {
  ASSERT_EQ(json["jpeg_decoder"].get<std::string>().rfind("nvjpeg", 0), 0u) << json;
  EXPECT_NE(json["gpu_decoded_bands"], 0) << json;
  for (int l = 1; l < test::count_tiff_directories(cpu) - 2; ++l) {
    const Image a = test::read_tiff_libtiff(cpu, l), b = test::read_tiff_libtiff(gpu, l);
    EXPECT_GT(test::psnr(a.view(), b.view()), 40.0) << "level " << l;
  }
  EXPECT_EQ(test::diff_images(test::read_tiff_libtiff(cpu, 0).view(), test::read_tiff_libtiff(gpu, 0).view()), "");
}

// A pass begun on the CPU hands its cascade to the GPU and then its JPEG
// decoder takes level-0 bands too.
TEST(CpuVsCuda, GpuJpegAfterHandover) {
  TW_REQUIRE_GPU();
  test::TempDir tmp;
  const std::string in = tmp.file("in.tif");
  ASSERT_EQ(test::run_cli({"pyramid", "synthetic:3000x2900", in, "--min-size", "100000", "--device", "cpu"}).exit_code,
            0);
  ASSERT_EQ(test::run_cli({"pyramid", in, tmp.file("cpu.tif"), "--device", "cpu"}).exit_code, 0);
  test::RunOptions join;
  join.env["TW_TEST_GPU_JOIN_ROW"] = "512";
  const auto r = test::run_cli(
      {"pyramid", in, tmp.file("gpu.tif"), "--device", "cuda", "--gpu-jpeg", "on", "--report", tmp.file("gpu.json")},
      join);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json json = read_report(tmp.file("gpu.json"));
  EXPECT_EQ(json["gpu_from_row"], 512) << json;
#ifndef TW_HAVE_NVJPEG
  GTEST_SKIP() << "this build has no nvJPEG";
#endif
  expect_gpu_decoded(tmp.file("cpu.tif"), tmp.file("gpu.tif"), json);
}

// Whole files through the CLI, every compression: the GPU's pixels are the
// CPU's, so the encoders produce identical tiles.
TEST(CpuVsCuda, CliIdenticalFilesAllCompressions) {
  TW_REQUIRE_GPU();
  test::TempDir tmp;
  for (const char* comp : {"jpeg", "deflate", "zstd", "lzw", "none"}) {
    const std::string a = tmp.file(std::string("cpu-") + comp + ".tif"),
                      b = tmp.file(std::string("gpu-") + comp + ".tif");
    for (auto [dev, out] : {std::pair<const char*, std::string>{"cpu", a}, {"cuda", b}}) {
      const auto r = test::run_cli(
          {"pyramid", "synthetic:2500x1700", out, "--compression", comp, "--device", dev, "--report", out + ".json"});
      ASSERT_EQ(r.exit_code, 0) << comp << " " << dev << ": " << r.err;
    }
    expect_same_tiles(a, b, comp);
    const nlohmann::json json = read_report(b + ".json");
    // The pass starts on the CPU while CUDA starts; on an image this small the
    // CPU may well finish first, and the report says who made the levels.
    const bool joined = json["gpu_from_row"] != -1;
    EXPECT_EQ(json["device"], joined ? "cuda:0" : "cpu") << json;
  }
}

// JPEG tiles passed through and decoded by nvJPEG on the GPU from the first
// band (--gpu-jpeg on).
TEST(CpuVsCuda, GpuJpegDecode) {
  TW_REQUIRE_GPU();
  test::TempDir tmp;
  const std::string in = tmp.file("in.tif");
  ASSERT_EQ(test::run_cli({"pyramid", "synthetic:2600x1900", in, "--min-size", "100000", "--device", "cpu"}).exit_code,
            0);
  for (const char* dev : {"cpu", "cuda"}) {
    const std::string out = tmp.file(std::string(dev) + ".tif");
    const auto r = test::run_cli({"pyramid", in, out, "--device", dev, "--gpu-jpeg", "on", "--report", out + ".json"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
#ifndef TW_HAVE_NVJPEG
  GTEST_SKIP() << "this build has no nvJPEG";
#endif
  expect_gpu_decoded(tmp.file("cpu.tif"), tmp.file("cuda.tif"), read_report(tmp.file("cuda.tif.json")));
}

// An op's result written as a JPEG pyramid on the GPU: level 0, computed
// (not passed through), is transformed on the GPU like the levels below and
// entropy-coded on the CPU. The file is the CPU backend's, byte for byte:
// RGB at 4:2:0 and 4:4:4, gray, odd sizes, 256- and 512-pixel tiles,
// coarse and fine quality, TIFF and OME-TIFF; and with a device budget too
// small for the split coding's buffers, all of it on the CPU.
TEST(CpuVsCuda, ComputedLevelZeroTransformedOnTheGpu) {
  TW_REQUIRE_GPU();
  test::TempDir tmp;
  using Case = JpegCase;
  int n = 0;
  for (const Case& c : {Case{"synthetic:3000x2900", "256", "85", "420", "4G", ".tif"},
                        Case{"synthetic:2100x1333", "256", "97", "444", "4G", ".tif"},
                        Case{"synthetic:2600x1900", "512", "30", "420", "4G", ".ome.tif"},
                        Case{"synthetic:1999x1201,gray", "256", "90", "420", "4G", ".tif"},
                        Case{"synthetic:3000x2900", "256", "85", "420", "12M", ".tif"}}) {
    const std::string a = tmp.file("cpu" + std::to_string(n) + c.ext), b = tmp.file("gpu" + std::to_string(n) + c.ext);
    ++n;
    for (auto [dev, out] : {std::pair<const char*, std::string>{"cpu", a}, {"cuda", b}}) {
      const auto r = test::run_cli({"filter", "invert", c.size, out, "--compression", "jpeg", "--tile", c.tile,
                                    "--quality", c.quality, "--subsampling", c.sub, "--device", dev, "--gpu-memory",
                                    c.gpu_memory, "--report", out + ".json"});
      ASSERT_EQ(r.exit_code, 0) << dev << ": " << r.err;
    }
    const std::string what = std::string(c.size) + " tile " + c.tile + " q" + c.quality + " " + c.sub +
                             " --gpu-memory " + c.gpu_memory + " " + c.ext;
    expect_same_tiles(a, b, what);
    const nlohmann::json json = read_report(b + ".json");
    TIFF* t = TIFFOpen(b.c_str(), "r");
    ASSERT_NE(t, nullptr) << what;
    const int64_t level0_tiles = TIFFNumberOfTiles(t);
    TIFFClose(t);
    const bool split = std::string(c.gpu_memory) != "12M";
    if (split) {
      EXPECT_GT(json["gpu_fdct_tiles"].get<int64_t>(), level0_tiles) << what << json;
      EXPECT_GT(json["gpu_entropy_tiles"].get<int64_t>(), level0_tiles) << what << json;
    } else {
      EXPECT_EQ(json["gpu_fdct_tiles"], 0) << what << json;
      EXPECT_EQ(json["gpu_entropy_tiles"], 0) << what << json;
    }
  }
}

// A chain of GPU ops written as a JPEG pyramid: its level-0 bands go from
// the chain straight into the cascade's device memory (the report's
// gpu_device_bands), never to the host, and the file is still the CPU
// backend's byte for byte: RGB and gray results, 256- and 512-pixel tiles,
// several bands at once in a small --memory, an input on the host (staged
// piece by piece) and a generated one; with a device budget too small for
// the split coding, the bands come down as before.
TEST(CpuVsCuda, GpuChainBandsStayOnTheDevice) {
  TW_REQUIRE_GPU();
  test::TempDir tmp;
  const std::string slide = tmp.file("slide.tif");
  ASSERT_EQ(test::run_cli({"pyramid", "synthetic:2500x2100", slide, "--tile", "256"}).exit_code, 0);
  struct Case {
    std::vector<std::string> args;
    const char* tile;
    const char* gpu_memory;
    const char* memory;
  };
  int n = 0;
  for (const Case& c :
       {Case{{"run", slide, "OUT", "filter gaussian --sigma 2", "filter invert"}, "256", "4G", "1G"},
        Case{{"run", slide, "OUT", "filter gray", "filter gaussian --sigma 1.5"}, "512", "4G", "1G"},
        Case{{"run", "synthetic:3000x2900", "OUT", "filter gray", "filter threshold --value 128"}, "256", "4G", "64M"},
        Case{{"filter", "invert", slide, "OUT"}, "256", "4G", "1G"},
        Case{{"run", slide, "OUT", "filter gaussian --sigma 2", "filter invert"}, "256", "12M", "1G"}}) {
    const std::string a = tmp.file("cpu" + std::to_string(n) + ".tif"),
                      b = tmp.file("gpu" + std::to_string(n) + ".tif");
    ++n;
    std::string what;
    for (const std::string& x : c.args) what += x + " ";
    what += std::string("--tile ") + c.tile + " --gpu-memory " + c.gpu_memory + " --memory " + c.memory;
    for (auto [dev, out] : {std::pair<const char*, std::string>{"cpu", a}, {"cuda", b}}) {
      std::vector<std::string> args = c.args;
      std::replace(args.begin(), args.end(), std::string("OUT"), out);
      for (const char* x : {"--compression", "jpeg", "--tile", c.tile, "--device", dev, "--gpu-memory", c.gpu_memory,
                            "--memory", c.memory, "--report"})
        args.push_back(x);
      args.push_back(out + ".json");
      const auto r = test::run_cli(args);
      ASSERT_EQ(r.exit_code, 0) << dev << " " << what << ": " << r.err;
    }
    expect_same_tiles(a, b, what);
    const nlohmann::json json = read_report(b + ".json");
    if (std::string(c.gpu_memory) == "12M") {
      EXPECT_EQ(json["gpu_device_bands"], 0) << what << json;
    } else {
      EXPECT_GT(json["gpu_device_bands"].get<int64_t>(), 0) << what << json;
    }
  }
}

// `pyramid --recompress` and a generated slide compute level 0, and the
// pass starts on the CPU while CUDA starts: the bands the CPU's cascade
// takes are encoded on the CPU, those after the hand-over come back from
// the GPU as level-0 coefficients (and entropy codes). The file is the CPU
// backend's, byte for byte, wherever the hand-over falls; with a device
// budget too small for the split coding, all of it is encoded on the CPU.
TEST(CpuVsCuda, ComputedLevelZeroAfterHandover) {
  TW_REQUIRE_GPU();
  test::TempDir tmp;
  const std::string jpeg_in = tmp.file("in.tif");
  ASSERT_EQ(
      test::run_cli({"pyramid", "synthetic:2600x1900", jpeg_in, "--min-size", "100000", "--device", "cpu"}).exit_code,
      0);
  struct Case {
    std::string input;
    bool recompress;
    const char* tile;
    const char* join;
    const char* gpu_memory;
  };
  int n = 0;
  for (const Case& c :
       {Case{jpeg_in, true, "256", "512", "4G"}, Case{jpeg_in, true, "256", "0", "4G"},
        Case{jpeg_in, true, "512", "1024", "4G"}, Case{"synthetic:3001x2333", false, "256", "768", "4G"},
        Case{jpeg_in, true, "256", "512", "12M"}}) {
    const std::string a = tmp.file("cpu" + std::to_string(n) + ".tif"),
                      b = tmp.file("gpu" + std::to_string(n) + ".tif");
    ++n;
    for (auto [dev, out] : {std::pair<const char*, std::string>{"cpu", a}, {"cuda", b}}) {
      std::vector<std::string> args = {"pyramid", c.input,        out,          "--tile",   c.tile,       "--device",
                                       dev,       "--gpu-memory", c.gpu_memory, "--report", out + ".json"};
      if (c.recompress) args.push_back("--recompress");
      test::RunOptions join;
      join.env["TW_TEST_GPU_JOIN_ROW"] = c.join;
      const auto r = test::run_cli(args, join);
      ASSERT_EQ(r.exit_code, 0) << dev << ": " << r.err;
    }
    const std::string what = c.input + " tile " + c.tile + " from row " + c.join + " --gpu-memory " + c.gpu_memory;
    expect_same_tiles(a, b, what);
    const nlohmann::json json = read_report(b + ".json");
    EXPECT_EQ(json["gpu_from_row"], std::stoll(c.join)) << what << json;
    // Level 0's tiles from the hand-over's row: the GPU's (the lower
    // levels' add to the count).
    TIFF* t = TIFFOpen(b.c_str(), "r");
    ASSERT_NE(t, nullptr) << what;
    uint32_t w = 0, h = 0;
    TIFFGetField(t, TIFFTAG_IMAGEWIDTH, &w);
    TIFFGetField(t, TIFFTAG_IMAGELENGTH, &h);
    TIFFClose(t);
    const int64_t T = std::stoll(c.tile);
    const int64_t gpu_level0 = (w + T - 1) / T * ((h - std::stoll(c.join) + T - 1) / T);
    if (std::string(c.gpu_memory) != "12M") {
      EXPECT_GT(json["gpu_fdct_tiles"].get<int64_t>(), gpu_level0) << what << json;
      EXPECT_GT(json["gpu_entropy_tiles"].get<int64_t>(), gpu_level0) << what << json;
    } else {
      EXPECT_EQ(json["gpu_fdct_tiles"], 0) << what << json;
    }
  }
}

}  // namespace
}  // namespace tw
