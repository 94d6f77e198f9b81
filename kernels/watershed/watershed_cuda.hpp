#pragma once
// The watershed's tile rule on the GPU: the same fixed point as the CPU's
// Dijkstra (kernels/watershed/watershed.hpp), computed by rounds of 32x32
// blocks, each solved in shared memory against a frozen apron. Solves one
// tile (with its one-pixel halo of fixed neighbour values) per call; the
// tile-level wavefront engine does the rest, so images of any size work.
#include <cstdint>
#include <memory>

#include "engine/wavefront/wavefront.hpp"

namespace tw {

struct GpuWatershedStats {
  int64_t rounds = 0;        // block rounds, over all tiles
  int64_t block_solves = 0;  // blocks solved, over all rounds
  double kernel_seconds = 0;
  double transfer_seconds = 0;
};

// A TilePropagator on CUDA device `device`. Calls are serialised (one tile
// fills the GPU); use large tiles. stats may be null.
std::unique_ptr<TilePropagator> make_cuda_watershed_rule(int device, int connectivity, GpuWatershedStats* stats);

}  // namespace tw
