#pragma once
// One rank's share of a pyramid split by bands of rows (jobs/pyramid/
// banded_pyramid.hpp): which level-0 rows it reads, from which row each
// level of its cascade starts, which rows of each level it owns (computes
// exactly and hands on), and where its tiles go instead of the sink.
#include <cstdint>
#include <functional>
#include <utility>
#include <vector>

#include "engine/image.hpp"

namespace tw {

struct BandShare {
  int64_t read0 = 0, read1 = 0;                  // level-0 rows read: [read0, read1), read0 a multiple of the tile size
  std::vector<int64_t> start;                    // per level 0..K: the cascade's first row (start[0] == read0)
  std::vector<std::pair<int64_t, int64_t>> own;  // per level 0..K: rows [first, end) this share owns
  // Each owned tile, encoded, with the level-0 band (token) whose pass
  // finished it: a single process writes tiles token by token, so the token
  // and the tile's level and column give its place in the file.
  std::function<void(int64_t token, int level, int64_t tx, int64_t ty, std::vector<uint8_t>& bytes)> tile;
  // Owned rows of level K (the share's last), for the levels below it that
  // one rank makes from the whole level K.
  std::function<void(const ImageView& rows)> rows_of_last_level;

  bool owns(int level, int64_t y0) const {
    const auto& o = own[static_cast<size_t>(level)];
    return y0 >= o.first && y0 < o.second;
  }
};

// The share of level-0 rows [y0, y1) among levels 0..K of a pyramid of these
// level sizes: y0 and y1 multiples of 2^K tiles (y1 may be the height).
// Ghost rows above and below are read and reduced but not kept, so that every
// owned row is computed from exactly the rows a single pass would use.
BandShare band_share(const std::vector<std::pair<int64_t, int64_t>>& sizes, int K, int64_t T, int64_t y0, int64_t y1);

}  // namespace tw
