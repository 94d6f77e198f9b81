#include "jobs/features/object_stats.hpp"

#include <algorithm>
#include <cmath>

namespace tw::features {

int perimeter_class(int code) {
  switch (code) {
    case 5:
    case 7:
    case 15:
    case 17:
    case 25:
    case 27:
      return kPerimOne;
    case 21:
    case 33:
      return kPerimSqrt2;
    case 13:
    case 23:
      return kPerimHalf;
    default:
      return kPerimNone;
  }
}

void ObjectAccumulator::add_run(int64_t y, int64_t xa, int64_t xb) {
  const int64_t len = xb - xa;
  if (n == 0) {
    x0 = xa, x1 = xb, y0 = y, y1 = y + 1;
  } else {
    x0 = std::min(x0, xa), x1 = std::max(x1, xb), y1 = y + 1;  // rows come in order
  }
  // Σx over [xa, xb) and Σx² by the closed forms.
  const Int128 s1 = Int128(xa + xb - 1) * len / 2;
  auto sq = [](Int128 k) { return k * (k + 1) * (2 * k + 1) / 6; };  // Σ_{0..k} x²
  const Int128 s2 = sq(xb - 1) - (xa > 0 ? sq(xa - 1) : Int128(0));
  n += len;
  sx += s1, sxx += s2;
  sy += Int128(y) * len, syy += Int128(y) * y * len, sxy += Int128(y) * s1;
  if (cur_row != y) {
    end_row();
    cur_row = y, row_min = xa;
  }
  row_max = xb - 1;
}

void ObjectAccumulator::end_row() {
  if (cur_row >= 0) hull.add_row(cur_row, row_min, row_max);
  cur_row = -1;
}

ObjectRecord measure(ObjectAccumulator& a) {
  a.end_row();
  ObjectRecord r;
  r.label = a.label;
  r.area = a.n;
  const double n = static_cast<double>(a.n);
  r.centroid_x = static_cast<double>(a.sx) / n;
  r.centroid_y = static_cast<double>(a.sy) / n;
  r.bbox_x0 = a.x0, r.bbox_y0 = a.y0, r.bbox_x1 = a.x1, r.bbox_y1 = a.y1;
  const double sqrt2 = std::sqrt(2.0);
  r.perimeter = static_cast<double>(a.perim[kPerimOne]) + static_cast<double>(a.perim[kPerimSqrt2]) * sqrt2 +
                static_cast<double>(a.perim[kPerimHalf]) * ((1 + sqrt2) / 2);
  r.equivalent_diameter = std::sqrt(4 * n / M_PI);
  // skimage's inertia tensor [[a, b], [b, c]] from the central moments:
  // a = mu02 / mu00 (the columns' variance), c = mu20 / mu00 (the rows'),
  // b = -mu11 / mu00; each numerator an exact integer over n².
  const Int128 N = a.n;
  const Int128 num_a = N * a.sxx - a.sx * a.sx, num_c = N * a.syy - a.sy * a.sy, num_b = N * a.sxy - a.sx * a.sy;
  const double n2 = n * n;
  const double ta = static_cast<double>(num_a) / n2, tc = static_cast<double>(num_c) / n2;
  const double tb = -(static_cast<double>(num_b) / n2);
  // Eigenvalues of the symmetric 2x2 tensor, clipped at 0 as skimage does.
  const double mid = (ta + tc) / 2, rad = std::hypot((ta - tc) / 2, tb);
  const double l1 = std::max(mid + rad, 0.0), l2 = std::max(mid - rad, 0.0);
  r.major_axis = 4 * std::sqrt(l1);
  r.minor_axis = 4 * std::sqrt(l2);
  r.eccentricity = l1 == 0 ? 0 : std::sqrt(1 - l2 / l1);
  // skimage's orientation, 0.5 atan2(-2b, c - a): the angle between the
  // rows' axis and the major axis, in [-pi/2, pi/2]. Where a == c exactly we
  // take that formula's limit, -sign(b) pi/4 (pi/4 for b == 0); skimage's
  // special case there returns +pi/4 for b > 0, but reaches it only when its
  // float a - c comes out exactly 0, and the formula otherwise.
  if (num_a == num_c)
    r.orientation = num_b < 0 ? -M_PI / 4 : M_PI / 4;
  else
    r.orientation = 0.5 * std::atan2(-2 * tb, tc - ta);
  r.area_convex = a.hull.filled_area();
  r.solidity = n / static_cast<double>(r.area_convex);
  r.mean.resize(a.intensity.size());
  r.std.resize(a.intensity.size());
  for (size_t c = 0; c < a.intensity.size(); ++c) {
    r.mean[c] = a.intensity[c].mean;
    r.std[c] = std::sqrt(std::max(a.intensity[c].m2 / n, 0.0));
  }
  return r;
}

}  // namespace tw::features
