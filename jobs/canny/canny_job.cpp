#include "jobs/canny/canny_job.hpp"

#include <algorithm>
#include <cmath>

#include "engine/error.hpp"
#include "engine/ops/clones.hpp"
#include "engine/ops/run_op.hpp"
#include "kernels/gaussian/gaussian.hpp"

namespace tw::ops {

namespace {

// One row of classes -> marker (strong pixels) and binary mask (candidates).
TW_CLONES void split_classes(uint8_t* __restrict m, uint8_t* __restrict k, int64_t n) {
  for (int64_t x = 0; x < n; ++x) {
    k[x] = m[x] == kCannyStrong ? 255 : 0;
    m[x] = m[x] ? 255 : 0;
  }
}

}  // namespace

CannyResult canny_hysteresis(const TileSource& classes, int connectivity, ReconstructJob job) {
  job.params.method = ReconstructMethod::kDilation;
  job.params.connectivity = connectivity;
  job.clip = false;
  // Marker: the strong pixels; mask: every candidate at 255, so that the
  // reconstruction is the edge map itself (255 where linked to a strong
  // pixel, 0 elsewhere) and needs no further pass.
  job.marker_from_mask = [](const ImageView& mask, const ImageView& marker) {
    for (int64_t y = mask.rect.y; y < mask.rect.y1(); ++y)
      split_classes(mask.row<uint8_t>(y), marker.row<uint8_t>(y), mask.rect.w);
  };
  CannyResult r;
  r.hysteresis = reconstruct(classes, job);
  r.edges = r.hysteresis.image;
  return r;
}

CannyResult canny_classic(std::shared_ptr<const TileSource> gray, const CannyParams& p, ReconstructJob job) {
  const CannyNms nms = make_canny_nms(p.low, p.high);
  auto smooth = ops::run_op(std::move(gray), make_gaussian<1>(p.sigma), job.backend, "canny smoothing");
  auto classes = ops::run_op(smooth, nms, job.backend, "canny non-maximum suppression");
  return canny_hysteresis(*classes, 8, std::move(job));
}

CannyResult canny_itk(std::shared_ptr<const TileSource> gray, const CannyItkParams& p, ReconstructJob job) {
  const ItkGaussian g = make_itk_gaussian(p);
  const CannyItkClasses classes_op = make_canny_itk_classes(p);
  auto smooth = ops::run_op(std::move(gray), g, job.backend, "canny (itk) discrete gaussian");
  auto classes = ops::run_op(smooth, classes_op, job.backend, "canny (itk) zero crossings");
  // ITK's FollowEdge visits the whole radius-1 neighbourhood: 8-connected.
  return canny_hysteresis(*classes, 8, std::move(job));
}

}  // namespace tw::ops
