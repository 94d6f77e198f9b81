#include "jobs/pyramid/band_share.hpp"

#include <algorithm>

#include "engine/error.hpp"
#include "engine/geometry.hpp"

namespace tw {

BandShare band_share(const std::vector<std::pair<int64_t, int64_t>>& sizes, int K, int64_t T, int64_t y0, int64_t y1) {
  TW_ASSERT(K >= 0 && K < static_cast<int>(sizes.size()) && y0 < y1);
  const int64_t H0 = sizes[0].second;
  TW_ASSERT(y0 % (T << K) == 0 && (y1 == H0 || y1 % (T << K) == 0));
  auto height = [&](int k) { return sizes[static_cast<size_t>(k)].second; };
  BandShare s;
  s.own.resize(static_cast<size_t>(K) + 1);
  for (int k = 0; k <= K; ++k)
    s.own[static_cast<size_t>(k)] = {std::min(y0 >> k, height(k)), y1 == H0 ? height(k) : std::min(y1 >> k, height(k))};
  // Top: row Y of level k reduces rows 2Y-2 .. 2Y+2 of level k-1, so the
  // first owned row of each level needs two more rows of the level above.
  int64_t need = s.own[static_cast<size_t>(K)].first;
  for (int k = K; k >= 1; --k)
    need = std::max<int64_t>(0, std::min(2 * need - 2, s.own[static_cast<size_t>(k - 1)].first));
  s.read0 = need / T * T;
  // Each level starts at the first row whose five input rows are all
  // computed (at the image's top edge: row 0, mirrored as a single pass does).
  s.start.resize(static_cast<size_t>(K) + 1);
  s.start[0] = s.read0;
  for (int k = 1; k <= K; ++k) {
    const int64_t up = s.start[static_cast<size_t>(k - 1)];
    s.start[static_cast<size_t>(k)] = up == 0 ? 0 : (up + 3) / 2;  // ceil((up + 2) / 2)
    TW_ASSERT(s.start[static_cast<size_t>(k)] <= s.own[static_cast<size_t>(k)].first);
  }
  // Bottom: a level's band is complete once its last row is, which needs
  // row 2e of the level above (e: the band's end, mirrored at the bottom
  // edge); the cascade hands a level on by whole bands, so that row arrives
  // with the end of the band above holding it. Hence about 2^K - 1 tiles'
  // rows of level 0 read past the share.
  int64_t end = s.own[static_cast<size_t>(K)].second;
  for (int k = K; k >= 1; --k)
    end = std::max(s.own[static_cast<size_t>(k - 1)].second, std::min(height(k - 1), ceil_div(2 * end + 1, T) * T));
  s.read1 = end;
  return s;
}

}  // namespace tw
