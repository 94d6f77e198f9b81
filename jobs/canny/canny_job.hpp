#pragma once
// Canny edges of a whole slide: the neighbourhood ops of kernels/canny
// (smoothing, gradients, classes) streamed over tiles, then hysteresis as a
// morphological reconstruction on the wavefront engine, so an edge chain may
// wind through any number of tiles (ITK's region-bound hysteresis cannot).
#include <memory>

#include "jobs/reconstruct/reconstruct_job.hpp"
#include "kernels/canny/canny.hpp"
#include "kernels/canny/canny_itk.hpp"

namespace tw::ops {

// The edge map (255 edge, 0 not) and the hysteresis' figures.
struct CannyResult {
  std::shared_ptr<const TileSource> edges;
  ReconstructResult hysteresis;
};

// Of 8-bit gray `gray`, computed on `job`'s backend; `job` gives tile,
// memory, scratch place for the hysteresis.
CannyResult canny_classic(std::shared_ptr<const TileSource> gray, const CannyParams& p, ReconstructJob job);
CannyResult canny_itk(std::shared_ptr<const TileSource> gray, const CannyItkParams& p, ReconstructJob job);

// Hysteresis on a class map (0, kCannyWeak, kCannyStrong): the strong pixels
// and the weak ones joined to them through strong or weak pixels
// (`connectivity` 4 or 8), as a morphological reconstruction by dilation on
// the wavefront engine; shared by the Canny variants.
CannyResult canny_hysteresis(const TileSource& classes, int connectivity, ReconstructJob job);

}  // namespace tw::ops
