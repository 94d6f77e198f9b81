#pragma once
// The reconstruction's worst case: a serpentine corridor (value 200 on 0) of
// 3-pixel horizontal runs every 6 rows, joined alternately at the right and
// left ends, so a seed at (1, 1) must travel the whole image back and forth
// across every tile border.
#include <algorithm>

#include "engine/image.hpp"

namespace tw::test {

inline Image serpentine_maze(int64_t w, int64_t h) {
  Image maze(kGray8, Rect(0, 0, w, h));
  maze.fill_zero();
  for (int64_t r = 0, y = 1; y + 3 <= h - 1; ++r, y += 6) {
    for (int64_t yy = y; yy < y + 3; ++yy)
      for (int64_t x = 1; x < w - 1; ++x) maze.ptr<uint8_t>(x, yy)[0] = 200;
    const int64_t cx = r % 2 == 0 ? w - 4 : 1;
    for (int64_t yy = y + 3; yy < std::min(h - 1, y + 6); ++yy)
      for (int64_t x = cx; x < cx + 3; ++x) maze.ptr<uint8_t>(x, yy)[0] = 200;
  }
  return maze;
}

}  // namespace tw::test
