#pragma once
// The watershed's own tile-level wavefront (the engine's pattern,
// engine/wavefront/, made sparse and compact for this op): memory and work
// in proportion to the mask, not the image.
//
// * Tiles with no mask pixel are never stored, queued or flooded: they read
//   as 0 and show their neighbours an unreached border.
// * A tile keeps only its mask pixels (jobs/watershed/tile_blobs.hpp): runs
//   along its rows, and per pixel the altitude key (1, 2 or 4 bytes for
//   u8, u16, f32 images), a seed flag and the label: 6-9 bytes a mask pixel.
//   The costs (m, d) are not stored: a flood starts from scratch, so only
//   the labels and each tile's edge costs are kept. The edge state (edge
//   costs and inputs, the halo last flooded against) is a second blob of
//   the tile in the same store, spilled like the pixels: nothing kept in
//   memory grows with the slide but a few bytes of bookkeeping a tile.
// * A visit compares the halo with the one the tile was last flooded
//   against. A halo pixel that changed matters only if its old or new offer
//   to an edge pixel is at most that pixel's cost; the others leave the
//   fixed point as it is. Each connected part of the tile's mask touched by
//   one that matters is flooded again, from scratch, alone (parts of the mask
//   never meet inside the tile): the same result as flooding the tile, for
//   the price of the part.
// * Tiles wait in one queue by the cheapest changed edge cost next to them.
// * With CUDA, a tile with anything to do is flooded whole on the GPU (the
//   TilePropagator of kernels/watershed/watershed_cuda.cu, its core starting
//   unreached).
#include <memory>
#include <string>

#include "engine/tile_source.hpp"
#include "engine/wavefront/wavefront.hpp"
#include "jobs/watershed/tile_blobs.hpp"

namespace tw {

struct WsTilesOptions {
  int connectivity = 8;
  int64_t tile = 256;
  size_t memory = size_t{1} << 30;
  std::string scratch_near;
  const TilePropagator* gpu = nullptr;  // the CUDA rule; null: the CPU's region floods
};

struct WsTilesStats {
  int64_t tiles = 0;
  int64_t live_tiles = 0;      // with a mask pixel: the only ones stored
  int64_t visits = 0;          // tiles taken from the queue
  int64_t floods = 0;          // visits that flooded something (loading's floods not counted)
  int64_t flooded_pixels = 0;  // by those visits
  int64_t loaded_pixels = 0;   // flooded while loading
  int64_t seed_pixels = 0;
  size_t edge_state_bytes = 0;  // the live tiles' edges and halos: blobs in the store while it runs
  double load_seconds = 0, wavefront_seconds = 0;
  BlobStore::Stats store;  // the tiles' blobs
};

struct WsTilesResult {
  std::shared_ptr<const TileSource> labels;  // u32 (tiles without a mask pixel read as 0)
  std::shared_ptr<BlobStore> store;          // the tiles behind it (for the caller's cache budget)
  WsTilesStats stats;
};

// Inputs checked by the caller (formats and sizes); NaN is refused here.
WsTilesResult watershed_tiles(const TileSource& image, const TileSource& markers, const TileSource* mask,
                              const WsTilesOptions& opt);

}  // namespace tw
