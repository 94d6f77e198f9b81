#pragma once
// The wavefront engine split over ranks (docs/distributed-wavefront.md).
// Every rank holds the same whole J and I; each propagates only the tiles of
// its band of tile rows, with the one-process engine's tile step. An edge
// that changes facing another rank's band is sent to it as a message; a
// counting termination wave (Mattern's four counters, coordinated by rank 0)
// ends the run once every rank is idle and every message sent has been taken
// in; then each rank broadcasts the tiles it changed, so that every rank's J
// holds the whole result, equal byte for byte to one process's.
#include <cstdint>

#include "engine/wavefront/wavefront.hpp"

namespace tw {

// The tile rows [first, end) that `rank` of `ranks` owns: balanced bands in
// rank order; a rank owns none when there are fewer rows than ranks.
struct RowBand {
  int64_t first = 0, end = 0;
};
RowBand wavefront_band(int64_t rows, int rank, int ranks);

// run_wavefront for opt.ranks of size > 1; every rank calls it with the same
// J, I, rule and options. A rank whose tiles fail ends every rank
// (Ranks::abort) rather than leaving them waiting for its messages.
WavefrontStats run_ranked_wavefront(ScratchStore& j, ScratchStore& i, const TilePropagator& rule,
                                    const WavefrontOptions& opt);

}  // namespace tw
