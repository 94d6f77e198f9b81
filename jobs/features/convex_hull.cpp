#include "jobs/features/convex_hull.hpp"

#include <algorithm>

namespace tw::features {
namespace {

// Twice the signed area of (o, a, b) in the (u, v) plane.
template <class P>
int64_t cross(const P& o, const P& a, const P& b) {
  return (a.u - o.u) * (b.v - o.v) - (a.v - o.v) * (b.u - o.u);
}

int64_t floor_div(int64_t a, int64_t b) {  // b > 0
  return a >= 0 ? a / b : -((-a + b - 1) / b);
}
int64_t ceil_div(int64_t a, int64_t b) {  // b > 0
  return -floor_div(-a, b);
}

// The chain's extreme v at sweep position u, rounded inwards to an integer
// (ceil on the min side, floor on the max side). `i` is the first segment
// that can reach u; it only moves forward as u grows.
template <class P>
int64_t chain_bound_impl(const std::vector<P>& c, size_t& i, int64_t u, bool min_side) {
  if (c.size() == 1) return c[0].v;
  while (i + 1 < c.size() - 1 && c[i + 1].u < u) ++i;
  bool any = false;
  int64_t best = 0;
  for (size_t j = i; j + 1 < c.size() && c[j].u <= u; ++j) {
    const P& a = c[j];
    const P& b = c[j + 1];
    if (b.u < u) continue;
    int64_t lo, hi;
    if (a.u == b.u) {  // a vertical piece at the chain's ends
      lo = std::min(a.v, b.v), hi = std::max(a.v, b.v);
    } else {
      const int64_t den = b.u - a.u, num = a.v * den + (b.v - a.v) * (u - a.u);
      lo = ceil_div(num, den), hi = floor_div(num, den);
    }
    const int64_t val = min_side ? lo : hi;
    best = !any ? val : min_side ? std::min(best, val) : std::max(best, val);
    any = true;
  }
  return best;
}
}  // namespace

void RowHull::push(int64_t u, int64_t v) {
  const Point p{u, v};
  while (lower_.size() >= 2 && cross(lower_[lower_.size() - 2], lower_.back(), p) <= 0) lower_.pop_back();
  lower_.push_back(p);
  while (upper_.size() >= 2 && cross(upper_[upper_.size() - 2], upper_.back(), p) >= 0) upper_.pop_back();
  upper_.push_back(p);
}

void RowHull::push_pair(int64_t u, int64_t v0, int64_t v1) {
  push(u, v0);
  if (v1 != v0) push(u, v1);
}

void RowHull::flush_pending() {
  if (!pending_) return;
  push_pair(pu_, pv0_, pv1_);
  pending_ = false;
}

void RowHull::add_row(int64_t y, int64_t x0, int64_t x1) {
  // A pixel's diamond: (2x, 2y-1) above, (2x-1, 2y) and (2x+1, 2y) beside,
  // (2x, 2y+1) below; for a row's extremes only the outer ones count.
  const int64_t top = 2 * y - 1;
  if (pending_ && pu_ == top) {
    pv0_ = std::min(pv0_, 2 * x0), pv1_ = std::max(pv1_, 2 * x1);
    flush_pending();
  } else {
    flush_pending();
    push_pair(top, 2 * x0, 2 * x1);
  }
  push_pair(2 * y, 2 * x0 - 1, 2 * x1 + 1);
  pending_ = true, pu_ = 2 * y + 1, pv0_ = 2 * x0, pv1_ = 2 * x1;
}

int64_t RowHull::filled_area() {
  flush_pending();
  if (lower_.empty()) return 0;
  // Pixel centres lie on even (u, v): count, per even u, the even v between
  // the two chains (bounds included: skimage's include_borders).
  int64_t u0 = lower_.front().u, u1 = lower_.back().u;
  if (u0 & 1) ++u0;
  size_t il = 0, iu = 0;
  int64_t n = 0;
  for (int64_t u = u0; u <= u1; u += 2) {
    int64_t lo = chain_bound_impl(lower_, il, u, true), hi = chain_bound_impl(upper_, iu, u, false);
    if (lo & 1) ++lo;
    if (hi & 1) --hi;
    if (hi >= lo) n += (hi - lo) / 2 + 1;
  }
  return n;
}

}  // namespace tw::features
