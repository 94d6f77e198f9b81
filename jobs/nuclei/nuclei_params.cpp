#include "jobs/nuclei/nuclei_params.hpp"

#include <cmath>
#include <cstdio>
#include <sstream>
#include <utility>

#include "engine/op_params.hpp"
#include "jobs/pipeline/pipeline.hpp"
#include "kernels/gaussian/gaussian.hpp"

namespace tw {
namespace {

std::string number(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

void require(bool ok, const std::string& what) {
  if (!ok) throw ParamError("nuclei: " + what);
}

}  // namespace

std::map<std::string, std::string> nuclei_variables(const NucleiParams& p, double mpp, bool cuda) {
  require(std::isfinite(mpp) && mpp >= 0.01 && mpp <= 100,
          "the resolution must be 0.01..100 microns per pixel, not " + number(mpp));
  require(p.sigma_um > 0 && p.sigma_um <= 50, "--sigma-um must be in (0, 50]");
  require(p.min_area_um2 >= 0 && p.max_area_um2 > p.min_area_um2 && p.max_area_um2 <= 1e7,
          "--min-area-um2 and --max-area-um2 need 0 <= min < max <= 1e7");
  require(p.split_um > 0 && p.split_um <= 100, "--split-um must be in (0, 100]");
  require(p.dist_sigma_um > 0 && p.dist_sigma_um <= 50, "--dist-sigma-um must be in (0, 50]");
  require(p.background_um > 0, "--background-um must be positive");
  require(p.hematoxylin_max > 0 && p.hematoxylin_max <= 5, "--hematoxylin-max must be in (0, 5]");
  require(p.glass_gray >= 0 && p.glass_gray <= 255, "--glass-gray must be 0..255");

  // The smoothings become Gaussian sigmas in pixels: at a fine resolution
  // they can pass the Gaussian's limit, said here in the user's terms
  // rather than by the pipeline step that would refuse it.
  for (const auto& [name, um] :
       {std::pair<const char*, double>{"--sigma-um", p.sigma_um}, {"--dist-sigma-um", p.dist_sigma_um}})
    require(um / mpp <= ops::kMaxGaussianSigma, std::string("at ") + number(mpp) + " microns per pixel " + name + " " +
                                                    number(um) + " is " + number(um / mpp) +
                                                    " pixels, over the Gaussian's " + number(ops::kMaxGaussianSigma) +
                                                    ": give a smaller " + name + " (or check the resolution, --mpp)");
  const double px2 = mpp * mpp;
  std::map<std::string, std::string> v;
  v["MPP"] = number(mpp);
  // Where the h-dome's input is cut to the objects: by the one of `mask` and
  // `dist` (not 0 at the same pixels) that is where the run computes. On the
  // CPU the u8 mask, so that the f32 distance goes early (12% off the 2-core
  // run); on the GPU the distance, which stays on the device (the host's
  // mask would be uploaded for it: 0.3-0.5 s more on the H200).
  v["INSIDE_FROM"] = cuda ? "dist" : "mask";
  // The Gaussian's sigma in pixels (its op takes 0.1..100 or so; the
  // op's own range check speaks for anything out of it).
  v["SIGMA_PX"] = number(p.sigma_um / mpp);
  v["MIN_AREA_PX"] = number(std::floor(p.min_area_um2 / px2));
  v["MAX_AREA_PX"] = number(std::ceil(p.max_area_um2 / px2));
  // Markers: the distance d (pixels) is stored in 8 bits as S d + H, S
  // steps a pixel, S as fine as lets the largest nucleus's radius fit
  // (distances beyond saturate: such blobs are too large to keep anyway);
  // smoothed (as scikit-image users smooth the EDT before h_maxima) and
  // masked to the objects, every object's peak stands at least H above the
  // ground, so even the smallest keeps a marker; the h-dome of height H then
  // marks each peak that no path joins within H (the h-maxima).
  const double max_radius_px = std::sqrt(p.max_area_um2 / px2 / 3.14159265358979);
  const double scale = std::max(1.0, std::floor(240.0 / max_radius_px));
  const int h = static_cast<int>(std::lround(std::max(1.0, scale * p.split_um / mpp)));
  require(h < 128, "--split-um is too large for this resolution");
  v["DIST_FROM"] = number(-h / scale);
  v["DIST_TO"] = number(-h / scale + 255.0 / scale);
  v["DIST_SIGMA_PX"] = number(p.dist_sigma_um / mpp);
  v["MARKER_H"] = std::to_string(h);
  v["MARKER_LO"] = std::to_string(h - 1);
  // Checked by the erosion's own range (1..64 pixels) where a pipeline uses
  // it, so that pipelines without background correction take any value.
  v["BACKGROUND_RADIUS_PX"] = number(std::round(p.background_um / mpp));
  v["HEMATOXYLIN_MAX"] = number(p.hematoxylin_max);
  v["GLASS_GRAY"] = std::to_string(p.glass_gray);
  return v;
}

std::string substitute_variables(const std::string& line, const std::map<std::string, std::string>& vars) {
  std::string out;
  size_t i = 0;
  while (i < line.size()) {
    const size_t at = line.find("${", i);
    if (at == std::string::npos) {
      out += line.substr(i);
      break;
    }
    out += line.substr(i, at - i);
    const size_t end = line.find('}', at + 2);
    if (end == std::string::npos) throw ParamError("nuclei pipeline: unclosed '${' in: " + line);
    const std::string name = line.substr(at + 2, end - at - 2);
    const auto it = vars.find(name);
    if (it == vars.end()) {
      std::string known;
      for (const auto& [k, unused] : vars) known += (known.empty() ? "" : ", ") + k;
      throw ParamError("nuclei pipeline: unknown variable ${" + name + "} (known: " + known + ")");
    }
    out += it->second;
    i = end + 1;
  }
  return out;
}

std::vector<std::string> nuclei_steps(const std::string& text, const std::map<std::string, std::string>& vars) {
  std::vector<std::string> steps;
  std::istringstream s(text);
  std::string line;
  while (std::getline(s, line)) {
    // Comments may name variables: only what split_words keeps is a step.
    bool blank = false;
    try {
      blank = split_words(line).empty();
    } catch (const ParamError&) {
    }
    if (!blank) steps.push_back(substitute_variables(line, vars));
  }
  return steps;
}

}  // namespace tw
