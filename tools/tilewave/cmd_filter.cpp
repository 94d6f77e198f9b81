// filter: the op API's image ops on whole slides (Gaussian, Sobel, Canny,
// point ops, colour deconvolution), written as pyramidal TIFFs.
#include <tbb/global_control.h>

#include <chrono>
#include <cstdio>
#include <iostream>
#include <optional>

#include "engine/ops/reduce.hpp"
#include "engine/ops/run_op.hpp"
#include "io/open_source.hpp"
#include "kernels/canny/canny.hpp"
#include "kernels/canny/canny_itk.hpp"
#include "kernels/gaussian/gaussian.hpp"
#include "kernels/hed/hed.hpp"
#include "kernels/point/point_ops.hpp"
#include "kernels/sobel/sobel.hpp"
#include "kernels/stats/stats.hpp"
#include "tools/tilewave/args.hpp"
#include "tools/tilewave/commands.hpp"
#include "tools/tilewave/output.hpp"

namespace tw::cli {
namespace {

using Clock = std::chrono::steady_clock;
using SourceP = std::shared_ptr<const TileSource>;

double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

const char* kFilterHelp =
    "usage: tilewave filter OP INPUT OUTPUT.tif [OPTIONS]\n\n"
    "Runs an image op over a whole slide, tile by tile (with halos: any tile size gives\n"
    "the whole-image result), and writes a tiled pyramidal TIFF. Input: 8-bit gray or\n"
    "RGB. Ops that need gray convert RGB with ITU-R BT.601 luma as OpenCV does\n"
    "((4899 R + 9617 G + 1868 B + 8192) >> 14).\n\n"
    "ops:\n"
    "  gaussian --sigma S            Gaussian blur, radius ceil(3 S), S in (0, 20], mirror border\n"
    "  sobel [--threshold T]         3x3 gradient magnitude (L2), clipped to 255; or 255 where > T\n"
    "  canny --low L --high H [--sigma 1.4] [--variant classic]\n"
    "                                Canny edges (255) of the image smoothed as gaussian does,\n"
    "                                as OpenCV's Canny with L2gradient; hysteresis across tiles\n"
    "  canny --variant itk [--variance V | --sigma S] [--low 4] [--high 7]\n"
    "                                Canny edges as ITK 5's CannyEdgeDetectionImageFilter: discrete\n"
    "                                Gaussian of variance V (default 1.96 = 1.4^2; S^2 with --sigma)\n"
    "                                in float, zero crossings of the 2nd directional derivative where\n"
    "                                the 3rd is <= 0, gradient magnitude > low linked (8-connected,\n"
    "                                across tiles) to > high; thresholds not swapped\n"
    "  brightness --add N            v + N, saturated (gray or RGB)\n"
    "  contrast --factor F [--center C]  (v - C) * F + C, rounded, saturated (C default 128)\n"
    "  threshold --value T | --otsu  255 where v > T (Otsu: T from the whole-slide histogram)\n"
    "  invert                        255 - v (gray or RGB)\n"
    "  gray                          RGB -> gray (BT.601 luma, as above)\n"
    "  hed                           RGB -> hematoxylin, eosin, DAB optical densities, float32\n"
    "                                (Ruifrok-Johnston, as scikit-image's rgb2hed)\n\noptions:\n";

std::vector<OptionSpec> filter_specs() {
  std::vector<OptionSpec> s = {{"sigma", "S", "Gaussian sigma (gaussian; canny: default 1.4)"},
                               {"threshold", "T", "sobel: output 255 where the magnitude exceeds T"},
                               {"low", "L", "canny: low threshold on the gradient magnitude (itk: default 4)"},
                               {"high", "H", "canny: high threshold (itk: default 7)"},
                               {"variant", "V", "canny: classic (default) or itk"},
                               {"variance", "V", "canny --variant itk: Gaussian variance (default 1.96)"},
                               {"add", "N", "brightness: value added, -255..255"},
                               {"factor", "F", "contrast: gain"},
                               {"center", "C", "contrast: fixed point (default 128)"},
                               {"value", "T", "threshold: 255 where v > T"},
                               {"otsu", "", "threshold: T by Otsu's method on the whole slide"}};
  for (auto& o : output_option_specs()) s.push_back(o);
  for (auto& o : common_option_specs()) s.push_back(o);
  return s;
}

// Gray or RGB ops: the functor template instantiated for the input's channels.
template <template <int> class Op, class Make>
SourceP per_channels(const SourceP& in, const Backend& b, const std::string& name, Make&& make) {
  if (in->info().fmt.channels == 1) return ops::run_op(in, make(Op<1>{}), b, name);
  return ops::run_op(in, make(Op<3>{}), b, name);
}

}  // namespace

int cmd_filter(int argc, char** argv) {
  const auto t0 = Clock::now();
  Args a("filter", argc, argv, 2, filter_specs());
  if (a.has("help")) {
    std::cout << kFilterHelp << a.options_help();
    return 0;
  }
  CommonOptions common = parse_common(a);
  std::optional<tbb::global_control> threads;
  if (common.threads > 0) threads.emplace(tbb::global_control::max_allowed_parallelism, static_cast<size_t>(common.threads));
  if (a.positional().size() != 3) throw UsageError("filter takes OP INPUT OUTPUT.tif (see --help)");
  const std::string op = a.positional()[0], output = a.positional()[2];
  static const char* kOps[] = {"gaussian", "sobel", "canny", "brightness", "contrast", "threshold", "invert", "gray", "hed"};
  if (std::find(std::begin(kOps), std::end(kOps), op) == std::end(kOps))
    throw UsageError("unknown filter op '" + op + "' (see tilewave filter --help)");
  check_paths(output, common, {a.positional()[1]});
  const SourceP in = open_source(a.positional()[1]);
  cache_input_reads(*in, common);
  const PixelFormat f = in->info().fmt;
  if (f.type != SampleType::kU8 || (f.channels != 1 && f.channels != 3))
    throw InputError(in->info().path + " is " + f.str() + "; filter needs 8-bit gray or RGB");
  const Backend& b = common.backend;
  auto gray = [&]() -> SourceP { return f.channels == 1 ? in : ops::run_op(in, kernels::Gray{}, b, "gray (BT.601 luma)"); };
  nlohmann::json extra = nlohmann::json::object();
  SourceP result;
  std::optional<kernels::CannyResult> canny;
  CommonOptions out_common = common;
  if (op == "gaussian") {
    if (!a.has("sigma")) throw UsageError("gaussian needs --sigma S");
    const double sigma = a.real("sigma", 0, 1e-3, kernels::kMaxGaussianSigma);
    if (f.channels == 1) result = ops::run_op(in, kernels::make_gaussian<1>(sigma), b, "gaussian");
    else result = ops::run_op(in, kernels::make_gaussian<3>(sigma), b, "gaussian");
  } else if (op == "sobel") {
    kernels::Sobel s;
    if (a.has("threshold")) s.threshold = static_cast<float>(a.real("threshold", 0, 0, 1e6));
    result = ops::run_op(gray(), s, b, "sobel");
  } else if (op == "canny") {
    const std::string variant = a.str("variant", "classic");
    if (variant != "classic" && variant != "itk")
      throw UsageError("--variant " + variant + ": canny variants are classic and itk");
    ReconstructJob job;
    job.tile = common.tile;
    job.memory = common.memory;
    job.scratch_near = output;
    job.backend = b;
    if (variant == "classic") {
      if (a.has("variance")) throw UsageError("--variance is for --variant itk; classic takes --sigma");
      if (!a.has("low") || !a.has("high")) throw UsageError("canny needs --low L and --high H");
      kernels::CannyParams p;
      p.sigma = a.real("sigma", 1.4, 1e-3, kernels::kMaxGaussianSigma);
      p.low = a.real("low", 0, 0, 1e6), p.high = a.real("high", 0, 0, 1e6);
      canny = kernels::canny_classic(gray(), p, job);
    } else {
      if (a.has("variance") && a.has("sigma")) throw UsageError("canny --variant itk takes --variance or --sigma, not both");
      kernels::CannyItkParams p;  // defaults: the seed thesis's sigma 1.4, upper 7, lower 4
      if (a.has("sigma")) {
        const double sigma = a.real("sigma", 1.4, 0, kernels::kMaxGaussianSigma);
        p.variance = sigma * sigma;
      }
      p.variance = a.real("variance", p.variance, 0, 400);
      p.lower = a.real("low", p.lower, 0, 1e6), p.upper = a.real("high", p.upper, 0, 1e6);
      canny = kernels::canny_itk(gray(), p, job);
    }
    result = canny->edges;
    // The hysteresis store is read once, in order, by the writer.
    canny->hysteresis.image->set_cache_bytes(common.memory / 4);
    out_common.memory = common.memory - common.memory / 4;
    extra["tile_visits"] = canny->hysteresis.wavefront.tile_visits;
    extra["wavefront_seconds"] = canny->hysteresis.wavefront.seconds;
  } else if (op == "brightness") {
    if (!a.has("add")) throw UsageError("brightness needs --add N");
    const int add = static_cast<int>(a.integer("add", 0, -255, 255));
    result = per_channels<kernels::Brightness>(in, b, "brightness", [&](auto o) { o.add = add; return o; });
  } else if (op == "contrast") {
    if (!a.has("factor")) throw UsageError("contrast needs --factor F");
    const float fac = static_cast<float>(a.real("factor", 1, 0, 255));
    const float c = static_cast<float>(a.real("center", 128, 0, 255));
    result = per_channels<kernels::Contrast>(in, b, "contrast", [&](auto o) { o.factor = fac, o.center = c; return o; });
  } else if (op == "threshold") {
    if (a.has("value") == a.has("otsu")) throw UsageError("threshold needs one of --value T and --otsu");
    kernels::Threshold t;
    const SourceP g = gray();
    if (a.has("otsu")) {
      const auto hist = ops::histogram(*g, kernels::ChannelHistogram<1>{}, b, "otsu histogram", common.memory);
      t.t = kernels::otsu_threshold(hist);
      std::cout << "Otsu threshold: " << t.t << "\n";
      extra["otsu_threshold"] = t.t;
    } else {
      t.t = static_cast<int>(a.integer("value", 0, 0, 255));
    }
    result = ops::run_op(g, t, b, "threshold");
  } else if (op == "invert") {
    result = per_channels<kernels::Invert>(in, b, "invert", [](auto o) { return o; });
  } else if (op == "gray") {
    result = gray();
  } else if (op == "hed") {
    if (f.channels != 3) throw InputError(in->info().path + " is gray; hed needs RGB");
    result = ops::run_op(in, kernels::make_hed(), b, "hed");
  }
  OutputRequest req;
  req.src = result.get();
  req.output = output;
  req.description = "Tilewave filter " + op;
  req.lossless_default = true;
  const double open_s = since(t0);
  const OutputResult out = write_output(req, a, out_common);
  print_written(req, out, op + " on " + b.str());
  extra["op_device"] = b.str();
  write_report(common.report, "filter " + op, a.positional()[1], output, out, open_s, since(t0), extra);
  return 0;
}

}  // namespace tw::cli
