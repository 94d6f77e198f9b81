#include "kernels/stats/stats.hpp"

#include <algorithm>
#include <cfloat>

#include "engine/error.hpp"

namespace tw::ops {

int otsu_threshold(const std::vector<uint64_t>& h) {
  TW_ASSERT(h.size() == 256);
  double n = 0, mu = 0;
  for (int i = 0; i < 256; ++i) n += static_cast<double>(h[i]), mu += i * static_cast<double>(h[i]);
  if (n == 0) return 0;
  const double scale = 1.0 / n;
  mu *= scale;
  // As OpenCV's getThreshVal_Otsu_8u, in the same order of operations.
  double mu1 = 0, q1 = 0, max_sigma = 0;
  int best = 0;
  for (int i = 0; i < 256; ++i) {
    const double p = static_cast<double>(h[i]) * scale;
    mu1 *= q1;
    q1 += p;
    const double q2 = 1.0 - q1;
    if (std::min(q1, q2) < FLT_EPSILON || std::max(q1, q2) > 1.0 - FLT_EPSILON) continue;
    mu1 = (mu1 + i * p) / q1;
    const double mu2 = (mu - q1 * mu1) / q2;
    const double sigma = q1 * q2 * (mu2 - mu1) * (mu2 - mu1);
    if (sigma > max_sigma) max_sigma = sigma, best = i;
  }
  return best;
}

}  // namespace tw::ops
