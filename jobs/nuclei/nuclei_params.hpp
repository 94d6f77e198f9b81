#pragma once
// The parameters of `tilewave nuclei` (docs/nuclei.md): sizes in microns,
// as QuPath's cell detection takes them, turned into the pixel values of the
// pipeline's ${NAME} variables by the slide's resolution, so one pipeline
// file serves every magnification.
#include <map>
#include <string>
#include <vector>

namespace tw {

struct NucleiParams {
  double sigma_um = 0.35;         // Gaussian smoothing of the hematoxylin
  double min_area_um2 = 10;       // smaller objects are dropped (QuPath: 10)
  double max_area_um2 = 400;      // larger ones too (QuPath: 400)
  double split_um = 0.05;         // h of the distance transform's h-maxima: the markers
  double dist_sigma_um = 1.0;     // Gaussian smoothing of the distance before the markers
  double background_um = 16;      // radius of the opening (nuclei-tophat.pipeline)
  double hematoxylin_max = 0.15;  // hematoxylin optical density mapped to 255
  int glass_gray = 220;           // gray above this is glass, not tissue
};

// ${NAME} -> value for a slide of `mpp` microns per pixel; ParamError when a
// parameter is out of range or gives no pixel (a minimum area below one).
// cuda: the run computes on the GPU (INSIDE_FROM: `dist`, else `mask`).
std::map<std::string, std::string> nuclei_variables(const NucleiParams& p, double mpp, bool cuda = false);

// `line` with every ${NAME} replaced; ParamError naming an unknown one or an
// unclosed '${'.
std::string substitute_variables(const std::string& line, const std::map<std::string, std::string>& vars);

// The default pipeline (jobs/nuclei/nuclei.pipeline, built into the binary).
const char* default_nuclei_pipeline();

// A pipeline file's text as its steps (blank and '#' lines dropped), with
// the variables substituted.
std::vector<std::string> nuclei_steps(const std::string& text, const std::map<std::string, std::string>& vars);

}  // namespace tw
