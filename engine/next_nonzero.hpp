#pragma once
// Skipping a row's zeros a word at a time: label images are mostly
// background, and the passes that look only at labelled pixels (the
// features' scan, the overlay's outlines) spent a quarter of their time
// testing zeros one sample at a time.
#include <cstdint>
#include <cstring>

namespace tw {

// The first x in [x, end) where row[x] != 0, else end (T an integer type).
template <class T>
int64_t next_nonzero(const T* row, int64_t x, int64_t end) {
  constexpr int64_t kStep = 32 / static_cast<int64_t>(sizeof(T));  // 32 bytes a test
  for (; x + kStep <= end; x += kStep) {
    uint64_t w[4];
    std::memcpy(w, row + x, sizeof w);
    if ((w[0] | w[1] | w[2] | w[3]) != 0) break;
  }
  while (x < end && row[x] == 0) ++x;
  return x;
}

}  // namespace tw
