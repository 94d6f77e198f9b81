#include "kernels/canny/canny.hpp"

#include <algorithm>
#include <cmath>

#include "engine/error.hpp"
#include "engine/map_source.hpp"
#include "engine/ops/run_op.hpp"
#include "kernels/gaussian/gaussian.hpp"

namespace tw::kernels {

namespace {

// The hysteresis result keeps weak-linked pixels at kCannyWeak and strong
// ones at kCannyStrong; the edge map is everything that is not 0.
class EdgeMap : public MapSource {
 public:
  explicit EdgeMap(std::shared_ptr<const TileSource> in)
      : MapSource({in.get()}, kGray8,
                  [](const std::vector<const uint8_t*>& rows, uint8_t* out, int64_t, int64_t, int64_t n) {
                    for (int64_t i = 0; i < n; ++i) out[i] = rows[0][i] ? 255 : 0;
                  },
                  "canny edges"),
        in_(std::move(in)) {}

 private:
  std::shared_ptr<const TileSource> in_;
};

}  // namespace

CannyResult canny_hysteresis(const TileSource& classes, int connectivity, ReconstructJob job) {
  job.params.method = ReconstructMethod::kDilation;
  job.params.connectivity = connectivity;
  job.clip = false;
  job.marker_from_mask = [](const ImageView& mask, const ImageView& marker) {
    for (int64_t y = mask.rect.y; y < mask.rect.y1(); ++y) {
      const uint8_t* m = mask.row<uint8_t>(y);
      uint8_t* k = marker.row<uint8_t>(y);
      for (int64_t x = 0; x < mask.rect.w; ++x) k[x] = m[x] == kCannyStrong ? kCannyStrong : 0;
    }
  };
  CannyResult r;
  r.hysteresis = reconstruct(classes, job);
  r.edges = std::make_shared<EdgeMap>(r.hysteresis.image);
  return r;
}

CannyResult canny_classic(std::shared_ptr<const TileSource> gray, const CannyParams& p, ReconstructJob job) {
  const CannyNms nms = make_canny_nms(p.low, p.high);
  auto smooth = ops::run_op(std::move(gray), make_gaussian<1>(p.sigma), job.backend, "canny smoothing");
  auto classes = ops::run_op(smooth, nms, job.backend, "canny non-maximum suppression");
  return canny_hysteresis(*classes, 8, std::move(job));
}

}  // namespace tw::kernels
