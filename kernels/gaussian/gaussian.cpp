#include "kernels/gaussian/gaussian.hpp"

#include <cmath>
#include <string>

#include "engine/error.hpp"

namespace tw::ops {

int gaussian_radius(double sigma) {
  return static_cast<int>(std::ceil(3.0 * sigma));
}

template <int C>
Gaussian<C> make_gaussian(double sigma) {
  if (!(sigma > 0) || sigma > kMaxGaussianSigma)
    throw InputError("--sigma must be in (0, " + std::to_string(static_cast<int>(kMaxGaussianSigma)) + "], got " +
                     std::to_string(sigma));
  Gaussian<C> g;
  g.r = gaussian_radius(sigma);
  double w[2 * ops::kMaxSeparableRadius + 1], sum = 0;
  for (int i = -g.r; i <= g.r; ++i) sum += w[i + g.r] = std::exp(-(i * i) / (2.0 * sigma * sigma));
  for (int i = 0; i <= 2 * g.r; ++i) g.t[i] = static_cast<float>(w[i] / sum);
  return g;
}

template Gaussian<1> make_gaussian<1>(double);
template Gaussian<3> make_gaussian<3>(double);

}  // namespace tw::ops
