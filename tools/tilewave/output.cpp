#include "tools/tilewave/output.hpp"

#include <cstdlib>

#include <tbb/global_control.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <thread>

#include "engine/memory.hpp"
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
  AssociatedCopier(const TileSource& src, TiffPyramidSink& sink, bool enabled) {
    if (!enabled || src.info().associated.empty()) return;
    thread_ = std::thread([this, &src, &sink] {
      try {
        for (const auto& assoc : src.info().associated) {
          // A broken or huge label must not cost the whole pyramid.
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
    AssociatedCopier assoc(src, sink, req.copy_associated);
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
                  const std::vector<std::pair<std::string, std::string>>& extra) {
  if (path.empty()) return;
  const PyramidStats& st = r.stats;
  const size_t threads = tbb::global_control::active_value(tbb::global_control::max_allowed_parallelism);
  std::ostringstream o;
  o << "{\n  \"command\": " << json_escape(command) << ",\n  \"input\": " << json_escape(input)
    << ",\n  \"output\": " << json_escape(output) << ",\n  \"device\": " << json_escape(st.backend)
    << ",\n  \"jpeg_decoder\": " << json_escape(st.jpeg_decoder) << ",\n  \"gpu_decoded_bands\": " << st.gpu_decoded_bands
    << ",\n  \"gpu_idct_bands\": " << st.gpu_idct_bands << ",\n  \"gpu_fdct_tiles\": " << st.gpu_fdct_tiles
    << ",\n  \"gpu_from_row\": " << st.gpu_from_row
    << ",\n  \"seconds\": " << st.seconds << ",\n  \"open_seconds\": " << open_s
    << ",\n  \"finish_seconds\": " << r.finish_seconds << ",\n  \"command_seconds\": " << total_s << ",\n  \"levels\": [";
  for (size_t l = 0; l < st.level_sizes.size(); ++l)
    o << (l ? ", " : "") << "[" << st.level_sizes[l].first << ", " << st.level_sizes[l].second << "]";
  o << "],\n  \"tiles_encoded\": " << st.tiles_encoded << ",\n  \"tiles_passed_through\": " << st.tiles_passed_through
    << ",\n  \"pixels_read\": " << st.pixels_in << ",\n  \"bytes_read\": " << st.bytes_read
    << ",\n  \"bytes_uploaded\": " << st.bytes_uploaded << ",\n  \"bytes_downloaded\": " << st.bytes_downloaded
    << ",\n  \"bytes_written\": " << r.bytes << ",\n  \"busy_seconds\": {\"read\": " << st.read_s
    << ", \"decode\": " << st.decode_s << ", \"upload\": " << st.upload_s << ", \"kernel\": " << st.kernel_s
    << ", \"download\": " << st.download_s << ", \"reduce_stage\": " << st.reduce_s << ", \"encode\": " << st.encode_s
    << ", \"write\": " << st.write_s << "},\n  \"threads\": " << threads << ",\n  \"tokens\": " << st.tokens
    << ",\n  \"stripes\": " << st.stripes << ",\n  \"planned_bytes\": " << st.planned_bytes
    << ",\n  \"planned_device_bytes\": " << st.planned_device_bytes
    << ",\n  \"peak_rss_bytes\": " << peak_rss_bytes();
  for (const auto& [k, v] : extra) o << ",\n  " << json_escape(k) << ": " << v;
  o << "\n}\n";
  std::ofstream f(path);
  if (!f || !(f << o.str())) throw InputError("cannot write report " + path);
}

void cache_input_reads(const TileSource& in, CommonOptions& common) {
  const size_t bytes = std::min<size_t>(common.memory / 8, size_t{256} << 20);
  in.set_read_cache(bytes);
  common.memory -= bytes;
}

}  // namespace tw::cli
