// Registration of `tilewave filter canny` (both variants): neighbourhood
// ops, then hysteresis on the wavefront engine (jobs/canny/canny_job.hpp).
#include "jobs/canny/canny_job.hpp"
#include "kernels/gaussian/gaussian.hpp"
#include "kernels/point/filter_support.hpp"

namespace tw::ops {

void register_canny(OpRegistry& r) {
  OpDef op = filter_op("canny", OpCategory::kWholeImage);
  op.summary = "Canny edges (255), hysteresis across tiles: OpenCV's (classic) or ITK 5's (itk)";
  op.usage = "--low L --high H [--sigma 1.4] | --variant itk [--variance V | --sigma S] [--low 4] [--high 7]";
  op.help =
      "classic: the image smoothed as gaussian does, then Canny as OpenCV's Canny with\n"
      "L2gradient. itk: ITK 5's CannyEdgeDetectionImageFilter (discrete Gaussian of\n"
      "variance V in float, zero crossings of the 2nd directional derivative where the\n"
      "3rd is <= 0, gradient magnitude > low linked, 8-connected, to > high; thresholds\n"
      "not swapped). Edges link across any number of tiles.";
  op.params = {ParamSpec::real("sigma", "S", 0, kMaxGaussianSigma, "1.4", "Gaussian sigma (itk: variance S^2)"),
               ParamSpec::real("low", "L", 0, 1e6, "", "low threshold on the gradient magnitude (itk: default 4)"),
               ParamSpec::real("high", "H", 0, 1e6, "", "high threshold (itk: default 7)"),
               ParamSpec::choice("variant", "V", {"classic", "itk"}, "classic", "classic (OpenCV) or itk (ITK 5)"),
               ParamSpec::real("variance", "V", 0, 400, "", "itk: Gaussian variance (default 1.96)")};
  op.validate = [](const OpParams& p) {
    if (p.choice("variant") == "classic") {
      if (p.has("variance")) throw ParamError("--variance is for --variant itk; classic takes --sigma");
      if (!p.has("low") || !p.has("high")) throw ParamError("canny needs --low L and --high H");
    } else if (p.has("variance") && p.has("sigma")) {
      throw ParamError("canny --variant itk takes --variance or --sigma, not both");
    }
  };
  op.takes = "8-bit gray or RGB (RGB through BT.601 luma)";
  op.output_format = [](const std::vector<ImageType>& in, const OpParams&) {
    require_u8_gray_or_rgb(in[0], "canny");
    return kGray8;
  };
  op.run = [](const std::vector<SourceP>& in, const OpParams& p, ExecContext& ctx) {
    const SourceP gray = to_gray(in[0], ctx.backend);
    const ReconstructJob job = reconstruct_job(ctx);
    CannyResult canny;
    if (p.choice("variant") == "classic") {
      CannyParams cp;
      cp.sigma = p.real_in("sigma", 1e-3, kMaxGaussianSigma);
      cp.low = p.real("low"), cp.high = p.real("high");
      canny = canny_classic(gray, cp, job);
    } else {
      CannyItkParams ip;  // defaults: the seed thesis's sigma 1.4, upper 7, lower 4
      if (p.has("sigma")) ip.variance = p.real("sigma") * p.real("sigma");
      if (p.has("variance")) ip.variance = p.real("variance");
      if (p.has("low")) ip.lower = p.real("low");
      if (p.has("high")) ip.upper = p.real("high");
      canny = canny_itk(gray, ip, job);
    }
    // The hysteresis store is read once, in order, by the writer.
    if (canny.hysteresis.store) {
      canny.hysteresis.store->set_cache_bytes(ctx.memory / 4);
      ctx.take_memory(ctx.memory / 4);
    } else {
      ctx.take_memory(canny.hysteresis.held_bytes);
    }
    OpResult res = filter_result("canny", canny.edges, ctx);
    res.values["tile_visits"] = canny.hysteresis.wavefront.tile_visits;
    res.values["wavefront_seconds"] = canny.hysteresis.wavefront.seconds;
    return res;
  };
  r.add(std::move(op));
}

}  // namespace tw::ops
