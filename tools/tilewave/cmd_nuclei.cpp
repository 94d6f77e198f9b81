// tilewave nuclei SLIDE OUTDIR: whole-slide nuclei segmentation (docs/nuclei.md)
// — the default pipeline (jobs/nuclei/nuclei.pipeline) or the user's, with
// sizes in microns turned into pixels by the slide's resolution; labels.tif
// and overlay.tif from one streaming run, then nuclei.csv and
// nuclei.geojson from the labels.
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <iostream>
#include <sstream>

#include "engine/output_file.hpp"
#include "io/open_source.hpp"
#include "io/vendor_metadata.hpp"
#include "jobs/features/features_job.hpp"
#include "jobs/nuclei/nuclei_params.hpp"
#include "tools/tilewave/commands.hpp"
#include "tools/tilewave/output.hpp"
#include "tools/tilewave/pipeline_command.hpp"

namespace tw::cli {
namespace {

std::vector<OptionSpec> nuclei_specs() {
  std::vector<OptionSpec> s = {
      {"pipeline", "FILE", "run this pipeline instead of the default (a copy of jobs/nuclei/nuclei.pipeline)"},
      {"mpp", "F", "microns per pixel of the slide's level 0 (default: the slide's own; needed when it has none)"},
      {"sigma-um", "S", "Gaussian smoothing of the hematoxylin, microns (default 0.35)"},
      {"min-area-um2", "A", "smallest nucleus, square microns (default 10)"},
      {"max-area-um2", "A", "largest nucleus, square microns (default 400)"},
      {"split-um", "H",
       "touching nuclei are split where their distance peaks rise H microns above the saddle (default 0.05)"},
      {"dist-sigma-um", "S", "Gaussian smoothing of the distance transform before the markers, microns (default 1)"},
      {"background-um", "R",
       "radius of the background's opening, microns, for pipelines with background correction "
       "(jobs/nuclei/nuclei-tophat.pipeline; default 16)"},
      {"hematoxylin-max", "OD", "hematoxylin optical density mapped to 255 (default 0.15)"},
      {"glass-gray", "G", "gray above G is glass, not tissue (default 220)"},
      {"quality", "Q", "JPEG quality of overlay.tif 1..100 (default 90)"},
      {"min-size", "N", "pyramid levels until both sides are <= N pixels (default 256)"},
  };
  for (auto& o : common_option_specs()) s.push_back(o);
  return s;
}

constexpr const char* kHelp =
    "usage: tilewave nuclei SLIDE OUTDIR [OPTIONS]\n"
    "\n"
    "Segments the nuclei of a whole H&E slide, out of core, and writes into OUTDIR:\n"
    "  labels.tif      the nuclei as u32 labels 1..N (raster order), a lossless pyramid\n"
    "  nuclei.csv      one row per nucleus: label, area, centroid, box, shape, intensity\n"
    "  nuclei.geojson  the same as QuPath detections (outline polygons, measurements)\n"
    "  overlay.tif     the slide with the nuclei's outlines, for a viewer\n"
    "The steps (tissue, hematoxylin, smoothing, Otsu, fill holes, area filter,\n"
    "distance transform, markers, watershed) are the pipeline file\n"
    "jobs/nuclei/nuclei.pipeline; sizes are given in microns and scaled by the slide's\n"
    "resolution (--mpp when it has none). docs/nuclei.md has the details.\n"
    "\noptions:\n";

// OUTDIR made if missing (true); anything there but a folder is refused.
bool make_outdir(const std::string& dir) {
  struct stat st {};
  if (::stat(dir.c_str(), &st) == 0) {
    if (!S_ISDIR(st.st_mode)) throw InputError("nuclei: " + dir + " exists and is not a folder");
    return false;
  }
  if (::mkdir(dir.c_str(), 0777) != 0)
    throw InputError("nuclei: cannot make the folder " + dir + ": " + std::strerror(errno));
  return true;
}

// The step named `labels` must make what labels.tif holds and the feature
// tables measure, checked with the plan, before any work: a pipeline whose
// labels step makes gray pixels would otherwise write labels.tif and the
// overlay and fail only when measuring.
void check_labels_step(const Pipeline& p, const PipelinePlan& plan) {
  const int slot = find_result(p, plan, "labels");
  const PixelFormat f = plan.steps[static_cast<size_t>(slot) - plan.input_names.size()].out;
  if (f != PixelFormat{SampleType::kU32, 1})
    throw InputError("nuclei: the step named 'labels' makes " + f.str() +
                     "; it must make u32 labels (end it with label, objects or watershed)");
}

NucleiParams params_of(const Args& a) {
  NucleiParams p;
  p.sigma_um = a.real("sigma-um", p.sigma_um, 1e-6, 50);
  p.min_area_um2 = a.real("min-area-um2", p.min_area_um2, 0, 1e7);
  p.max_area_um2 = a.real("max-area-um2", p.max_area_um2, 1e-6, 1e7);
  p.split_um = a.real("split-um", p.split_um, 1e-6, 100);
  p.dist_sigma_um = a.real("dist-sigma-um", p.dist_sigma_um, 1e-6, 50);
  p.background_um = a.real("background-um", p.background_um, 1e-6, 1e4);
  p.hematoxylin_max = a.real("hematoxylin-max", p.hematoxylin_max, 1e-6, 5);
  p.glass_gray = static_cast<int>(a.integer("glass-gray", p.glass_gray, 0, 255));
  return p;
}

}  // namespace

int cmd_nuclei(int argc, char** argv) {
  const auto t0 = std::chrono::steady_clock::now();
  Args a("nuclei", argc, argv, 2, nuclei_specs());
  if (a.has("help")) {
    std::cout << kHelp << a.options_help();
    return 0;
  }
  CommonOptions common = parse_common(a);
  const auto& pos = a.positional();
  if (pos.size() != 2) throw UsageError("nuclei takes SLIDE OUTDIR (see tilewave nuclei --help)");
  const std::string slide = pos[0], dir = pos[1];
  const NucleiParams params = params_of(a);

  // The resolution first: every size in the pipeline depends on it.
  // The header is read now also when --mpp is given: a missing or unreadable
  // slide is refused before OUTDIR is made.
  const SourceInfo info = open_source(slide)->info();
  double mpp = info.mpp_x;
  if (a.has("mpp")) {
    mpp = a.real("mpp", 0, 0.01, 100);
  } else if (!(mpp > 0)) {
    throw InputError("nuclei: " + no_pixel_size(slide) + "; give --mpp F");
  } else if (info.mpp_y > 0 && std::abs(info.mpp_y - mpp) > 1e-3 * mpp) {
    // The steps are isotropic (a Gaussian, a distance, areas in pixels):
    // sized from one side they would be wrong along the other.
    std::ostringstream o;
    o << "nuclei: " << slide << " has pixels of " << mpp << " x " << info.mpp_y
      << " µm, not square; the steps need square pixels (give --mpp F to take them as F x F µm)";
    throw InputError(o.str());
  }
  const auto vars = nuclei_variables(params, mpp, common.backend.is_cuda());
  std::vector<std::string> steps;
  if (a.has("pipeline")) {
    for (const auto& line : read_pipeline_file(a.str("pipeline"))) steps.push_back(substitute_variables(line, vars));
  } else {
    steps = nuclei_steps(default_nuclei_pipeline(), vars);
  }

  const std::string labels = dir + "/labels.tif", csv = dir + "/nuclei.csv", geojson = dir + "/nuclei.geojson";
  PipelineCommand c;
  c.command = "nuclei";
  c.start = t0;
  c.inputs.push_back({"input", slide});
  c.output = dir + "/overlay.tif";
  c.pipeline = parse_pipeline(steps);
  if (!std::any_of(c.pipeline.steps.begin(), c.pipeline.steps.end(),
                   [](const PipelineStep& s) { return s.name == "labels"; }))
    throw InputError("nuclei: the pipeline has no step named 'labels' (the nuclei it writes and measures)");
  const bool made = make_outdir(dir);
  c.keeps.push_back({"labels", labels});
  c.other_outputs = {csv, geojson};
  if (a.has("mpp")) c.input_mpp = mpp;
  if (a.has("pipeline")) c.read_files.push_back(a.str("pipeline"));
  c.check_plan = [&](const PipelinePlan& plan) { check_labels_step(c.pipeline, plan); };
  c.with_outputs = [&](nlohmann::json& report, const std::vector<std::shared_ptr<const TileSource>>& kept,
                       const std::vector<std::shared_ptr<const TileSource>>& inputs, size_t memory) {
    FeaturesOptions fo;
    fo.mpp = a.has("mpp") ? mpp : 0;
    nlohmann::json features = nlohmann::json::object();
    // Both tables from one pass over the labels (its seconds are both's),
    // read from the run's store of them (the same pixels as labels.tif,
    // which would be inflated again), with the slide's resolution. The
    // slide is read through the run's reader: its cache of decoded tiles
    // (a share of --memory the run set apart) holds what the overlay's pass
    // decoded last, all of a small slide.
    ExecContext ctx = context_of(common);
    ctx.memory = memory;
    const std::vector<std::string> paths = {csv, geojson};
    std::shared_ptr<const TileSource> slide_source = inputs.empty() ? nullptr : inputs.at(0);
    if (!slide_source) slide_source = open_source(slide);
    std::shared_ptr<const TileSource> label_source = kept.at(0);
    if (!label_source) label_source = open_source(labels);
    const FeaturesStats st = write_features(label_source, slide_source, paths, fo, ctx);
    for (size_t i = 0; i < paths.size(); ++i) {
      const std::string& path = paths[i];
      std::cout << "wrote " << path << ": " << st.objects << " nuclei, " << st.output_bytes[i] << " bytes, "
                << st.seconds << " s\n";
      features[path == csv ? "csv" : "geojson"] = {
          {"path", path}, {"objects", st.objects}, {"bytes", st.output_bytes[i]}, {"seconds", st.seconds}};
    }
    report["features"] = features;
    report["mpp"] = mpp;
    nlohmann::json v = nlohmann::json::object();
    for (const auto& [k, val] : vars) v[k] = val;
    report["variables"] = v;
  };
  try {
    return run_pipeline_command(c, a, common);
  } catch (...) {
    // A folder this run made goes again, with what the run wrote into it
    // (the images are whole files by then; the tables are not written yet).
    if (made) {
      for (const std::string& f : {labels, c.output, csv, geojson}) ::unlink(f.c_str());
      ::rmdir(dir.c_str());
    }
    throw;
  }
}

}  // namespace tw::cli
