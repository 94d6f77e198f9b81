#include "tools/tilewave/output.hpp"

#include <cstdlib>

#include <tbb/global_control.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <sstream>
#include <thread>

#include "engine/json.hpp"
#include "engine/memory.hpp"
#include "engine/output_file.hpp"
#include "engine/trace.hpp"
#include "io/tiff/tiff_pyramid_sink.hpp"

namespace tw::cli {
namespace {

// Level 0's tiles are copied as stored when they are what we would write:
// same codec and tile size (JPEG quality is the input's; the subsampling
// only matters if the user asked for one).
bool can_pass_through(const RawTileFormat* raw, const EncodeSettings& enc, bool subsampling_given) {
  if (!raw || raw->codec != enc.codec || raw->tile_w != enc.tile_w || raw->tile_h != enc.tile_h) return false;
  if (raw->bits_per_sample != static_cast<int>(sample_bytes(enc.fmt.type) * 8) ||
      raw->samples_per_pixel != enc.fmt.channels)
    return false;
  if (enc.codec == Codec::kJpeg && subsampling_given && enc.fmt.channels == 3) {
    const uint16_t want = enc.subsampling == ChromaSubsampling::k420 ? 2 : 1;
    if (raw->photometric != 6 || raw->subsampling_h != want || raw->subsampling_v != want) return false;
  }
  return true;
}

// Copies the source's associated images into the sink on its own thread.
class AssociatedCopier {
 public:
  AssociatedCopier(const TileSource& src, TiffPyramidSink& sink, bool enabled, size_t memory) {
    if (!enabled || src.info().associated.empty()) return;
    thread_ = std::thread([this, &src, &sink, memory] {
      try {
        for (const auto& assoc : src.info().associated) {
          // A broken or huge label must not cost the whole pyramid. Reading
          // one takes its RGBA decode and the RGB copy: 7 bytes a pixel.
          const double bytes = 7.0 * static_cast<double>(assoc.width) * static_cast<double>(assoc.height);
          if (bytes > static_cast<double>(memory / 4)) {
            std::fprintf(stderr, "tilewave: warning: associated image '%s' left out: %lldx%lld is too large for "
                                 "--memory %s\n", assoc.name.c_str(), static_cast<long long>(assoc.width),
                         static_cast<long long>(assoc.height), format_bytes(memory).c_str());
            continue;
          }
          try {
            sink.add_associated(assoc.name, src.read_associated(assoc.name));
          } catch (const InputError& e) {
            std::fprintf(stderr, "tilewave: warning: associated image '%s' left out: %s\n", assoc.name.c_str(),
                         e.what());
          }
        }
      } catch (...) {
        error_ = std::current_exception();
      }
    });
  }
  ~AssociatedCopier() {
    if (thread_.joinable()) thread_.join();
  }
  // Waits for the copy; rethrows what went wrong beyond a bad image.
  void join() {
    if (thread_.joinable()) thread_.join();
    if (error_) std::rethrow_exception(error_);
  }

 private:
  std::thread thread_;
  std::exception_ptr error_;
};

}  // namespace

std::vector<OptionSpec> output_option_specs() {
  return {
      {"compression", "C", "jpeg, deflate, zstd, lzw or none (default: jpeg for 8-bit gray/RGB images, "
                           "deflate for op results and other pixel types)"},
      {"quality", "Q", "JPEG quality 1..100 (default 90)"},
      {"subsampling", "S", "JPEG chroma subsampling 420 or 444 (default 420, at any quality)"},
      {"level", "N", "deflate (1..12) or zstd (1..22) effort"},
      {"no-predictor", "", "no predictor for deflate/zstd/lzw"},
      {"min-size", "N", "pyramid levels until both sides are <= N pixels (default 256)"},
      {"gpu-jpeg", "M", "auto, on or off: with --device cuda, decode passed-through JPEG tiles partly on the GPU "
                        "(nvJPEG); auto does so when few CPU threads are available"},
  };
}

void check_paths(const std::string& output, const CommonOptions& common, const std::vector<std::string>& inputs) {
  check_output_path(output, inputs);
  if (common.report.empty()) return;
  if (common.report == output || same_file(common.report, output))
    throw UsageError("--report " + common.report + " is the OUTPUT file");
  check_output_path(common.report, inputs);
}

OutputResult write_output(const OutputRequest& req, const Args& a, const CommonOptions& common) {
  const TileSource& src = *req.src;
  const SourceInfo& info = src.info();
  EncodeSettings enc;
  enc.fmt = info.fmt;
  const bool jpeg_ok = info.fmt.type == SampleType::kU8 && (info.fmt.channels == 1 || info.fmt.channels == 3);
  enc.codec = a.has("compression") ? parse_codec(a.str("compression"))
                                   : (jpeg_ok && !req.lossless_default ? Codec::kJpeg : Codec::kDeflate);
  enc.quality = static_cast<int>(a.integer("quality", 90, 1, 100));
  enc.subsampling = parse_subsampling(a.str("subsampling", "420"));
  enc.level = static_cast<int>(a.integer("level", -1, 1, 22));
  enc.predictor = !a.has("no-predictor");
  enc.tile_w = enc.tile_h = common.tile;
  enc.validate();

  PyramidJobOptions job;
  job.tile = common.tile;
  job.min_size = a.integer("min-size", 256, 1, int64_t{1} << 31);
  job.memory = common.memory;
  job.scratch_near = req.output;
  job.backend = common.backend;
  job.gpu_memory = common.gpu_memory;
  const std::string gpu_jpeg = a.str("gpu-jpeg", "auto");
  if (gpu_jpeg == "auto") job.gpu_jpeg = PyramidJobOptions::GpuJpeg::kAuto;
  else if (gpu_jpeg == "on") job.gpu_jpeg = PyramidJobOptions::GpuJpeg::kOn;
  else if (gpu_jpeg == "off") job.gpu_jpeg = PyramidJobOptions::GpuJpeg::kOff;
  else throw UsageError("--gpu-jpeg must be auto, on or off, not '" + gpu_jpeg + "'");
  // Test hook (tests/engine/pyramid_cuda_test.cpp): the GPU joins the pass at
  // this level-0 row, with its JPEG decoder, whatever the timing.
  if (const char* row = std::getenv("TW_TEST_GPU_JOIN_ROW")) job.gpu_join_row = std::atoll(row);

  const auto sizes = plan_pyramid_levels(src, job.min_size);
  const RawTileFormat* raw = src.raw_format(0);
  OutputResult r;
  r.passthrough = req.allow_passthrough && !a.has("recompress") && can_pass_through(raw, enc, a.has("subsampling"));
  job.passthrough = r.passthrough;
  const RawTileFormat ours = tiff_format_for(enc);
  std::vector<PyramidLevelSpec> specs;
  for (size_t l = 0; l < sizes.size(); ++l)
    specs.push_back({sizes[l].first, sizes[l].second, l == 0 && r.passthrough ? *raw : ours});
  PyramidWriterOptions wopt;
  wopt.mpp_x = info.mpp_x;
  wopt.mpp_y = info.mpp_y;
  wopt.description = req.description;
  wopt.software = "Tilewave 0.1.0";
  TiffPyramidSink sink(req.output, enc, specs, wopt);

  {
    // Labels and macros are read and compressed beside the pass rather than
    // after it: LZW runs on one thread (~0.1 s for a scanner's macro).
    AssociatedCopier assoc(src, sink, req.copy_associated, common.memory);
    r.stats = run_pyramid(src, sink, job);
    TraceSpan span("associated-join", 0);
    assoc.join();
  }
  TraceSpan span("finish", 0);
  const auto t_finish = std::chrono::steady_clock::now();
  sink.finish();
  r.finish_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t_finish).count();
  r.bytes = sink.bytes_written();
  return r;
}

void print_written(const OutputRequest& req, const OutputResult& r, const std::string& what) {
  const auto& sz = r.stats.level_sizes;
  std::printf("wrote %s: %zu levels from %lld x %lld (%s), %s, %s%s\n", req.output.c_str(), sz.size(),
              static_cast<long long>(sz[0].first), static_cast<long long>(sz[0].second),
              req.src->info().fmt.str().c_str(), format_bytes(r.bytes).c_str(), what.c_str(),
              r.passthrough ? ", level 0 tiles copied unchanged" : "");
}

void write_report(const std::string& path, const std::string& command, const std::string& input,
                  const std::string& output, const OutputResult& r, double open_s, double total_s,
                  const nlohmann::json& extra) {
  if (path.empty()) return;
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
      {"gpu_fdct_tiles", st.gpu_fdct_tiles},
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
