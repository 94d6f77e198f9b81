#pragma once
// Canny edges, "itk" variant: what ITK 5's itk::CannyEdgeDetectionImageFilter
// <float, float> computes (the filter of the seed thesis, Lourenço 2011,
// Algorithm 1), step by step in ITK's own arithmetic:
//
//  1. L = the input smoothed by ITK's DiscreteGaussianImageFilter: Lindeberg's
//     discrete Gaussian T(n, t) = e^-t I_n(t) (t = variance, I_n the modified
//     Bessel functions, in ITK's polynomial approximations), taps added
//     until their sum reaches 1 - MaximumError (radius at most
//     MaximumKernelWidth), normalised; replicated borders (ZeroFluxNeumann).
//     Float.
//  2. Lvv = (Lx^2 Lxx + 2 Lx Ly Lxy + Ly^2 Lyy) / (Lx^2 + Ly^2 + 1e-4), with
//     ITK's 3-point derivatives (Lx: 0.5, 0, -0.5; Lxx: 1, -2, 1;
//     Lxy: +-0.25 on the diagonal corners), thesis eq. 3.12.
//  3. Lvvv = grad(Lvv) . grad(L) / |grad L| (eq. 3.13) with the same 3-point
//     derivative on the Lvv image, itself extended by replication (not
//     recomputed from replicated L) at the image edge, as ITK's neighbourhood
//     iterator does.
//  4. Edge strength: |grad L| where Lvvv <= 0 and Lvv has a zero crossing
//     (ZeroCrossingImageFilter: a sign change, or zero against non-zero, to a
//     4-neighbour, at the pixel of the pair with the smaller |Lvv|; ties to
//     the pixel whose neighbour lies right or below).
//  5. Hysteresis: pixels above `upper`, and pixels above `lower`
//     8-connected to them (ITK's FollowEdge walks a radius-1 neighbourhood).
//
// Step 1 is a separable op (float output: L is never rounded to 8 bits);
// steps 2-4 are one neighbourhood op of radius 2 on L; step 5 is the same
// wavefront reconstruction as the classic variant, so edges link across
// tiles (ITK's own cannot across streamed pieces). The one difference from
// ITK: ITK runs the Gaussian's two 1-D passes in double with double taps (y
// first), rounding to float after each pass; the separable op accumulates
// in float32 (x first), so L differs from ITK's in the last bits (relative
// < 4e-7). Everything after L reproduces ITK's float/double expressions
// operation by operation; the edge maps came out identical to ITK's on all
// test images (docs/ops/filters.md).
#include <cmath>
#include <cstdint>
#include <memory>
#include <vector>

#include "engine/ops/separable.hpp"
#include "kernels/canny/canny.hpp"

namespace tw::ops {

struct CannyItkParams {
  double variance = 1.96;       // of the Gaussian, pixels^2 (ITK's SetVariance; the thesis: sigma 1.4)
  double upper = 7, lower = 4;  // on the edge strength |grad L| (ITK's Upper/LowerThreshold)
  double max_error = 0.01;      // ITK's MaximumError, in (0, 1)
  int max_kernel_width = 32;    // ITK's MaximumKernelWidth (DiscreteGaussianImageFilter's default)
  void validate() const;        // InputError naming the bad parameter
};

// ITK's GaussianOperator coefficients for these parameters (2R + 1 doubles,
// symmetric, summing to 1), computed exactly as ITK computes them.
std::vector<double> itk_gaussian_kernel(double variance, double max_error, int max_kernel_width);

// Step 1: 8-bit gray -> float L.
struct ItkGaussian {
  using Category = ops::Separable;
  using In = uint8_t;
  using Out = float;
  static constexpr int kIn = 1, kOut = 1;
  int r = 0;
  float t[2 * ops::kMaxSeparableRadius + 1] = {};
  int radius() const { return r; }
  const float* taps() const { return t; }
  Border border() const { return {BorderMode::kReplicate, 0}; }
  TW_HD Out finish(float v) const { return v; }
};
ItkGaussian make_itk_gaussian(const CannyItkParams& p);

// IEEE operations rounded as written on both backends (nvcc would fuse a
// product and a sum into one FMA, in float and in double alike).
namespace itk_math {
TW_HD float fmul(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fmul_rn(a, b);
#else
  return a * b;
#endif
}
TW_HD float fadd(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fadd_rn(a, b);
#else
  return a + b;
#endif
}
TW_HD float fdiv(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fdiv_rn(a, b);
#else
  return a / b;
#endif
}
TW_HD double dmul(double a, double b) {
#if defined(__CUDA_ARCH__)
  return __dmul_rn(a, b);
#else
  return a * b;
#endif
}
TW_HD double dadd(double a, double b) {
#if defined(__CUDA_ARCH__)
  return __dadd_rn(a, b);
#else
  return a + b;
#endif
}
TW_HD double dsqrt(double a) {
#if defined(__CUDA_ARCH__)
  return __dsqrt_rn(a);
#else
  return std::sqrt(a);
#endif
}
}  // namespace itk_math

// Steps 2-4 and the double threshold: per pixel 0, kCannyWeak (strength >
// lower) or kCannyStrong (strength > upper).
struct CannyItkClasses {
  using Category = ops::Neighborhood;
  using In = float;
  using Out = uint8_t;
  static constexpr int kIn = 1, kOut = 1;
  float upper = 7, lower = 4;  // float, as ITK compares them
  // Lvv at the 4-neighbours of a pixel needs L within 2 pixels of it.
  int radius() const { return 2; }
  Border border() const { return {BorderMode::kReplicate, 0}; }

  // ITK's NeighborhoodInnerProduct of 3 samples with float coefficients c:
  // products and sum in double, in operator order, rounded to float.
  TW_HD static float inner3(float c0, float c1, float c2, float a, float b, float d) {
    using namespace itk_math;
    double s = 0.0;
    s = dadd(s, dmul(c0, a));
    s = dadd(s, dmul(c1, b));
    s = dadd(s, dmul(c2, d));
    return static_cast<float>(s);
  }
  // DerivativeOperator order 1: {0.5, 0, -0.5}; order 2: {1, -2, 1}.
  TW_HD static float d1(float a, float b, float d) { return inner3(0.5f, 0.f, -0.5f, a, b, d); }
  TW_HD static float d2(float a, float b, float d) { return inner3(1.f, -2.f, 1.f, a, b, d); }

  // Lvv at offset (ox, oy) of the window: CannyEdgeDetectionImageFilter::
  // ComputeCannyEdge, with its mix of float and double.
  TW_HD static float lvv(const ops::Window<In>& w, int ox, int oy) {
    using namespace itk_math;
    auto L = [&](int dx, int dy) { return w(ox + dx, oy + dy); };
    const float dx0 = d1(L(-1, 0), L(0, 0), L(1, 0)), dxx0 = d2(L(-1, 0), L(0, 0), L(1, 0));
    const float dx1 = d1(L(0, -1), L(0, 0), L(0, 1)), dxx1 = d2(L(0, -1), L(0, 0), L(0, 1));
    // dxy = 0.25 * L(-1,-1) - 0.25 * L(-1,1) - 0.25 * L(1,-1) + 0.25 * L(1,1), in double.
    double q = dmul(0.25, L(-1, -1));
    q = dadd(q, -dmul(0.25, L(-1, 1)));
    q = dadd(q, -dmul(0.25, L(1, -1)));
    q = dadd(q, dmul(0.25, L(1, 1)));
    const float dxy = static_cast<float>(q);
    // deriv += 2.0 * dx0 * dx1 * dxy (double), from deriv = 0.
    float deriv = static_cast<float>(dadd(0.0, dmul(dmul(dmul(2.0, dx0), dx1), dxy)));
    float mag2 = static_cast<float>(0.0001);
    deriv = fadd(deriv, fmul(fmul(dx0, dx0), dxx0));
    mag2 = fadd(mag2, fmul(dx0, dx0));
    deriv = fadd(deriv, fmul(fmul(dx1, dx1), dxx1));
    mag2 = fadd(mag2, fmul(dx1, dx1));
    return fdiv(deriv, mag2);
  }

  // ZeroCrossingImageFilter's test of `self` against one neighbour; i is
  // ITK's neighbour index (0 left, 1 up, 2 right, 3 down).
  TW_HD static bool crossing(float self, float that, int i) {
    const bool change = (self < 0.f && that > 0.f) || (self > 0.f && that < 0.f) || (self == 0.f && that != 0.f) ||
                        (self != 0.f && that == 0.f);
    if (!change) return false;
    const float a = self < 0.f ? -self : self, b = that < 0.f ? -that : that;
    return a < b || (a == b && i >= 2);
  }

  TW_HD void operator()(const ops::Window<In>& w, Out* out) const {
    using namespace itk_math;
    // Lvv at the pixel and its 4-neighbours; a neighbour outside the image
    // takes the pixel's own value (ITK replicates the Lvv image).
    const float c = lvv(w, 0, 0);
    const float l = w.inside(-1, 0) ? lvv(w, -1, 0) : c, r = w.inside(1, 0) ? lvv(w, 1, 0) : c;
    const float u = w.inside(0, -1) ? lvv(w, 0, -1) : c, d = w.inside(0, 1) ? lvv(w, 0, 1) : c;
    // ThreadedCompute2ndDerivativePos: |grad L| and the sign of Lvvv.
    const float gx = d1(w(-1, 0), w(0, 0), w(1, 0)), gy = d1(w(0, -1), w(0, 0), w(0, 1));
    const float vx = d1(l, c, r), vy = d1(u, c, d);
    float mag = static_cast<float>(0.0001);
    mag = fadd(mag, fmul(gx, gx));
    mag = fadd(mag, fmul(gy, gy));
    mag = static_cast<float>(dsqrt(static_cast<double>(mag)));
    float lvvv = 0.f;
    lvvv = fadd(lvvv, fmul(vx, fdiv(gx, mag)));
    lvvv = fadd(lvvv, fmul(vy, fdiv(gy, mag)));
    const bool zero_cross = crossing(c, l, 0) || crossing(c, u, 1) || crossing(c, r, 2) || crossing(c, d, 3);
    // The multiply filter: (Lvvv <= 0) * |grad L| * zero crossing.
    const float strength = (lvvv <= 0.f && zero_cross) ? mag : 0.f;
    out[0] = strength > upper ? kCannyStrong : strength > lower ? kCannyWeak : 0;
  }
};
CannyItkClasses make_canny_itk_classes(const CannyItkParams& p);

}  // namespace tw::ops
