// reconstruct, fill-holes, hdome: morphological reconstruction of whole
// slides on the out-of-core wavefront engine.
#include <tbb/global_control.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <limits>
#include <optional>

#include "engine/map_source.hpp"
#include "io/open_source.hpp"
#include "kernels/reconstruct/reconstruct_job.hpp"
#include "tools/tilewave/args.hpp"
#include "tools/tilewave/commands.hpp"
#include "tools/tilewave/output.hpp"

namespace tw::cli {
namespace {

using Clock = std::chrono::steady_clock;

double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

std::vector<OptionSpec> specs(std::vector<OptionSpec> own) {
  for (auto& o : output_option_specs()) own.push_back(o);
  for (auto& o : common_option_specs()) own.push_back(o);
  return own;
}

std::optional<tbb::global_control> thread_limit(const CommonOptions& c) {
  std::optional<tbb::global_control> g;
  if (c.threads > 0) g.emplace(tbb::global_control::max_allowed_parallelism, static_cast<size_t>(c.threads));
  return g;
}

ReconstructJob job_for(const Args& a, const CommonOptions& common, const std::string& output,
                       ReconstructMethod default_method, int default_connectivity) {
  ReconstructJob job;
  job.params.method = parse_reconstruct_method(a.str("method", default_method == ReconstructMethod::kDilation ? "dilation" : "erosion"));
  job.params.connectivity = static_cast<int>(a.integer("connectivity", default_connectivity, 4, 8));
  if (job.params.connectivity != 4 && job.params.connectivity != 8)
    throw UsageError("--connectivity must be 4 or 8");
  job.clip = a.has("clip");
  job.tile = common.tile;
  job.memory = common.memory;
  job.scratch_near = output;
  job.backend = common.backend;
  return job;
}

// The wavefront is done: its result is read once, in order, by the writer,
// which gets most of the budget.
CommonOptions for_output(const CommonOptions& c, const ReconstructResult& r) {
  r.image->set_cache_bytes(c.memory / 4);
  CommonOptions o = c;
  o.memory = c.memory - c.memory / 4;
  return o;
}

nlohmann::json wavefront_report(const ReconstructResult& r) {
  return {{"tiles", r.wavefront.tiles},
          {"tile_visits", r.wavefront.tile_visits},
          {"wavefront_seconds", r.wavefront.seconds},
          {"megapixel_visits", r.gpu.megapixel_visits},
          {"gpu_binary_kernel", r.gpu_binary},  // binary input took the bit-plane kernel
          {"gpu_kernel_seconds", r.gpu.kernel_seconds},
          {"gpu_transfer_seconds", r.gpu.transfer_seconds},
          {"tiles_spilled", r.store.spills},
          {"tiles_reloaded", r.store.loads}};
}

void print_done(const OutputRequest& req, const OutputResult& out, const ReconstructResult& r) {
  char what[160];
  std::snprintf(what, sizeof what, "propagation %.2f s (%lld visits of %lld tiles)", r.wavefront.seconds,
                static_cast<long long>(r.wavefront.tile_visits), static_cast<long long>(r.wavefront.tiles));
  print_written(req, out, what);
}

// The single-channel 8/16-bit max of a format.
double max_value(PixelFormat f) { return f.type == SampleType::kU16 ? 65535.0 : 255.0; }

void require_gray(const TileSource& s, const std::string& what) {
  const PixelFormat f = s.info().fmt;
  if (f.channels != 1 || (f.type != SampleType::kU8 && f.type != SampleType::kU16))
    throw InputError(what + " " + s.info().path + " is " + f.str() + "; this needs 8- or 16-bit single-channel images");
}

// Writes `image` (the reconstruction, or a pixel op over it) as the command's
// pyramidal TIFF, then the summary line and the report.
int finish(const TileSource& image, const std::string& description, const std::string& command, const Args& a,
           const CommonOptions& common, const ReconstructResult& r, const std::string& input,
           const std::string& output, Clock::time_point t0) {
  OutputRequest req;
  req.src = &image;
  req.output = output;
  req.description = description;
  req.lossless_default = true;
  const double open_s = since(t0);
  const OutputResult out = write_output(req, a, for_output(common, r));
  print_done(req, out, r);
  write_report(common.report, command, input, output, out, open_s, since(t0), wavefront_report(r));
  return 0;
}

}  // namespace

int cmd_reconstruct(int argc, char** argv) {
  const auto t0 = Clock::now();
  Args a("reconstruct", argc, argv, 2,
         specs({{"method", "M", "dilation (default) or erosion"},
                {"connectivity", "N", "4 (cross) or 8 (square, default)"},
                {"clip", "", "clip the marker to the mask instead of refusing a marker above it (below, for erosion)"}}));
  if (a.has("help")) {
    std::cout << "usage: tilewave reconstruct MARKER MASK OUTPUT.tif [OPTIONS]\n\n"
                 "Grayscale morphological reconstruction of MARKER under MASK (8- or 16-bit gray),\n"
                 "as scikit-image's morphology.reconstruction computes it, out of core.\n\noptions:\n"
              << a.options_help();
    return 0;
  }
  CommonOptions common = parse_common(a);
  auto threads = thread_limit(common);
  if (a.positional().size() != 3) throw UsageError("reconstruct takes MARKER MASK OUTPUT.tif (see --help)");
  const std::string output = a.positional()[2];
  check_paths(output, common, {a.positional()[0], a.positional()[1]});
  const SourcePtr marker = open_source(a.positional()[0]);
  const SourcePtr mask = open_source(a.positional()[1]);
  cache_input_reads(*marker, common);
  cache_input_reads(*mask, common);
  require_gray(*marker, "the marker");
  require_gray(*mask, "the mask");
  const ReconstructJob job = job_for(a, common, output, ReconstructMethod::kDilation, 8);
  const ReconstructResult r = reconstruct(*marker, *mask, job);
  return finish(*r.image, "Tilewave reconstruction", "reconstruct", a, common, r, a.positional()[1], output, t0);
}

int cmd_fill_holes(int argc, char** argv) {
  const auto t0 = Clock::now();
  Args a("fill-holes", argc, argv, 2,
         specs({{"connectivity", "N", "connectivity of the background: 4 (default, as scipy) or 8"}}));
  if (a.has("help")) {
    std::cout << "usage: tilewave fill-holes INPUT OUTPUT.tif [OPTIONS]\n\n"
                 "Fills holes: regions (of any grey level) not connected to the image border, by\n"
                 "reconstruction by erosion from the border. On a binary image it equals scipy's\n"
                 "ndimage.binary_fill_holes.\n\noptions:\n"
              << a.options_help();
    return 0;
  }
  CommonOptions common = parse_common(a);
  auto threads = thread_limit(common);
  if (a.positional().size() != 2) throw UsageError("fill-holes takes INPUT OUTPUT.tif (see --help)");
  const std::string output = a.positional()[1];
  check_paths(output, common, {a.positional()[0]});
  const SourcePtr in = open_source(a.positional()[0]);
  cache_input_reads(*in, common);
  require_gray(*in, "the input");
  const PixelFormat fmt = in->info().fmt;
  const int64_t W = in->level(0).width, H = in->level(0).height;
  // Marker: the image on its border, the maximum inside.
  const double maxv = max_value(fmt);
  MapSource marker({in.get()}, fmt,
                   [=](const std::vector<const uint8_t*>& rows, uint8_t* out, int64_t x0, int64_t y, int64_t n) {
                     const bool edge_row = y == 0 || y == H - 1;
                     if (fmt.type == SampleType::kU8) {
                       const uint8_t* s = rows[0];
                       for (int64_t i = 0; i < n; ++i) {
                         const int64_t x = x0 + i;
                         out[i] = (edge_row || x == 0 || x == W - 1) ? s[i] : static_cast<uint8_t>(maxv);
                       }
                     } else {
                       const auto* s = reinterpret_cast<const uint16_t*>(rows[0]);
                       auto* o = reinterpret_cast<uint16_t*>(out);
                       for (int64_t i = 0; i < n; ++i) {
                         const int64_t x = x0 + i;
                         o[i] = (edge_row || x == 0 || x == W - 1) ? s[i] : static_cast<uint16_t>(maxv);
                       }
                     }
                   },
                   "fill-holes marker");
  const ReconstructJob job = job_for(a, common, output, ReconstructMethod::kErosion, 4);
  const ReconstructResult r = reconstruct(marker, *in, job);
  return finish(*r.image, "Tilewave fill-holes", "fill-holes", a, common, r, a.positional()[0], output, t0);
}

int cmd_hdome(int argc, char** argv) {
  const auto t0 = Clock::now();
  Args a("hdome", argc, argv, 2,
         specs({{"h", "H", "dome height (required): marker = image - H"},
                {"connectivity", "N", "4 or 8 (default)"}}));
  if (a.has("help")) {
    std::cout << "usage: tilewave hdome INPUT OUTPUT.tif --h H [OPTIONS]\n\n"
                 "The h-dome transform: INPUT minus its reconstruction by dilation from INPUT - H,\n"
                 "which keeps the bright regional peaks (nuclei) that rise at most H above their\n"
                 "surroundings. A pipeline of pixel ops around the wavefront engine, all streamed.\n\noptions:\n"
              << a.options_help();
    return 0;
  }
  CommonOptions common = parse_common(a);
  auto threads = thread_limit(common);
  if (a.positional().size() != 2) throw UsageError("hdome takes INPUT OUTPUT.tif (see --help)");
  if (!a.has("h")) throw UsageError("hdome needs --h H");
  const std::string output = a.positional()[1];
  check_paths(output, common, {a.positional()[0]});
  const SourcePtr in = open_source(a.positional()[0]);
  cache_input_reads(*in, common);
  require_gray(*in, "the input");
  const PixelFormat fmt = in->info().fmt;
  const int64_t h = a.integer("h", 0, 1, static_cast<int64_t>(max_value(fmt)));
  auto sub = [fmt, h](const std::vector<const uint8_t*>& rows, uint8_t* out, int64_t, int64_t, int64_t n) {
    // rows[0] - h, or rows[0] - rows[1]: both saturate at zero.
    for (int64_t i = 0; i < n; ++i) {
      if (fmt.type == SampleType::kU8) {
        const int64_t b = rows.size() > 1 ? rows[1][i] : h;
        out[i] = static_cast<uint8_t>(std::max<int64_t>(0, rows[0][i] - b));
      } else {
        const auto* s = reinterpret_cast<const uint16_t*>(rows[0]);
        const int64_t b = rows.size() > 1 ? reinterpret_cast<const uint16_t*>(rows[1])[i] : h;
        reinterpret_cast<uint16_t*>(out)[i] = static_cast<uint16_t>(std::max<int64_t>(0, s[i] - b));
      }
    }
  };
  MapSource marker({in.get()}, fmt, sub, "hdome marker");
  const ReconstructJob job = job_for(a, common, output, ReconstructMethod::kDilation, 8);
  const ReconstructResult r = reconstruct(marker, *in, job);
  MapSource dome({in.get(), r.image.get()}, fmt, sub, "h-dome");
  return finish(dome, "Tilewave h-dome, h=" + std::to_string(h), "hdome", a, common, r, a.positional()[0], output, t0);
}

}  // namespace tw::cli
