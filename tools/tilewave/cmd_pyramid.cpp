#include <sys/stat.h>
#include <tbb/global_control.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>

#include "engine/memory.hpp"
#include "engine/pyramid/pyramid_job.hpp"
#include "io/open_source.hpp"
#include "io/tiff/tiff_pyramid_sink.hpp"
#include "tools/tilewave/args.hpp"
#include "tools/tilewave/commands.hpp"

namespace tw::cli {
namespace {

constexpr const char* kSampleInput = "synthetic:16384x12288";
constexpr const char* kSampleOutput = "tilewave-sample.tif";

std::vector<OptionSpec> pyramid_specs() {
  std::vector<OptionSpec> s = {
      {"compression", "C", "jpeg, deflate, zstd, lzw or none (default: jpeg for 8-bit gray/RGB, else deflate)"},
      {"quality", "Q", "JPEG quality 1..100 (default 90)"},
      {"subsampling", "S", "JPEG chroma subsampling 420 or 444 (default 420, at any quality)"},
      {"level", "N", "deflate (1..12) or zstd (1..22) effort"},
      {"no-predictor", "", "no horizontal predictor for deflate/zstd/lzw"},
      {"min-size", "N", "stop when both sides are <= N pixels (default 256)"},
      {"recompress", "", "re-encode level 0 even when the input's tiles could be copied unchanged"},
      {"no-associated", "", "leave out the input's associated images (label, macro, ...)"},
      {"reader", "R", "auto, tiff or openslide (default auto)"},
      {"gpu-jpeg", "M", "auto, on or off: with --device cuda, decode passed-through JPEG tiles partly on the GPU "
                        "(nvJPEG); auto does so when few CPU threads are available"},
  };
  for (auto& c : common_option_specs()) s.push_back(c);
  return s;
}

bool same_file(const std::string& a, const std::string& b) {
  struct stat sa {}, sb {};
  return ::stat(a.c_str(), &sa) == 0 && ::stat(b.c_str(), &sb) == 0 && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

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

std::string base_name(const std::string& p) {
  const auto s = p.find_last_of('/');
  return s == std::string::npos ? p : p.substr(s + 1);
}

// Seconds outside the streaming pass: opening (input, device), writing the
// directories and associated images, and the whole command.
struct Phases {
  double open, finish, total;
};

void write_report(const std::string& path, const PyramidStats& st, const std::string& input, const std::string& output,
                  uint64_t bytes, const Phases& ph) {
  const size_t threads = tbb::global_control::active_value(tbb::global_control::max_allowed_parallelism);
  std::ostringstream o;
  o << "{\n  \"command\": \"pyramid\",\n  \"input\": " << json_escape(input) << ",\n  \"output\": " << json_escape(output)
    << ",\n  \"device\": " << json_escape(st.backend) << ",\n  \"jpeg_decoder\": " << json_escape(st.jpeg_decoder)
    << ",\n  \"gpu_decoded_bands\": " << st.gpu_decoded_bands << ",\n  \"seconds\": " << st.seconds
    << ",\n  \"open_seconds\": " << ph.open << ",\n  \"finish_seconds\": " << ph.finish
    << ",\n  \"command_seconds\": " << ph.total << ",\n  \"levels\": [";
  for (size_t l = 0; l < st.level_sizes.size(); ++l)
    o << (l ? ", " : "") << "[" << st.level_sizes[l].first << ", " << st.level_sizes[l].second << "]";
  o << "],\n  \"tiles_encoded\": " << st.tiles_encoded << ",\n  \"tiles_passed_through\": " << st.tiles_passed_through
    << ",\n  \"pixels_read\": " << st.pixels_in << ",\n  \"bytes_read\": " << st.bytes_read
    << ",\n  \"bytes_uploaded\": " << st.bytes_uploaded << ",\n  \"bytes_downloaded\": " << st.bytes_downloaded
    << ",\n  \"bytes_written\": " << bytes
    << ",\n  \"busy_seconds\": {\"read\": " << st.read_s << ", \"decode\": " << st.decode_s
    << ", \"upload\": " << st.upload_s << ", \"kernel\": " << st.kernel_s << ", \"download\": " << st.download_s
    << ", \"reduce_stage\": " << st.reduce_s << ", \"encode\": " << st.encode_s << ", \"write\": " << st.write_s
    << "},\n  \"threads\": " << threads << ",\n  \"tokens\": " << st.tokens << ",\n  \"stripes\": " << st.stripes
    << ",\n  \"planned_bytes\": " << st.planned_bytes << ",\n  \"planned_device_bytes\": " << st.planned_device_bytes
    << ",\n  \"peak_rss_bytes\": " << peak_rss_bytes() << "\n}\n";
  std::ofstream f(path);
  if (!f || !(f << o.str())) throw InputError("cannot write report " + path);
}

}  // namespace

int cmd_pyramid(int argc, char** argv) {
  const auto t_start = std::chrono::steady_clock::now();
  auto since = [](std::chrono::steady_clock::time_point t) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
  };
  Args a("pyramid", argc, argv, 2, pyramid_specs());
  if (a.has("help")) {
    std::cout << "usage: tilewave pyramid [INPUT OUTPUT.tif] [OPTIONS]\n\n"
                 "Writes a tiled pyramidal BigTIFF: level 0 is INPUT's full resolution, each next\n"
                 "level the Burt-Adelson REDUCE (5-tap [1 4 6 4 1]/16 Gaussian, mirrored border,\n"
                 "every other pixel) of the one above, until both sides are <= --min-size.\n"
                 "Without INPUT and OUTPUT it pyramids the built-in sample slide ("
              << kSampleInput << ")\ninto ./" << kSampleOutput << ".\n\noptions:\n"
              << a.options_help();
    return 0;
  }
  const CommonOptions common = parse_common(a);
  const auto& pos = a.positional();
  if (pos.size() == 1) throw UsageError("pyramid needs an OUTPUT.tif after INPUT (see tilewave pyramid --help)");
  if (pos.size() > 2) throw UsageError("pyramid takes INPUT and OUTPUT.tif, not " + std::to_string(pos.size()) + " arguments");
  const bool sample = pos.empty();
  const std::string input = sample ? kSampleInput : pos[0];
  const std::string output = sample ? kSampleOutput : pos[1];

  std::optional<tbb::global_control> threads;
  if (common.threads > 0) threads.emplace(tbb::global_control::max_allowed_parallelism, static_cast<size_t>(common.threads));

  const int64_t min_size = a.integer("min-size", 256, 1, int64_t{1} << 31);
  const int quality = static_cast<int>(a.integer("quality", 90, 1, 100));
  const int level = static_cast<int>(a.integer("level", -1, 1, 22));

  const SourcePtr src = open_source(input, parse_reader(a.str("reader", "auto")));
  if (!sample && same_file(input, output)) throw InputError("OUTPUT " + output + " is the INPUT file");
  const SourceInfo& info = src->info();

  EncodeSettings enc;
  enc.fmt = info.fmt;
  const bool jpeg_ok = info.fmt.type == SampleType::kU8 && (info.fmt.channels == 1 || info.fmt.channels == 3);
  enc.codec = a.has("compression") ? parse_codec(a.str("compression")) : (jpeg_ok ? Codec::kJpeg : Codec::kDeflate);
  enc.quality = quality;
  enc.subsampling = parse_subsampling(a.str("subsampling", "420"));
  enc.level = level;
  enc.predictor = !a.has("no-predictor");
  enc.tile_w = enc.tile_h = common.tile;
  enc.validate();

  const auto sizes = plan_pyramid_levels(*src, min_size);
  const RawTileFormat* raw = src->raw_format(0);
  const bool passthrough = !a.has("recompress") && can_pass_through(raw, enc, a.has("subsampling"));
  const RawTileFormat ours = tiff_format_for(enc);
  std::vector<PyramidLevelSpec> specs;
  for (size_t l = 0; l < sizes.size(); ++l)
    specs.push_back({sizes[l].first, sizes[l].second, l == 0 && passthrough ? *raw : ours});

  PyramidWriterOptions wopt;
  wopt.mpp_x = info.mpp_x;
  wopt.mpp_y = info.mpp_y;
  wopt.description = "Tilewave pyramid of " + base_name(info.path);
  wopt.software = "Tilewave 0.1.0";
  TiffPyramidSink sink(output, enc, specs, wopt);

  PyramidJobOptions job;
  job.tile = common.tile;
  job.min_size = min_size;
  job.memory = common.memory;
  job.passthrough = passthrough;
  job.scratch_near = output;
  job.backend = common.backend;
  job.gpu_memory = common.gpu_memory;
  const std::string gpu_jpeg = a.str("gpu-jpeg", "auto");
  if (gpu_jpeg == "auto") job.gpu_jpeg = PyramidJobOptions::GpuJpeg::kAuto;
  else if (gpu_jpeg == "on") job.gpu_jpeg = PyramidJobOptions::GpuJpeg::kOn;
  else if (gpu_jpeg == "off") job.gpu_jpeg = PyramidJobOptions::GpuJpeg::kOff;
  else throw UsageError("--gpu-jpeg must be auto, on or off, not '" + gpu_jpeg + "'");
  const double open_s = since(t_start);
  const PyramidStats st = run_pyramid(*src, sink, job);
  const auto t_finish = std::chrono::steady_clock::now();

  if (!a.has("no-associated")) {
    for (const auto& assoc : info.associated) {
      // A broken or huge label must not cost the whole pyramid.
      try {
        sink.add_associated(assoc.name, src->read_associated(assoc.name));
      } catch (const InputError& e) {
        std::fprintf(stderr, "tilewave: warning: associated image '%s' left out: %s\n", assoc.name.c_str(), e.what());
      }
    }
  }
  sink.finish();
  const double finish_s = since(t_finish);

  const double mp = static_cast<double>(sizes[0].first) * static_cast<double>(sizes[0].second) / 1e6;
  std::printf("wrote %s: %zu levels from %lld x %lld (%s), %s, %.2f s (%.0f MP/s)%s\n", output.c_str(), sizes.size(),
              static_cast<long long>(sizes[0].first), static_cast<long long>(sizes[0].second), info.fmt.str().c_str(),
              format_bytes(sink.bytes_written()).c_str(), st.seconds, mp / std::max(st.seconds, 1e-9),
              passthrough ? ", level 0 tiles copied unchanged" : "");
  if (sample) {
    std::printf(
        "the input was the built-in sample slide (%s). To look at the pyramid:\n"
        "  openslide-show-properties %s            # its levels, as OpenSlide sees them\n"
        "  vips thumbnail %s sample-thumb.jpg 1024  # a quick overview image\n"
        "  or open %s in QuPath or any OpenSlide-based viewer\n",
        kSampleInput, output.c_str(), output.c_str(), output.c_str());
  }
  if (!common.report.empty())
    write_report(common.report, st, input, output, sink.bytes_written(), {open_s, finish_s, since(t_start)});
  return 0;
}

}  // namespace tw::cli
