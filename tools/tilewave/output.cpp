#include "tools/tilewave/output.hpp"

#include <tbb/global_control.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <thread>

#include "engine/cuda/device.hpp"
#include "engine/json.hpp"
#include "engine/memory.hpp"
#include "engine/output_file.hpp"
#include "engine/output_folder.hpp"
#include "engine/trace.hpp"
#include "io/open_sink.hpp"
#include "io/zarr/zarr_sink.hpp"
#include "jobs/write_result.hpp"
#include "tools/tilewave/slide_ranks.hpp"

namespace tw::cli {
namespace {}  // namespace

std::vector<OptionSpec> output_option_specs() {
  return {
      {"compression", "C",
       "jpeg, deflate, zstd, lzw or none (default: jpeg for 8-bit gray/RGB images, "
       "deflate for op results and other pixel types)"},
      {"quality", "Q", "JPEG quality 1..100 (default 90)"},
      {"subsampling", "S", "JPEG chroma subsampling 420 or 444 (default 420, at any quality)"},
      {"level", "N", "deflate (1..12; default 6, u32 labels 4) or zstd (1..22; default 3) effort"},
      {"no-predictor", "", "no predictor for deflate/zstd/lzw"},
      {"min-size", "N", "pyramid levels until both sides are <= N pixels (default 256; Deep Zoom: 1)"},
      {"format", "F", "tiff, ome-tiff, dzi or zarr (default: by OUTPUT's name: .ome.tif, .dzi, .zarr, else tiff)"},
      {"overlap", "N", "Deep Zoom: pixels each tile shares with its neighbours (default 1)"},
      {"gpu-jpeg", "M",
       "auto, on or off: with --device cuda, decode passed-through JPEG tiles partly on the GPU "
       "(nvJPEG); auto does so when few CPU threads are available"},
  };
}

void check_paths(const std::string& output, const CommonOptions& common, const std::vector<std::string>& inputs,
                 OutputKind kind) {
  // An OME-Zarr store is a folder: it may replace only an earlier store.
  if (kind == OutputKind::kPyramid && layout_for(output) == Layout::kZarr)
    check_output_folder(output, zarr_store_kind(), inputs);
  else
    check_output_path(output, inputs);
  if (common.report.empty()) return;
  if (common.report == output || same_file(common.report, output))
    throw UsageError("--report " + common.report + " is the OUTPUT file");
  check_output_path(common.report, inputs);
}

OutputSpec output_spec(const OutputRequest& req, const Args& a) {
  OutputSpec out;
  out.path = req.output;
  out.format = a.str("format");
  if (!out.format.empty()) layout_for(out.path, out.format);  // a bad name is a usage error, now
  out.layout_tile = a.integer("tile", 0, 1, 16384);
  out.overlap = static_cast<int>(a.integer("overlap", 1, 0, 1024));
  out.description = req.description;
  out.keep_vendor_description = req.keep_vendor_description;
  if (a.has("compression")) out.codec = parse_codec(a.str("compression"));
  out.lossless = req.lossless_default;
  out.quality = static_cast<int>(a.integer("quality", 90, 1, 100));
  out.subsampling = parse_subsampling(a.str("subsampling", "420"));
  out.subsampling_given = a.has("subsampling");
  out.level = static_cast<int>(a.integer("level", -1, 1, 22));
  out.predictor = !a.has("no-predictor");
  out.min_size = a.integer("min-size", 256, 1, int64_t{1} << 31);
  const std::string gpu_jpeg = a.str("gpu-jpeg", "auto");
  if (gpu_jpeg == "auto")
    out.gpu_jpeg = PyramidJobOptions::GpuJpeg::kAuto;
  else if (gpu_jpeg == "on")
    out.gpu_jpeg = PyramidJobOptions::GpuJpeg::kOn;
  else if (gpu_jpeg == "off")
    out.gpu_jpeg = PyramidJobOptions::GpuJpeg::kOff;
  else
    throw UsageError("--gpu-jpeg must be auto, on or off, not '" + gpu_jpeg + "'");
  out.allow_passthrough = req.allow_passthrough && !a.has("recompress");
  out.copy_associated = req.copy_associated;
  out.progress_label = req.progress_label;
  // Test hook (tests/engine/pyramid_cuda_test.cpp): the GPU joins the pass at
  // this level-0 row, with its JPEG decoder, whatever the timing.
  if (const char* row = std::getenv("TW_TEST_GPU_JOIN_ROW")) out.gpu_join_row = std::atoll(row);
  return out;
}

OutputResult write_output(const OutputRequest& req, const Args& a, const CommonOptions& common) {
  const OutputSpec out = output_spec(req, a);
  ExecContext ctx = context_of(common);
  const WriteResult w = write_pyramid(*req.src, out, ctx);
  OutputResult r;
  r.stats = w.stats;
  r.bytes = w.bytes;
  r.finish_seconds = w.finish_seconds;
  r.passthrough = w.passthrough;
  return r;
}

ExecContext context_of(const CommonOptions& c) {
  ExecContext ctx;
  ctx.backend = c.backend;
  ctx.threads = c.threads;
  ctx.memory = c.memory;
  ctx.gpu_memory = c.gpu_memory;
  ctx.tile = c.tile;
  ctx.ranks = slide_ranks();
  // A slide split over MPI ranks with --device cuda: each rank takes a GPU
  // of its host in turn, as the ranks of a batch do.
  if (ctx.ranks && ctx.backend.is_cuda() && ctx.backend.spelled == "cuda") {
    const size_t gpus = cuda_devices().size();
    if (gpus) ctx.backend.device = static_cast<int>(static_cast<size_t>(ctx.ranks->local_rank()) % gpus);
  }
  return ctx;
}

void print_written(const OutputRequest& req, const OutputResult& r, const std::string& what) {
  if (!is_lead_rank()) return;  // a slide split over ranks: rank 0 says it
  const auto& sz = r.stats.level_sizes;
  std::printf("wrote %s: %zu levels from %lld x %lld (%s), %s, %s%s\n", req.output.c_str(), sz.size(),
              static_cast<long long>(sz[0].first), static_cast<long long>(sz[0].second),
              req.src->info().fmt.str().c_str(), format_bytes(r.bytes).c_str(), what.c_str(),
              r.passthrough ? ", level 0 tiles copied unchanged" : "");
}

void write_report(const std::string& path, const std::string& command, const std::string& input,
                  const std::string& output, const OutputResult& r, double open_s, double total_s,
                  const nlohmann::json& extra) {
  if (path.empty() || !is_lead_rank()) return;
  const PyramidStats& st = r.stats;
  const size_t threads = tbb::global_control::active_value(tbb::global_control::max_allowed_parallelism);
  nlohmann::json levels = nlohmann::json::array();
  for (const auto& [w, h] : st.level_sizes) levels.push_back({w, h});
  nlohmann::json o = {
      {"command", command},
      {"input", input},
      {"output", output},
      {"device", st.backend},
      {"jpeg_decoder", st.jpeg_decoder},
      {"gpu_decoded_bands", st.gpu_decoded_bands},
      {"gpu_idct_bands", st.gpu_idct_bands},
      {"gpu_device_bands", st.gpu_device_bands},
      {"gpu_fdct_tiles", st.gpu_fdct_tiles},
      {"gpu_entropy_tiles", st.gpu_entropy_tiles},
      {"gpu_from_row", st.gpu_from_row},
      {"seconds", st.seconds},
      {"open_seconds", open_s},
      {"finish_seconds", r.finish_seconds},
      {"command_seconds", total_s},
      {"levels", levels},
      {"tiles_encoded", st.tiles_encoded},
      {"tiles_passed_through", st.tiles_passed_through},
      {"pixels_read", st.pixels_in},
      {"bytes_read", st.bytes_read},
      {"bytes_uploaded", st.bytes_uploaded},
      {"bytes_downloaded", st.bytes_downloaded},
      {"bytes_written", r.bytes},
      {"busy_seconds",
       {{"read", st.read_s},
        {"decode", st.decode_s},
        {"upload", st.upload_s},
        {"kernel", st.kernel_s},
        {"download", st.download_s},
        {"reduce_stage", st.reduce_s},
        {"encode", st.encode_s},
        {"write", st.write_s}}},
      {"threads", threads},
      {"tokens", st.tokens},
      {"stripes", st.stripes},
      {"planned_bytes", st.planned_bytes},
      {"planned_device_bytes", st.planned_device_bytes},
      {"peak_rss_bytes", peak_rss_bytes()},
      {"ranks", st.ranks},
      {"shared_levels", st.shared_levels},
      {"merge_seconds", st.merge_s},
  };
  for (const auto& [k, v] : extra.items()) o[k] = v;
  write_small_file(path, dump_json(o, 2) + "\n");
}

void reserve_input_memory(const TileSource& in, CommonOptions& common) {
  const int threads = static_cast<int>(tbb::global_control::active_value(tbb::global_control::max_allowed_parallelism));
  common.memory -= reserve_decode_memory(in, common.memory, threads);
}

void cache_input_reads(const TileSource& in, CommonOptions& common) {
  reserve_input_memory(in, common);
  const size_t bytes = std::min<size_t>(common.memory / 8, size_t{256} << 20);
  in.set_read_cache(bytes);
  common.memory -= bytes;
}

}  // namespace tw::cli
