// `tilewave features LABELS OUTPUT.csv|.geojson`: the per-object table of a
// label image (jobs/features/features_job.hpp; docs/features.md).
#include <tbb/global_control.h>

#include <chrono>
#include <cstdio>
#include <iostream>
#include <optional>

#include "engine/json.hpp"
#include "engine/memory.hpp"
#include "engine/output_file.hpp"
#include "io/open_source.hpp"
#include "jobs/features/features_job.hpp"
#include "tools/tilewave/args.hpp"
#include "tools/tilewave/commands.hpp"
#include "tools/tilewave/output.hpp"

namespace tw::cli {

int cmd_features(int argc, char** argv) {
  const auto t_start = std::chrono::steady_clock::now();
  std::vector<OptionSpec> specs = {
      {"intensity", "IMAGE", "also the mean and std of IMAGE's channels per object (and hematoxylin for 8-bit RGB)"},
      {"mpp", "F", "microns per pixel of LABELS (default: from its file; without either, no µm columns)"},
      {"no-hematoxylin", "", "leave out the hematoxylin columns of an RGB --intensity"},
      {"reader", "R", "auto, tiff or openslide (default auto)"},
  };
  for (auto& c : common_option_specs()) specs.push_back(c);
  Args a("features", argc, argv, 2, specs);
  if (a.has("help")) {
    std::cout << "usage: tilewave features LABELS OUTPUT.csv|OUTPUT.geojson [--intensity IMAGE] [--mpp F]\n\n"
                 "One row per object of a u32 label image (an object: all pixels of one non-zero\n"
                 "label): label, area, centroid, bounding box, perimeter, equivalent diameter,\n"
                 "major/minor axis, orientation, eccentricity, solidity (scikit-image's\n"
                 "regionprops definitions), in pixels and, with a pixel size, in microns; with\n"
                 "--intensity, the mean and std of each channel. GeoJSON: a FeatureCollection\n"
                 "QuPath imports as detections, each object's outline along its pixels' edges.\n"
                 "Rows come in order of each object's first pixel (label order for `tilewave\n"
                 "label`'s labels). docs/features.md has the definitions.\n\noptions:\n"
              << a.options_help();
    return 0;
  }
  CommonOptions common = parse_common(a);
  const auto& pos = a.positional();
  if (pos.size() != 2)
    throw UsageError("features takes LABELS and OUTPUT.csv|OUTPUT.geojson (see tilewave features --help)");
  std::optional<tbb::global_control> threads;
  if (common.threads > 0)
    threads.emplace(tbb::global_control::max_allowed_parallelism, static_cast<size_t>(common.threads));
  FeaturesOptions opt;
  opt.mpp = a.real("mpp", 0, 1e-6, 1e6);
  opt.hematoxylin = !a.has("no-hematoxylin");
  const std::string intensity_path = a.str("intensity");
  std::vector<std::string> inputs = {pos[0]};
  if (!intensity_path.empty()) inputs.push_back(intensity_path);
  check_paths(pos[1], common, inputs);
  const ReaderChoice reader = parse_reader(a.str("reader", "auto"));
  const SourcePtr labels = open_source(pos[0], reader);
  SourcePtr intensity;
  if (!intensity_path.empty()) intensity = open_source(intensity_path, reader);
  reserve_input_memory(*labels, common);
  if (intensity) reserve_input_memory(*intensity, common);
  ExecContext ctx = context_of(common);
  const FeaturesStats st = write_features(labels, intensity, pos[1], opt, ctx);
  std::printf("wrote %s: %lld objects from %lld x %lld labels, %s, %.2f s\n", pos[1].c_str(),
              static_cast<long long>(st.objects), static_cast<long long>(st.width), static_cast<long long>(st.height),
              format_bytes(st.bytes).c_str(), st.seconds);
  if (!common.report.empty()) {
    nlohmann::json o = ctx.report;
    o["command"] = "features";
    o["input"] = pos[0];
    o["output"] = pos[1];
    o["peak_rss_bytes"] = peak_rss_bytes();
    o["total_seconds"] = std::chrono::duration<double>(std::chrono::steady_clock::now() - t_start).count();
    write_small_file(common.report, dump_json(o, 2) + "\n");
  }
  return 0;
}

}  // namespace tw::cli
