// Pipelines on the GPU: every chain of pipeline_chains.hpp run with
// --device cuda gives the bytes of the same steps run one by one on the GPU,
// which are the CPU's, at tile sizes 64, 67, 256 and the whole image, and out
// of core; a fused run of GPU ops crosses the bus once per tile each way.
#include <gtest/gtest.h>
#include <tiffio.h>

#include <algorithm>
#include <fstream>

#include "engine/cuda/split_jpeg_input.hpp"
#include "engine/memory.hpp"
#include "kernels/reconstruct/bit_planes.hpp"
#include "tests/jobs/pipeline_chains.hpp"
#include "tests/support/gpu.hpp"
#include "tests/support/test_support.hpp"

namespace tw {
namespace {

// "" when the two references hold the same bytes at every step.
std::string references_diff(const test::Chain& c, const test::Reference& a, const test::Reference& b) {
  for (size_t k = 1; k < a.images.size(); ++k) {
    if (a.images[k].empty() != b.images[k].empty()) return "step " + std::to_string(k) + ": image in one only";
    if (a.images[k].empty()) continue;
    const std::string d = test::bytes_diff(a.images[k].view(), b.images[k].view());
    if (!d.empty()) return "step " + std::to_string(k) + " (" + c.steps[k - 1].text + "): " + d;
  }
  return "";
}

uint64_t sum_of(const nlohmann::json& report, const char* key) {
  uint64_t s = 0;
  for (const auto& step : report) s += step[key].get<uint64_t>();
  return s;
}

// One chain run through the executor on `b`: its output read back, its
// report, and the split JPEG tiles of its input (-1: not read so).
// A JPEG-tiled TIFF of a pattern (YCbCr 4:2:0 for RGB) in `tmp`: its path.
std::string jpeg_tiff(const test::TempDir& tmp, PixelFormat fmt, int64_t w, int64_t h, int64_t tile, int quality,
                      int seed) {
  test::TiffSpec spec;
  spec.tile_w = spec.tile_h = static_cast<int>(tile);
  spec.compression = COMPRESSION_JPEG;
  spec.jpeg_quality = quality;
  spec.jpeg_ycbcr = fmt == kRgb8;
  const std::string path = tmp.file("in" + std::to_string(fmt.channels) + "-" + std::to_string(seed) + ".tif");
  test::write_tiff(path, test::pattern_image(fmt, w, h, seed).view(), spec);
  return path;
}

struct StepsRun {
  Image image;
  nlohmann::json report;
  int64_t split_tiles = -1;  // entropy-decoded on the CPU for the GPU
  int64_t gpu_tiles = -1;    // entropy-decoded on the GPU
};
StepsRun run_steps(const std::vector<std::string>& steps, const SourcePtr& input, const Backend& b, int64_t tile,
                   size_t memory = 0, const std::vector<int>& keep_steps = {}) {
  const Pipeline p = parse_pipeline(steps);
  const PipelinePlan plan = plan_pipeline(p, {{"input", {input->info().fmt, "input"}}});
  ExecContext ctx;
  ctx.tile = tile;
  ctx.backend = b;
  if (memory) ctx.memory = memory;
  std::vector<int> keep;
  for (int k : keep_steps) keep.push_back(plan.slot_of_step(k));
  const PipelineRun r = run_pipeline(p, plan, {input}, ctx, false, keep);
  return {test::read_tiled(*r.output(), 256), pipeline_report(p, plan, r), split_jpeg_tiles(*r.inputs[0]),
          split_jpeg_gpu_decoded_tiles(*r.inputs[0])};
}

class PipelineCuda : public ::testing::TestWithParam<test::Chain> {
 protected:
  void SetUp() override {
    TW_REQUIRE_GPU();
    const std::string missing = test::missing_ops(GetParam());
    if (!missing.empty()) GTEST_SKIP() << "not registered: " << missing;
  }
};

TEST_P(PipelineCuda, EqualTheStepsRunSeparatelyAndTheCpu) {
  const test::Chain& c = GetParam();
  const auto input = test::slide(301, 257, 5);
  const test::Reference cpu = test::run_separately(c, input);
  const test::Reference gpu = test::run_separately(c, input, Backend::cuda(0));
  ASSERT_EQ(references_diff(c, cpu, gpu), "") << "the steps alone, CPU vs CUDA";
  for (int64_t tile : {64, 67, 256, 301}) {
    SCOPED_TRACE("tile " + std::to_string(tile));
    ExecContext ctx;
    ctx.tile = tile;
    ctx.backend = Backend::cuda(0);
    const test::ChainRun r = test::run_chain(c, input, ctx);
    EXPECT_EQ(test::results_diff(c, r.run, gpu, tile), "");
    const nlohmann::json report = pipeline_report(*r.pipeline, r.plan, r.run);
    EXPECT_GT(sum_of(report, "bytes_uploaded"), 0u) << "nothing ran on the GPU: " << report.dump();
  }
}

TEST_P(PipelineCuda, EqualOutOfCore) {
  const test::Chain& c = GetParam();
  const int64_t w = 1400, h = 1111;
  const auto input = test::slide(w, h, 9);
  const test::Reference cpu = test::run_separately(c, input);
  ExecContext ctx;
  ctx.memory = static_cast<size_t>(w * h * 3) / 9;
  ctx.tile = 128;
  ctx.backend = Backend::cuda(0);
  const test::ChainRun r = test::run_chain(c, input, ctx);
  EXPECT_EQ(test::results_diff(c, r.run, cpu, 128), "");
}

INSTANTIATE_TEST_SUITE_P(Chains, PipelineCuda, ::testing::ValuesIn(test::pipeline_chains()),
                         [](const auto& info) { return info.param.name; });

// A fused run of five GPU ops on RGB: each tile (with the summed halo of
// every op) goes up once and its result comes down once — not once per op,
// which would move about 9 bytes a pixel up instead of 3.
TEST(PipelineCudaResidency, FusedRunCrossesTheBusOnce) {
  TW_REQUIRE_GPU();
  const test::Chain c = test::pipeline_chains()[0];
  ASSERT_EQ(c.name, "NeighbourhoodRun");
  const int64_t w = 1000, h = 777;
  const auto input = test::slide(w, h, 4);
  ExecContext ctx;
  ctx.backend = Backend::cuda(0);
  const ByteCounts before = process_byte_counts();
  const test::ChainRun r = test::run_chain(c, input, ctx);
  const Image out = test::read_tiled(*r.run.output(), 256);
  const ByteCounts moved = process_byte_counts() - before;
  const double up = static_cast<double>(moved.uploaded), down = static_cast<double>(moved.downloaded);
  // The report charges every byte moved to some step.
  const nlohmann::json report = pipeline_report(*r.pipeline, r.plan, r.run);
  EXPECT_EQ(sum_of(report, "bytes_uploaded"), moved.uploaded) << report.dump();
  EXPECT_EQ(sum_of(report, "bytes_downloaded"), moved.downloaded) << report.dump();
  const double pixels = static_cast<double>(w * h);
  std::printf("[ info     ] fused run of 5 GPU ops: %.2f bytes up, %.2f bytes down a pixel\n", up / pixels,
              down / pixels);
  EXPECT_GT(up, 3 * pixels) << "the RGB input goes up";
  EXPECT_LT(up, 1.5 * 3 * pixels) << report.dump();
  EXPECT_GE(down, pixels) << "the gray result comes down";
  EXPECT_LT(down, 1.5 * pixels) << report.dump();
}

// A whole-image step on CUDA whose result only streamed steps read leaves
// it in device memory (the EDT, in one band): the steps after it take it
// there (the EDT's float32 result neither comes down nor goes up again),
// and the output equals the CPU's at every tile size. A result that the
// writer, a barrier or --keep reads comes down as before. Otsu's stored
// input stays on the device too.
TEST(PipelineCudaResidency, EdtResultStaysOnTheDevice) {
  TW_REQUIRE_GPU();
  const std::vector<std::string> chain = {"filter gray",
                                          "filter threshold --otsu",
                                          "filter invert",
                                          "fill-holes",
                                          "edt",
                                          "filter convert --type u8 --from 0 --to 40",
                                          "filter gaussian --sigma 2"};
  const int64_t w = 1001, h = 777;
  const auto input = test::slide(w, h, 3);
  auto run = [&](const std::vector<std::string>& steps, const Backend& b, int64_t tile, bool keep_edt) {
    return run_steps(steps, input, b, tile, 0, keep_edt ? std::vector<int>{4} : std::vector<int>{});
  };
  const StepsRun cpu = run(chain, Backend{}, 256, false);
  for (int64_t tile : {64, 67, 256, 1001}) {
    SCOPED_TRACE("tile " + std::to_string(tile));
    const StepsRun gpu = run(chain, Backend::cuda(0), tile, false);
    EXPECT_EQ(test::bytes_diff(gpu.image.view(), cpu.image.view()), "");
    // Otsu's input (the gray image, computed on the GPU) is stored in device
    // memory: the RGB input goes up once (3 bytes a pixel), and neither the
    // histogram nor the threshold after it sends the gray image up again
    // (2 bytes a pixel more when it was stored on the host). Fill-holes adds
    // its bit planes (a quarter of a byte a pixel).
    uint64_t up = 0;
    for (int k = 0; k < 4; ++k) up += gpu.report[k]["bytes_uploaded"].get<uint64_t>();
    EXPECT_TRUE(gpu.report[1]["stored_input"].get<bool>());
    EXPECT_GE(up, static_cast<uint64_t>(3 * w * h));
    EXPECT_LT(up, static_cast<uint64_t>(3.6 * static_cast<double>(w * h))) << gpu.report.dump();
    const nlohmann::json& edt = gpu.report[4];
    EXPECT_TRUE(edt["values"]["result_on_device"].get<bool>()) << edt.dump();
    // Down: the u8 output only, not the EDT's 4 bytes a pixel.
    EXPECT_LT(edt["bytes_downloaded"].get<uint64_t>() + gpu.report[5]["bytes_downloaded"].get<uint64_t>() +
                  gpu.report[6]["bytes_downloaded"].get<uint64_t>(),
              static_cast<uint64_t>(2 * w * h))
        << gpu.report.dump();
  }
  // Kept, read by the writer, or read by a barrier: brought down.
  const StepsRun kept = run(chain, Backend::cuda(0), 256, true);
  EXPECT_EQ(test::bytes_diff(kept.image.view(), cpu.image.view()), "");
  EXPECT_FALSE(kept.report[4]["values"]["result_on_device"].get<bool>());
  const std::vector<std::string> last(chain.begin(), chain.begin() + 5);
  const StepsRun written = run(last, Backend::cuda(0), 256, false);
  EXPECT_EQ(test::bytes_diff(written.image.view(), run(last, Backend{}, 256, false).image.view()), "");
  EXPECT_FALSE(written.report[4]["values"]["result_on_device"].get<bool>());
  std::vector<std::string> to_barrier(chain.begin(), chain.begin() + 5);
  to_barrier.push_back("edt --threshold 3");
  const StepsRun barrier = run(to_barrier, Backend::cuda(0), 256, false);
  EXPECT_EQ(test::bytes_diff(barrier.image.view(), run(to_barrier, Backend{}, 256, false).image.view()), "");
  EXPECT_FALSE(barrier.report[4]["values"]["result_on_device"].get<bool>());
}

// Fill-holes of a mask that GPU steps compute (Otsu's threshold, an invert)
// takes it in device memory: packed and solved there, only the result's bit
// plane comes down; the EDT after it takes that plane up as bits. The output
// equals the CPU's at every tile size. A mask that is not binary (a Gaussian
// of it) is solved the other way, with the same result as the CPU's.
TEST(PipelineCudaResidency, FillHolesMaskStaysOnTheDevice) {
  TW_REQUIRE_GPU();
  const std::vector<std::string> chain = {"filter gray",   "filter threshold --otsu",
                                          "filter invert", "fill-holes",
                                          "edt",           "filter convert --type u8 --from 0 --to 40"};
  const int64_t w = 1001, h = 777;
  const auto input = test::slide(w, h, 5);
  auto run = [&](const std::vector<std::string>& steps, const Backend& b, int64_t tile) {
    return run_steps(steps, input, b, tile);
  };
  const auto cpu = run(chain, Backend{}, 256);
  const uint64_t plane = static_cast<uint64_t>(bit_plane_pitch(w)) * (h + 2) * 4;
  for (int64_t tile : {64, 67, 256, 1001}) {
    SCOPED_TRACE("tile " + std::to_string(tile));
    const auto gpu = run(chain, Backend::cuda(0), tile);
    EXPECT_EQ(test::bytes_diff(gpu.image.view(), cpu.image.view()), "");
    const nlohmann::json& fill = gpu.report[3];
    EXPECT_TRUE(fill["values"]["gpu_device_input"].get<bool>()) << fill.dump();
    // Down: the result's bit plane, not the mask's bytes.
    EXPECT_LE(gpu.report[2]["bytes_downloaded"].get<uint64_t>() + fill["bytes_downloaded"].get<uint64_t>(), plane)
        << gpu.report.dump();
    const nlohmann::json& edt = gpu.report[4];
    EXPECT_TRUE(edt["values"]["bits_input"].get<bool>()) << edt.dump();
    EXPECT_LE(edt["bytes_uploaded"].get<uint64_t>(), plane) << edt.dump();
  }
  // Not binary: the grey kernel solves it whole, from the chain's result in
  // device memory as well.
  const std::vector<std::string> grey = {"filter gray", "filter gaussian --sigma 2", "fill-holes"};
  const auto grey_gpu = run(grey, Backend::cuda(0), 256);
  EXPECT_EQ(test::bytes_diff(grey_gpu.image.view(), run(grey, Backend{}, 256).image.view()), "");
  EXPECT_FALSE(grey_gpu.report[2]["values"]["gpu_binary_kernel"].get<bool>());
  EXPECT_TRUE(grey_gpu.report[2]["values"]["gpu_whole_image"].get<bool>());
}

// A grey wavefront step (h-dome) whose input GPU steps compute: its input
// stays in device memory (stored there, since h-dome reads it twice), the
// marker is made there, the whole image is solved in one kernel run, and
// only the result comes down: nothing goes up but the chain's input, where
// the tile wavefront sent every tile up on every visit. Equal to the CPU's at
// every tile size, and out of core.
TEST(PipelineCudaResidency, GreyWavefrontOnDeviceResidentImages) {
  TW_REQUIRE_GPU();
  const std::vector<std::string> chain = {"filter gray", "filter gaussian --sigma 2", "hdome --h 20",
                                          "filter threshold --value 5"};
  const int64_t w = 1001, h = 777;
  const auto input = test::slide(w, h, 6);
  auto run = [&](const Backend& b, int64_t tile, size_t memory) { return run_steps(chain, input, b, tile, memory); };
  const auto cpu = run(Backend{}, 256, 0);
  for (int64_t tile : {64, 67, 256, 1001}) {
    SCOPED_TRACE("tile " + std::to_string(tile));
    const auto gpu = run(Backend::cuda(0), tile, 0);
    EXPECT_EQ(test::bytes_diff(gpu.image.view(), cpu.image.view()), "");
    const nlohmann::json& dome = gpu.report[2];
    EXPECT_TRUE(dome["values"]["gpu_whole_image"].get<bool>()) << dome.dump();
    EXPECT_TRUE(dome["values"]["gpu_device_input"].get<bool>()) << dome.dump();
    EXPECT_TRUE(dome["stored_input"].get<bool>()) << dome.dump();
    EXPECT_EQ(dome["values"]["tile_visits"].get<int64_t>(), 1) << dome.dump();
    // Up: the RGB input of the chain that makes the stored input, once (3
    // bytes a pixel); the tile wavefront sent 2 bytes a pixel more per visit.
    EXPECT_LT(dome["bytes_uploaded"].get<uint64_t>(), static_cast<uint64_t>(3.1 * static_cast<double>(w * h)))
        << dome.dump();
    // The dome (input minus reconstruction) is made on the device and stays
    // there: the threshold after it reads it there, sending nothing up.
    EXPECT_EQ(gpu.report[3]["bytes_uploaded"].get<uint64_t>(), 0u) << gpu.report[3].dump();
  }
  const auto small = run(Backend::cuda(0), 64, static_cast<size_t>(w * h * 3) / 9);
  EXPECT_EQ(test::bytes_diff(small.image.view(), cpu.image.view()), "") << "out of core";
  // The dome as the output (the writer reads it on the host): made on the
  // device, brought down once, the CPU's.
  const std::vector<std::string> last = {"filter gray", "filter gaussian --sigma 2", "hdome --h 20"};
  const auto cpu_dome = run_steps(last, input, Backend{}, 256);
  for (int64_t tile : {64, 256}) {
    const auto gpu = run_steps(last, input, Backend::cuda(0), tile);
    EXPECT_EQ(test::bytes_diff(gpu.image.view(), cpu_dome.image.view()), "") << "tile " << tile;
    EXPECT_TRUE(gpu.report[2]["values"]["gpu_whole_image"].get<bool>()) << gpu.report[2].dump();
  }
}

// A slide of JPEG tiles read by GPU steps: the CPU only entropy-decodes the
// tiles, the device does the rest, and the pixels are the CPU decoder's —
// at 4:2:0 and 4:4:4, gray, coarse and fine quality, odd sizes, every tile
// size of the run, and out of core. Tiles the GPU cannot finish (RGB-coded
// JPEG) and other codecs are read as before. A corrupt tile gives the CPU's
// one-line error.
TEST(PipelineCudaResidency, JpegInputDecodedTheSplitWay) {
  TW_REQUIRE_GPU();
  test::TempDir tmp;
  struct Case {
    PixelFormat fmt;
    int64_t w, h;
    int tile, quality;
    uint16_t compression;
    bool ycbcr, noise, split;
  };
  int n = 0;
  for (const Case& c : {Case{kRgb8, 1000, 613, 256, 90, COMPRESSION_JPEG, true, false, true},
                        Case{kRgb8, 700, 530, 128, 100, COMPRESSION_JPEG, true, true, true},
                        Case{kRgb8, 517, 300, 64, 20, COMPRESSION_JPEG, true, false, true},
                        Case{kGray8, 1000, 613, 256, 95, COMPRESSION_JPEG, false, true, true},
                        Case{kGray8, 300, 333, 16, 75, COMPRESSION_JPEG, false, false, true},
                        Case{kRgb8, 600, 400, 128, 90, COMPRESSION_JPEG, false, false, false},
                        Case{kRgb8, 600, 400, 128, 90, COMPRESSION_ADOBE_DEFLATE, false, false, false}}) {
    const Image img = c.noise ? test::random_image(c.fmt, c.w, c.h, 11) : test::pattern_image(c.fmt, c.w, c.h, 5);
    test::TiffSpec spec;
    spec.tile_w = spec.tile_h = c.tile;
    spec.compression = c.compression;
    spec.jpeg_quality = c.quality;
    spec.jpeg_ycbcr = c.ycbcr;
    const std::string path = tmp.file("in" + std::to_string(n++) + ".tif");
    test::write_tiff(path, img.view(), spec);
    const SourcePtr input = open_source(path);
    const std::string what = path + " " + c.fmt.str() + " q" + std::to_string(c.quality);
    std::vector<std::string> steps = {"filter gaussian --sigma 2", "filter invert"};
    if (c.fmt == kRgb8) steps.insert(steps.begin(), "filter gray");
    auto run = [&](const Backend& b, int64_t tile, size_t memory, int64_t* split) {
      StepsRun r = run_steps(steps, input, b, tile, memory);
      if (split) *split = r.split_tiles < 0 ? -1 : r.split_tiles + r.gpu_tiles;  // on either side
      return std::move(r.image);
    };
    const Image cpu = run(Backend{}, 256, 0, nullptr);
    for (int64_t tile : {64, 67, 256, 1024}) {
      int64_t split = 0;
      const Image gpu = run(Backend::cuda(0), tile, 0, &split);
      EXPECT_EQ(test::bytes_diff(gpu.view(), cpu.view()), "") << what << " tile " << tile;
      EXPECT_EQ(split > 0, c.split) << what << ": " << split;
      if (!c.split) {
        EXPECT_EQ(split, -1) << what << ": not wrapped";
      }
    }
    int64_t split = 0;
    const Image small = run(Backend::cuda(0), 64, static_cast<size_t>(c.w * c.h * 3) / 9 + (4u << 20), &split);
    EXPECT_EQ(test::bytes_diff(small.view(), cpu.view()), "") << what << " out of core";
  }
  // A damaged tile: the one-line error the CPU gives, no output.
  const std::string bad = tmp.file("bad.tif");
  ASSERT_EQ(test::run_cli({"pyramid", "synthetic:1800x1500", bad, "--min-size", "100000", "--device", "cpu"}).exit_code,
            0);
  test::damage_tiff_tile(bad, 30);  // row 4 of 6
  for (const char* dev : {"cpu", "cuda"}) {
    const std::string out = tmp.file(std::string("out-") + dev + ".tif");
    const auto r = test::run_cli({"run", bad, out, "filter gray", "filter gaussian --sigma 2", "--device", dev});
    EXPECT_EQ(r.exit_code, 1) << dev << ": " << r.err;
    EXPECT_NE(r.err.find("corrupt JPEG"), std::string::npos) << dev << ": " << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << dev << ": " << r.err;
    EXPECT_FALSE(std::ifstream(out).good()) << dev;
  }
  // The command's report says how many tiles took the split way.
  const std::string good = tmp.file("good.tif"), out = tmp.file("g.tif"), rep = tmp.file("g.json");
  ASSERT_EQ(
      test::run_cli({"pyramid", "synthetic:1800x1500", good, "--min-size", "100000", "--device", "cpu"}).exit_code, 0);
  const auto r = test::run_cli(
      {"run", good, out, "filter gray", "filter gaussian --sigma 2", "--device", "cuda", "--report", rep});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = test::read_json(rep);
  EXPECT_EQ(j["input_gpu_split_jpeg_tiles"][0].get<int64_t>(), 0) << j.dump();
  EXPECT_EQ(j["input_gpu_entropy_decoded_tiles"][0].get<int64_t>(), 8 * 6) << j.dump();
  // A device budget too small for level 0's coefficients: the CPU
  // entropy-decodes each read's tiles, to the same file.
  const std::string out2 = tmp.file("g2.tif"), rep2 = tmp.file("g2.json"), ref = tmp.file("ref.tif");
  ASSERT_EQ(test::run_cli({"run", good, out2, "filter gray", "filter gaussian --sigma 2", "--device", "cuda",
                           "--gpu-memory", "16M", "--report", rep2})
                .exit_code,
            0);
  const nlohmann::json j2 = test::read_json(rep2);
  EXPECT_GE(j2["input_gpu_split_jpeg_tiles"][0].get<int64_t>(), 8 * 6) << j2.dump();
  EXPECT_EQ(j2["input_gpu_entropy_decoded_tiles"][0].get<int64_t>(), 0) << j2.dump();
  ASSERT_EQ(test::run_cli({"run", good, ref, "filter gray", "filter gaussian --sigma 2", "--device", "cpu"}).exit_code,
            0);
  EXPECT_EQ(test::bytes_diff(test::read_tiled(*open_source(out2), 256).view(),
                             test::read_tiled(*open_source(ref), 256).view()),
            "");
  EXPECT_EQ(test::bytes_diff(test::read_tiled(*open_source(out), 256).view(),
                             test::read_tiled(*open_source(ref), 256).view()),
            "");
}

// Two GPU chains reading one JPEG input (as the nuclei's gray and
// hematoxylin do) read its coefficients from the device, where the GPU
// entropy-decoded each tile once — and the result is the CPU's, out of core
// (host memory) too.
TEST(PipelineCudaResidency, TwoChainsDecodeTheInputOnce) {
  TW_REQUIRE_GPU();
  test::TempDir tmp;
  const std::string path = jpeg_tiff(tmp, kRgb8, 1000, 613, 128, 90, 5);
  const SourcePtr input = open_source(path);
  const std::vector<std::string> steps = {"a: filter gray input", "b: filter gray input", "c: filter invert b",
                                          "d: filter gaussian a --sigma 2", "math min d c"};
  const Image cpu = run_steps(steps, input, Backend{}, 256).image;
  const int64_t tiles = 8 * 5;
  for (int64_t tile : {64, 256}) {
    const StepsRun gpu = run_steps(steps, open_source(path), Backend::cuda(0), tile);
    EXPECT_EQ(test::bytes_diff(gpu.image.view(), cpu.view()), "") << "tile " << tile;
    // Every tile entropy-decoded once, on the GPU; none on the CPU.
    EXPECT_EQ(gpu.split_tiles, 0) << "tile " << tile;
    EXPECT_EQ(gpu.gpu_tiles, tiles) << "tile " << tile;
  }
  const StepsRun small = run_steps(steps, open_source(path), Backend::cuda(0), 64, 8u << 20);
  EXPECT_EQ(test::bytes_diff(small.image.view(), cpu.view()), "") << "out of core";
  EXPECT_EQ(small.gpu_tiles, tiles);
}

// With level 0's coefficients on the device, host reads of the input (the
// nuclei's features measuring the slide's pixels) are made on the GPU too:
// the CPU decoder's pixels, exactly, for RGB 4:2:0 and gray, reads across
// tiles, at odd places, a pixel, the edges, in many pieces,
// and partly outside the image (the border rule's pixels there).
TEST(PipelineCudaResidency, HostReadsOfAResidentInputAreTheCpuDecoders) {
  TW_REQUIRE_GPU();
  test::TempDir tmp;
  for (const PixelFormat fmt : {kRgb8, kGray8}) {
    SCOPED_TRACE(fmt.str());
    const std::string path = jpeg_tiff(tmp, fmt, 2100, 613, 64, 85, 11);
    const SourcePtr cpu = open_source(path);
    const SourcePtr gpu = make_split_jpeg_input(open_source(path), 0, size_t{1} << 30, size_t{64} << 20);
    ASSERT_EQ(split_jpeg_gpu_decoded_tiles(*gpu), 33 * 10);
    for (const Rect& r : {Rect(0, 0, 2100, 613), Rect(37, 61, 1500, 200), Rect(1033, 599, 1, 1),
                          Rect(2036, 576, 64, 37), Rect(-5, -3, 300, 40), Rect(2000, 600, 200, 30)}) {
      for (const Border& b : {Border{}, Border{BorderMode::kConstant, 7}}) {
        const Image want = cpu->read(0, r, b), got = gpu->read(0, r, b);
        EXPECT_EQ(test::bytes_diff(got.view(), want.view()), "") << r.x << "," << r.y << " " << r.w << "x" << r.h;
      }
    }
    // In many pieces under a small budget (256 KB: a few rows of the
    // width each).
    set_gpu_piece_budget(0);
    EXPECT_EQ(test::bytes_diff(gpu->read(0, Rect(0, 0, 2100, 613)).view(), cpu->read(0, Rect(0, 0, 2100, 613)).view()),
              "");
    set_gpu_piece_budget(size_t{1} << 30);
    // Every read stays the CPU's way where nothing is resident: a 1-KB
    // device budget.
    const SourcePtr off = make_split_jpeg_input(open_source(path), 0, 1024, size_t{64} << 20);
    EXPECT_EQ(split_jpeg_gpu_decoded_tiles(*off), 0);
    EXPECT_EQ(
        test::bytes_diff(off->read(0, Rect(37, 61, 1500, 200)).view(), cpu->read(0, Rect(37, 61, 1500, 200)).view()),
        "");
  }
}

// A math step joining two GPU chains (as the nuclei's `math mask h8 tissue`)
// runs on the GPU as part of one fused read: neither chain's result comes
// down, the Gaussian after it takes its result on the device, and only the
// output comes down; the RGB input goes up once per chain. The output is
// the CPU's at every tile size and out of core. With a host input (the
// slide's gray stored: read by three steps) the step uploads it and still
// gives the CPU's bytes.
// The overlay of a JPEG slide (the nuclei's last step) runs on the GPU from
// the slide's tiles decoded the split way, its labels sent up from the
// host: the CPU's pixels, RGB and gray, at every tile size and out of core.
TEST(PipelineCudaResidency, OverlayOfAJpegSlide) {
  TW_REQUIRE_GPU();
  test::TempDir tmp;
  for (const PixelFormat fmt : {kRgb8, kGray8}) {
    const std::string path = jpeg_tiff(tmp, fmt, 1000, 613, 128, 90, 7);
    std::vector<std::string> steps = {"t: filter threshold g --value 120", "l: label t", "overlay input l"};
    steps.insert(steps.begin(), fmt == kRgb8 ? "g: filter gray input" : "g: filter invert input");
    const Image cpu = run_steps(steps, open_source(path), Backend{}, 256).image;
    for (int64_t tile : {64, 67, 256}) {
      SCOPED_TRACE(fmt.str() + ", tile " + std::to_string(tile));
      const StepsRun gpu = run_steps(steps, open_source(path), Backend::cuda(0), tile);
      EXPECT_EQ(test::bytes_diff(gpu.image.view(), cpu.view()), "");
      EXPECT_EQ(gpu.report[3]["values"]["op_device"], "cuda:0") << gpu.report[3].dump();
      EXPECT_GT(gpu.gpu_tiles, 0);
      // Its pieces run on worker threads; the step still counts their bytes:
      // the RGB result down, the u32 labels (with halos) up.
      EXPECT_GE(gpu.report[3]["bytes_downloaded"].get<double>(), 3.0 * 1000 * 613) << gpu.report[3].dump();
      EXPECT_GE(gpu.report[3]["bytes_uploaded"].get<double>(), 4.0 * 1000 * 613) << gpu.report[3].dump();
    }
    const StepsRun small = run_steps(steps, open_source(path), Backend::cuda(0), 64, 4u << 20);
    EXPECT_EQ(test::bytes_diff(small.image.view(), cpu.view()), "") << fmt.str() << ", out of core";
  }
}

TEST(PipelineCudaResidency, MathJoinsTwoGpuChains) {
  TW_REQUIRE_GPU();
  const int64_t w = 1000, h = 777;
  const double pixels = static_cast<double>(w * h);
  const auto input = test::slide(w, h, 6);
  const std::vector<std::string> steps = {"g: filter gray input", "t: filter threshold g --value 120",
                                          "v: filter invert g", "m: math mask v t", "filter gaussian m --sigma 2"};
  const Image cpu = run_steps(steps, input, Backend{}, 256).image;
  for (int64_t tile : {64, 67, 256}) {
    SCOPED_TRACE("tile " + std::to_string(tile));
    const StepsRun gpu = run_steps(steps, input, Backend::cuda(0), tile);
    EXPECT_EQ(test::bytes_diff(gpu.image.view(), cpu.view()), "");
    EXPECT_EQ(gpu.report[3]["values"]["op_device"], "cuda:0") << gpu.report[3].dump();
    const double up = static_cast<double>(sum_of(gpu.report, "bytes_uploaded"));
    const double down = static_cast<double>(sum_of(gpu.report, "bytes_downloaded"));
    EXPECT_GE(down, pixels) << "the gray output comes down";
    EXPECT_LT(down, 1.2 * pixels) << "only the output comes down: " << gpu.report.dump();
    EXPECT_GE(up, 2 * 3 * pixels) << "the RGB input goes up for each chain";
    EXPECT_LT(up, 1.5 * 2 * 3 * pixels) << gpu.report.dump();
  }
  const StepsRun small = run_steps(steps, input, Backend::cuda(0), 64, 2u << 20);
  EXPECT_EQ(test::bytes_diff(small.image.view(), cpu.view()), "") << "out of core";

  const std::vector<std::string> mixed = {"g: filter gray input", "s: filter gaussian g --sigma 3",
                                          "d: math subtract g s", "e: math max d g", "filter gaussian e --sigma 1"};
  const Image cpu_mixed = run_steps(mixed, input, Backend{}, 256).image;
  for (int64_t tile : {67, 256}) {
    const StepsRun gpu = run_steps(mixed, input, Backend::cuda(0), tile);
    EXPECT_EQ(test::bytes_diff(gpu.image.view(), cpu_mixed.view()), "") << "tile " << tile;
    EXPECT_EQ(gpu.report[3]["values"]["op_device"], "cuda:0");
  }
}

// The watershed of an image and markers that GPU chains compute, without a
// mask: its labels are the CPU's at every tile size, and out of core. (On
// 16 cores this once failed at random, the CPU's reference wrong: the
// watershed's tile loads shared buffers with loads taken up while a read
// waited; Watershed.InputsWhoseReadsRunParallelLoops pins that down.)
TEST(PipelineCudaResidency, WatershedOfAGpuChain) {
  TW_REQUIRE_GPU();
  const auto input = test::slide(777, 555, 4);
  const std::vector<std::string> steps = {"g: filter gray input", "s: filter gaussian g --sigma 3",
                                          "m: filter threshold s --value 150", "b: filter invert s", "watershed b m"};
  const Image cpu = run_steps(steps, input, Backend{}, 256).image;
  for (int64_t tile : {64, 67, 256}) {
    const StepsRun gpu = run_steps(steps, input, Backend::cuda(0), tile);
    EXPECT_EQ(test::bytes_diff(gpu.image.view(), cpu.view()), "") << "tile " << tile;
    EXPECT_GT(gpu.report[3]["bytes_uploaded"].get<uint64_t>(), 0u) << "the image's step ran on the GPU";
  }
  const StepsRun small = run_steps(steps, input, Backend::cuda(0), 64, 2u << 20);
  EXPECT_EQ(test::bytes_diff(small.image.view(), cpu.view()), "") << "out of core";
}

}  // namespace
}  // namespace tw
