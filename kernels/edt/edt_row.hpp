#pragma once
// Meijster's row pass of the exact EDT (kernels/edt/edt.hpp), in integers of
// type I: out[u] = min_i (u - i)^2 + g2[i], through the lower envelope of the
// parabolas. s and t are scratch of n entries each.
#include <cmath>
#include <cstdint>

namespace tw::edt {

template <class I>
I floor_div(I a, I b) {  // b > 0
  const I q = a / b;
  return (a % b != 0 && a < 0) ? q - 1 : q;
}

// Meijster's row pass in integers of type I (32-bit where every sum fits:
// its divisions are much cheaper than 64-bit ones).
template <class I>
void row_pass(const I* g2, int64_t n, I* out, I* s, I* t) {
  auto f = [&](I x, I i) { return (x - i) * (x - i) + g2[i]; };
  // Where the parabola of u overtakes the one of i (Meijster's Sep). For
  // 32-bit sums the quotient is exact in double precision (|num| < 2^31,
  // den < 2^16: a non-integer quotient lies >= 2^-16 from an integer, far
  // above the rounding error), and a double division is much cheaper.
  auto sep = [&](I i, I u) {
    const I num = u * u - i * i + g2[u] - g2[i], den = 2 * (u - i);
    if constexpr (sizeof(I) == 4)
      return static_cast<I>(std::floor(static_cast<double>(num) / den));
    else
      return floor_div<I>(num, den);
  };
  int64_t q = 0;
  s[0] = 0, t[0] = 0;
  for (I u = 1; u < static_cast<I>(n); ++u) {
    while (q >= 0 && f(t[q], s[q]) > f(t[q], u)) --q;
    if (q < 0) {
      q = 0, s[0] = u;
    } else {
      const I w = 1 + sep(s[q], u);
      if (w < static_cast<I>(n)) ++q, s[q] = u, t[q] = w;
    }
  }
  for (I u = static_cast<I>(n) - 1; u >= 0; --u) {
    out[u] = f(u, s[q]);
    if (u == t[q]) --q;
  }
}

// The same result, run by run: a background pixel (g2 == 0) is 0 and bounds
// every pixel beyond it (for u right of a zero at z and any i < z,
// (u - i)^2 + g2[i] > (u - z)^2), so each run of non-zero g2 is a row pass
// of its own over the run and the zero on each side. Background rows, most
// of a slide's, cost one scan instead of the envelope's divisions.
template <class I>
void row_pass_runs(const I* g2, int64_t n, I* out, I* s, I* t) {
  int64_t x = 0;
  while (x < n) {
    if (g2[x] == 0) {
      out[x++] = 0;
      continue;
    }
    const int64_t a = x;
    while (x < n && g2[x] != 0) ++x;
    const int64_t lo = a > 0 ? a - 1 : a, hi = x < n ? x + 1 : x;
    row_pass<I>(g2 + lo, hi - lo, out + lo, s, t);
  }
}

}  // namespace tw::edt
