// next_nonzero (engine/next_nonzero.hpp): the first non-zero sample at or
// after x, before end, equals a one-at-a-time scan for every start and end,
// sample type and density, wherever the row sits against its words.
#include "engine/next_nonzero.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <vector>

namespace tw {
namespace {

template <class T>
int64_t scan_one_at_a_time(const T* row, int64_t x, int64_t end) {
  while (x < end && row[x] == 0) ++x;
  return x;
}

template <class T>
void check_rows(uint32_t seed) {
  std::mt19937 rng(seed);
  for (const double density : {0.0, 0.002, 0.03, 0.3, 1.0}) {
    for (int trial = 0; trial < 20; ++trial) {
      const int64_t n = static_cast<int64_t>(rng() % 200);
      // A sample offset, so the row does not start on a word.
      const int64_t shift = static_cast<int64_t>(rng() % 8);
      std::vector<T> buf(static_cast<size_t>(n + shift + 1), 0);
      T* row = buf.data() + shift;
      std::bernoulli_distribution on(density);
      for (int64_t i = 0; i < n; ++i)
        if (on(rng)) row[i] = static_cast<T>(T(1) << (rng() % (8 * sizeof(T))));  // any one bit, the top too
      for (int64_t x = 0; x <= n; ++x) {
        const int64_t end = x + static_cast<int64_t>(rng() % static_cast<uint32_t>(n - x + 1));
        ASSERT_EQ(next_nonzero(row, x, end), scan_one_at_a_time(row, x, end))
            << "sizeof " << sizeof(T) << " density " << density << " n " << n << " x " << x << " end " << end;
      }
    }
  }
}

TEST(NextNonzero, EqualsAScanOneSampleAtATime) {
  check_rows<uint8_t>(1);
  check_rows<uint16_t>(2);
  check_rows<uint32_t>(3);
}

TEST(NextNonzero, AnEmptyRangeAndAllZerosGiveTheEnd) {
  const std::vector<uint32_t> zeros(100, 0);
  EXPECT_EQ(next_nonzero(zeros.data(), 5, 5), 5);
  EXPECT_EQ(next_nonzero(zeros.data(), 0, 100), 100);
  std::vector<uint32_t> last(100, 0);
  last[99] = 7;
  EXPECT_EQ(next_nonzero(last.data(), 0, 100), 99);
  EXPECT_EQ(next_nonzero(last.data(), 0, 99), 99);  // not past end
}

}  // namespace
}  // namespace tw
