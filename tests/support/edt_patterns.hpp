#pragma once
// The seed's EDT test patterns, as tests/oracles/morph_oracle.py draws them
// (the random one with its own generator), for code that runs without
// Python: the GPU tests and the NPP comparison bench. Header-only, standard
// library only.
#include <cmath>
#include <cstdint>
#include <random>
#include <stdexcept>
#include <string>

namespace tw::test {

inline const char* const kEdtPatterns[] = {"random",   "circles16", "big_circle",    "squares_on_corners",
                                           "diagonal", "x",         "central_circle"};

// Calls put(x, y, background) for every pixel of an n x n pattern, row by row.
template <class Put>
void draw_edt_pattern(const std::string& name, int64_t n, Put&& put) {
  std::mt19937_64 rng(5);
  const double half = n / 2.0;
  auto ring = [](double r, double radius) { return std::fabs(r - radius) < 0.75; };
  for (int64_t y = 0; y < n; ++y)
    for (int64_t x = 0; x < n; ++x) {
      bool bg = false;
      if (name == "random") {
        bg = rng() % 2000 == 0;
      } else if (name == "circles16") {
        for (int cy = 0; cy < 4 && !bg; ++cy)
          for (int cx = 0; cx < 4 && !bg; ++cx)
            bg = ring(std::hypot(y - (cy + 0.5) * n / 4, x - (cx + 0.5) * n / 4), n / 12.0);
      } else if (name == "big_circle") {  // centred on the middle of the bottom edge, radius half the width
        bg = ring(std::hypot(double(y - (n - 1)), x - half), half);
      } else if (name == "squares_on_corners") {
        const int64_t s = n / 8;
        bg = (y < s || y >= n - s) && (x < s || x >= n - s);
      } else if (name == "diagonal") {
        bg = x == y;
      } else if (name == "x") {
        bg = x == y || y == n - 1 - x;
      } else if (name == "central_circle") {
        bg = ring(std::hypot(y - half, x - half), n / 4.0);
      } else {
        throw std::invalid_argument("unknown EDT pattern " + name);
      }
      put(x, y, bg);
    }
}

}  // namespace tw::test
