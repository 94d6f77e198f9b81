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
#include "io/open_source.hpp"
#include "jobs/pyramid/pyramid_job.hpp"
#include "tools/tilewave/args.hpp"
#include "tools/tilewave/commands.hpp"
#include "tools/tilewave/output.hpp"

namespace tw::cli {
namespace {

constexpr const char* kSampleInput = "synthetic:16384x12288";
constexpr const char* kSampleOutput = "tilewave-sample.tif";

std::vector<OptionSpec> pyramid_specs() {
  std::vector<OptionSpec> s = output_option_specs();
  s.push_back({"recompress", "", "re-encode level 0 even when the input's tiles could be copied unchanged"});
  s.push_back({"no-associated", "", "leave out the input's associated images (label, macro, ...)"});
  s.push_back({"reader", "R", "auto, tiff or openslide (default auto)"});
  for (auto& c : common_option_specs()) s.push_back(c);
  return s;
}

std::string base_name(const std::string& p) {
  const auto s = p.find_last_of('/');
  return s == std::string::npos ? p : p.substr(s + 1);
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
                 "With --device auto or cuda the pass starts on the CPU while CUDA starts up\n"
                 "(~0.3 s) and the GPU takes the levels over as soon as it is ready (same pixels;\n"
                 "--report's gpu_from_row says from which row of level 0).\n"
                 "Without INPUT and OUTPUT it pyramids the built-in sample slide ("
              << kSampleInput << ")\ninto ./" << kSampleOutput << ".\n\noptions:\n"
              << a.options_help();
    return 0;
  }
  // The pass starts on the CPU while CUDA starts up; the GPU joins it.
  CommonOptions common = parse_common(a, /*defer_device=*/true);
  const auto& pos = a.positional();
  if (pos.size() == 1) throw UsageError("pyramid needs an OUTPUT.tif after INPUT (see tilewave pyramid --help)");
  if (pos.size() > 2)
    throw UsageError("pyramid takes INPUT and OUTPUT.tif, not " + std::to_string(pos.size()) + " arguments");
  const bool sample = pos.empty();
  const std::string input = sample ? kSampleInput : pos[0];
  const std::string output = sample ? kSampleOutput : pos[1];

  std::optional<tbb::global_control> threads;
  if (common.threads > 0)
    threads.emplace(tbb::global_control::max_allowed_parallelism, static_cast<size_t>(common.threads));

  check_paths(output, common, {input});
  const SourcePtr src = open_source(input, parse_reader(a.str("reader", "auto")));
  reserve_input_memory(*src, common);
  OutputRequest req;
  req.src = src.get();
  req.output = output;
  req.description = "Tilewave pyramid of " + base_name(src->info().path);
  req.keep_vendor_description = true;
  req.allow_passthrough = true;
  req.copy_associated = !a.has("no-associated");
  const double open_s = since(t_start);
  const OutputResult r = write_output(req, a, common);
  const double mp = double(r.stats.level_sizes[0].first) * double(r.stats.level_sizes[0].second) / 1e6;
  char what[64];
  std::snprintf(what, sizeof what, "%.2f s (%.0f MP/s)", r.stats.seconds, mp / std::max(r.stats.seconds, 1e-9));
  print_written(req, r, what);
  if (sample) {
    std::printf(
        "the input was the built-in sample slide (%s). To look at the pyramid:\n"
        "  openslide-show-properties %s            # its levels, as OpenSlide sees them\n"
        "  vips thumbnail %s sample-thumb.jpg 1024  # a quick overview image\n"
        "  or open %s in QuPath or any OpenSlide-based viewer\n",
        kSampleInput, output.c_str(), output.c_str(), output.c_str());
  }
  write_report(common.report, "pyramid", input, output, r, open_s, since(t_start));
  return 0;
}

}  // namespace tw::cli
