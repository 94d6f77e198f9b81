#pragma once
// Gaussian blur of 8-bit gray or RGB, a separable op: the sampled Gaussian
// exp(-x^2 / 2 sigma^2), x = -R..R, R = ceil(3 sigma), normalised to 1 (in
// double, then rounded to float as OpenCV's getGaussianKernel does for
// CV_32F), mirror border (BORDER_REFLECT_101), float accumulation, rounded
// half up to 8 bits.
#include <cstdint>

#include "engine/ops/separable.hpp"
#include "kernels/point/point_ops.hpp"

namespace tw::ops {

constexpr double kMaxGaussianSigma = 20.0;

template <int C>
struct Gaussian {
  using Category = ops::Separable;
  using In = uint8_t;
  using Out = uint8_t;
  static constexpr int kIn = C, kOut = C;
  static constexpr bool kRoundsHalfUp = true;  // finish() is round_u8
  int r = 0;
  float t[2 * ops::kMaxSeparableRadius + 1] = {};
  int radius() const { return r; }
  const float* taps() const { return t; }
  Border border() const { return {BorderMode::kReflect101, 0}; }
  TW_HD Out finish(float v) const { return round_u8(v); }
};

int gaussian_radius(double sigma);  // ceil(3 sigma)
// Throws InputError unless 0 < sigma <= kMaxGaussianSigma.
template <int C>
Gaussian<C> make_gaussian(double sigma);

}  // namespace tw::ops
