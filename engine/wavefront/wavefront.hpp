#pragma once
// The Irregular Wavefront Propagation Pattern at tile level (ARCHITECTURE.md,
// "Wavefront propagation"), out of core: the working raster J lives in a
// ScratchStore. A global queue holds tiles whose inputs changed; a processed
// tile propagates to stability against a one-pixel halo taken from its
// neighbours' last published borders, publishes its own borders, and
// re-queues each neighbour whose incoming border changed. A tile whose halo
// changes while it is being processed runs again. The run ends when the
// queue is empty and no tile is in flight. Tiles run in parallel (oneTBB).
#include <cstdint>
#include <memory>

#include "engine/scratch_store.hpp"

namespace tw {

class Ranks;

// The op's rule for one tile. Implementations are stateless or thread-safe:
// propagate() runs on many tiles at once.
class TilePropagator {
 public:
  virtual ~TilePropagator() = default;
  // j: the tile's working values with a one-pixel halo (rect = core grown by
  // one; halo pixels outside the image hold neutral values); i: the mask over
  // the core. Updates core pixels of j until no rule applies, treating the
  // halo as fixed. Returns whether any core pixel changed.
  virtual bool propagate(const ImageView& j, const ImageView& i, const Rect& core) const = 0;
  // A value that propagates nothing (outside the image).
  virtual void neutral(uint8_t* pixel) const = 0;
  // Whether a pixel of value `from` next to a pixel (j, i) would change it:
  // lets the engine leave alone a neighbour that nothing of ours can reach.
  virtual bool can_propagate(const uint8_t* from, const uint8_t* j, const uint8_t* i) const = 0;
};

struct WavefrontOptions {
  int connectivity = 8;     // 4 or 8
  int max_concurrency = 0;  // tiles in work at once; 0: one per thread
  // Several ranks: each propagates its band of tile rows and all end with
  // the whole result (ranked_wavefront.hpp). Null or size 1: this process.
  Ranks* ranks = nullptr;
};

struct WavefrontStats {
  int64_t tiles = 0;
  int64_t tile_visits = 0;  // summed over ranks
  double seconds = 0;
  // Over ranks: messages and their bytes (edges, termination, the result).
  int64_t messages = 0, message_bytes = 0;
};

WavefrontStats run_wavefront(ScratchStore& j, ScratchStore& i, const TilePropagator& rule, const WavefrontOptions& opt);

}  // namespace tw
