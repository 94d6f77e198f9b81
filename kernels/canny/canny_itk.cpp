#include "kernels/canny/canny_itk.hpp"

#include <cmath>
#include <string>

#include "engine/error.hpp"

namespace tw::ops {

namespace {

// The modified Bessel functions as ITK 5's GaussianOperator evaluates them:
// the polynomial approximations of Abramowitz & Stegun 9.8.1-9.8.4 for I0
// and I1, Miller's downward recurrence for I_n, n >= 2 (Numerical Recipes'
// bessi0/bessi1/bessi). The same operations in the same order as ITK, so the
// taps come out the same to the last bit of the double.
double bessel_i0(double y) {
  const double d = std::fabs(y);
  if (d < 3.75) {
    double m = y / 3.75;
    m *= m;
    return 1.0 +
           m * (3.5156229 + m * (3.0899424 + m * (1.2067492 + m * (0.2659732 + m * (0.360768e-1 + m * 0.45813e-2)))));
  }
  const double m = 3.75 / d;
  return (std::exp(d) / std::sqrt(d)) *
         (0.39894228 +
          m * (0.1328592e-1 +
               m * (0.225319e-2 +
                    m * (-0.157565e-2 +
                         m * (0.916281e-2 +
                              m * (-0.2057706e-1 + m * (0.2635537e-1 + m * (-0.1647633e-1 + m * 0.392377e-2))))))));
}

double bessel_i1(double y) {
  const double d = std::fabs(y);
  double a;
  if (d < 3.75) {
    double m = y / 3.75;
    m *= m;
    a = d * (0.5 + m * (0.87890594 +
                        m * (0.51498869 + m * (0.15084934 + m * (0.2658733e-1 + m * (0.301532e-2 + m * 0.32411e-3))))));
  } else {
    const double m = 3.75 / d;
    a = 0.2282967e-1 + m * (-0.2895312e-1 + m * (0.1787654e-1 - m * 0.420059e-2));
    a = 0.39894228 + m * (-0.3988024e-1 + m * (-0.362018e-2 + m * (0.163801e-2 + m * (-0.1031555e-1 + m * a))));
    a *= std::exp(d) / std::sqrt(d);
  }
  return y < 0.0 ? -a : a;
}

double bessel_in(int n, double y) {
  if (y == 0.0) return 0.0;
  constexpr double kAccuracy = 40.0;
  const double toy = 2.0 / std::fabs(y);
  double qip = 0.0, qi = 1.0, a = 0.0;
  for (int j = 2 * (n + static_cast<int>(std::sqrt(kAccuracy * n))); j > 0; --j) {
    const double qim = qip + j * toy * qi;
    qip = qi;
    qi = qim;
    if (std::fabs(qi) > 1.0e10) {  // rescale to avoid overflow
      a *= 1.0e-10;
      qi *= 1.0e-10;
      qip *= 1.0e-10;
    }
    if (j == n) a = qip;
  }
  a *= bessel_i0(y) / qi;
  return (y < 0.0 && (n & 1)) ? -a : a;
}

}  // namespace

void CannyItkParams::validate() const {
  if (!(variance >= 0) || variance > 400)
    throw InputError("Canny (itk) variance must be in [0, 400], got " + std::to_string(variance));
  if (!(max_error > 0) || !(max_error < 1))
    throw InputError("Canny (itk) maximum error must be in (0, 1), got " + std::to_string(max_error));
  if (max_kernel_width < 1 || max_kernel_width > ops::kMaxSeparableRadius)
    throw InputError("Canny (itk) maximum kernel width must be in [1, " + std::to_string(ops::kMaxSeparableRadius) +
                     "], got " + std::to_string(max_kernel_width));
  if (!(lower >= 0) || !(upper >= 0) || !std::isfinite(lower) || !std::isfinite(upper))
    throw InputError("Canny (itk) thresholds must be finite and >= 0");
}

// GaussianOperator::GenerateCoefficients: e^-t I_n(t) for n = 0, 1, ... until
// the two-sided sum reaches 1 - max_error or the half kernel outgrows
// max_kernel_width; normalised by that sum; mirrored.
std::vector<double> itk_gaussian_kernel(double variance, double max_error, int max_kernel_width) {
  const double et = std::exp(-variance), cap = 1.0 - max_error;
  std::vector<double> half;
  half.push_back(et * bessel_i0(variance));
  double sum = half[0];
  half.push_back(et * bessel_i1(variance));
  sum += half[1] * 2.0;
  for (int i = 2; sum < cap; ++i) {
    half.push_back(et * bessel_in(i, variance));
    sum += half[i] * 2.0;
    if (half[i] <= 0.0) break;
    if (half.size() > static_cast<size_t>(max_kernel_width)) break;  // ITK warns and truncates
  }
  for (double& c : half) c /= sum;
  const int r = static_cast<int>(half.size()) - 1;
  std::vector<double> k(static_cast<size_t>(2 * r + 1));
  for (int i = -r; i <= r; ++i) k[static_cast<size_t>(i + r)] = half[static_cast<size_t>(std::abs(i))];
  return k;
}

ItkGaussian make_itk_gaussian(const CannyItkParams& p) {
  p.validate();
  const std::vector<double> k = itk_gaussian_kernel(p.variance, p.max_error, p.max_kernel_width);
  ItkGaussian g;
  g.r = static_cast<int>(k.size() / 2);
  TW_ASSERT(g.r <= ops::kMaxSeparableRadius);
  for (size_t i = 0; i < k.size(); ++i) g.t[i] = static_cast<float>(k[i]);
  return g;
}

CannyItkClasses make_canny_itk_classes(const CannyItkParams& p) {
  p.validate();
  CannyItkClasses c;
  c.upper = static_cast<float>(p.upper);
  c.lower = static_cast<float>(p.lower);
  return c;
}

}  // namespace tw::ops
