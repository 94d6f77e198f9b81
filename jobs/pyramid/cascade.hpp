#pragma once
// The pyramid as a cascade (ARCHITECTURE.md "Data flow"): level 0 streams in
// as bands of rows; each level keeps the last few rows of the level above,
// computes every row of its own as soon as the 5 input rows it needs have
// arrived, and hands complete bands (tile-height rows) on to the next level
// and to the encoder. Level 0 is read once; every level is made in one pass.
#include <tbb/enumerable_thread_specific.h>

#include <functional>
#include <memory>
#include <vector>

#include "engine/image.hpp"
#include "engine/image_pool.hpp"

namespace tw {

struct CascadeLevel {
  int64_t width = 0, height = 0;  // the whole level
  int64_t col0 = 0, col1 = 0;     // the columns this cascade computes (a stripe)
  // The first row this cascade computes (0, or later for a share of a slide
  // split by rows: jobs/pyramid/band_share.hpp). Level 0's first pushed row
  // is levels[0].row0; a later level's row0 must only need rows at or after
  // the level above's (2 * row0 - 2 >= row0 of the level above).
  int64_t row0 = 0;
};

// A cascade's state between two pushes, so that another implementation (the
// GPU's) can carry on from it. Views point into the cascade's buffers.
struct CascadeSnapshot {
  struct Level {
    ImageView carry;       // rows [carry.rect.y, +h) of the level above; h may be 0
    int64_t next_out = 0;  // next row of this level to compute
    int64_t band_y0 = 0;   // first row of the band in progress
    ImageView band;        // its rows computed so far, [band_y0, next_out); h may be 0
  };
  std::vector<Level> levels;  // [0] unused
};

class PyramidCascade {
 public:
  // Receives each finished band of a level >= 1: rows [y, y + band_rows)
  // (fewer at the bottom), columns [col0, col1) of that level.
  using Emit = std::function<void(int level, const std::shared_ptr<const Image>& band)>;

  PyramidCascade(PixelFormat fmt, std::vector<CascadeLevel> levels, int64_t band_rows, ImagePool& pool);

  // The next rows of level 0, in order from row 0, columns [col0, col1) of
  // level 0 (any number of rows per call).
  void push(const std::shared_ptr<const Image>& rows, const Emit& emit);

  // Bytes the cascade holds between calls (bands in progress, carried rows).
  static size_t state_bytes(PixelFormat fmt, const std::vector<CascadeLevel>& levels, int64_t band_rows);
  int64_t rows_done(int level) const { return state_.at(level).next_out; }
  CascadeSnapshot snapshot() const;

 private:
  struct State {
    Image carry[2];  // the last <= 4 rows of the level above, double-buffered
    int which = 0;
    int64_t carry_y0 = 0, carry_n = 0;
    int64_t next_out = 0;  // next row of this level to compute
    std::shared_ptr<Image> band;
    int64_t band_y0 = 0;
  };
  void push_level(int k, const std::shared_ptr<const Image>& chunk, const Emit& emit);

  PixelFormat fmt_;
  std::vector<CascadeLevel> levels_;
  int64_t band_rows_;
  ImagePool& pool_;
  std::vector<State> state_;
  // The row reducer's sums, per thread; the cascade's own, not a static:
  // exit() destroys statics while a job still running (a daemon thread of
  // Python) uses them.
  tbb::enumerable_thread_specific<std::vector<uint32_t>> scratch_;
};

}  // namespace tw
