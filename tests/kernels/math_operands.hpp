#pragma once
// Operands of the math ops' tests (math_test.cpp, math_cuda_test.cpp).
#include <cstring>
#include <random>

#include "tests/kernels/registered_op.hpp"

namespace tw::test {

// Random samples, half of them set to zero (masks), and some copied from
// `like` (equal operands: ties, 0 - 0, -0 against 0).
inline Image math_operand(PixelFormat fmt, int64_t w, int64_t h, uint64_t seed, const Image* like = nullptr) {
  Image img = test::random_samples(fmt, w, h, seed, -3, 3);
  std::mt19937_64 rng(seed * 7 + 1);
  const size_t sb = sample_bytes(fmt.type);
  for (int64_t y = 0; y < h; ++y)
    for (int64_t i = 0; i < w * fmt.channels; ++i) {
      const uint64_t r = rng() % 8;
      uint8_t* p = img.row_bytes(y) + i * sb;
      if (r < 2) std::memset(p, 0, sb);
      if (r == 2 && like) std::memcpy(p, like->row_bytes(y) + i * sb, sb);
      if (r == 3 && fmt.type == SampleType::kF32) {
        const float z = -0.f;
        std::memcpy(p, &z, 4);
      }
    }
  return img;
}

}  // namespace tw::test
