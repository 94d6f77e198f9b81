#pragma once
// How a pyramid is cut into passes within its budgets: level 0 in vertical
// stripes when one band of it does not fit, each stripe making levels 0..K
// with the halo columns its 5-tap REDUCE needs from its neighbours; and how
// many bands each pass keeps in flight.
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "engine/error.hpp"
#include "engine/pixel.hpp"
#include "jobs/pyramid/cascade.hpp"

namespace tw {

using Sizes = std::vector<std::pair<int64_t, int64_t>>;

struct Span {
  int64_t x0 = 0, x1 = 0;
};

// The columns one pass over a vertical stripe of level 0 computes and emits
// at each level 0..K. Emitted spans are tile-aligned; computed spans add the
// halo the 5-tap REDUCE needs from the neighbouring stripes.
struct PassGeom {
  int K = 0;
  std::vector<CascadeLevel> levels;
  std::vector<Span> emit;
};

PassGeom stripe_geometry(const Sizes& sizes, int K, int64_t X0, int64_t X1);

struct Plan {
  int K = 0;      // levels 0..K come from each stripe
  int64_t S = 0;  // stripe width at level 0
  int tokens = 1;
  size_t bytes = 0;
  size_t device_bytes = 0;
};

// Budgets: host memory, and device memory when gpu_memory > 0. ratio: the
// sink's compressed size of a tile relative to its raw size. BudgetTooSmall
// where `memory` holds no band.
Plan choose_plan(const Sizes& sizes, PixelFormat fmt, int64_t T, size_t memory, size_t gpu_memory, int threads,
                 double ratio);

// The least any pass of this pyramid holds, whatever the threads, codec and
// device: one thread, one band of the narrowest stripe, the cascade on a
// GPU, tiles compressed to nothing. More than --memory: no plan fits, and
// a command can say so before its steps run.
size_t least_pass_bytes(const Sizes& sizes, PixelFormat fmt, int64_t T);

// Tiles of levels from..end at tile size T.
int64_t tiles_in(const Sizes& sizes, int64_t T, size_t from);

}  // namespace tw
