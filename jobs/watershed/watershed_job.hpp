#pragma once
// Marker-controlled watershed of a whole slide, out of core
// (kernels/watershed/watershed.hpp has the definition): IMAGE, MARKERS and
// the optional MASK are read tile by tile once; each tile's mask pixels are
// kept (altitude key, seed flag, label: 6-9 bytes a mask pixel) and flooded
// from their own seeds; a sparse tile-level wavefront
// (jobs/watershed/watershed_tiles.hpp) then carries the floods across tile
// borders until stable, flooding again only the parts of the mask a border
// change can decide. Pixels outside the mask read as 0.
#include <memory>
#include <string>

#include "engine/backend.hpp"
#include "engine/exec_context.hpp"
#include "engine/scratch_store.hpp"
#include "engine/wavefront/wavefront.hpp"
#include "jobs/watershed/watershed_tiles.hpp"
#include "kernels/watershed/watershed_cuda.hpp"

namespace tw {

struct WatershedJob {
  int connectivity = 8;  // 4 or 8
  int64_t tile = 256;    // the wavefront's tiles on the CPU
  // With CUDA: 0 picks the largest power of two up to 4096 whose tiles keep
  // the stores within the memory budget, no larger than the image needs
  // (never below `tile`).
  int64_t gpu_tile = 0;
  size_t memory = size_t{1} << 30;
  std::string scratch_near;  // scratch files go beside this path
  Backend backend;
};

struct WatershedResult {
  std::shared_ptr<BlobStore> costs;          // the stored tiles behind `labels`
  std::shared_ptr<const TileSource> labels;  // u32 labels (mpp of IMAGE); tiles never labelled read as 0
  WavefrontStats wavefront;                  // tile_visits: visits that flooded something
  BlobStore::Stats store;                    // of the tiles
  WsTilesStats tiles;                        // the details (flooded pixels, live tiles)
  int64_t seed_pixels = 0;                   // marker pixels inside the mask
  double load_seconds = 0;                   // loading (on the CPU with the first floods)
  GpuWatershedStats gpu;                     // with CUDA
};

WatershedJob watershed_job(const ExecContext& ctx, int connectivity);

// image: one channel of u8, u16 or f32 (lower floods first; NaN refused).
// markers: u32 labels (0: none). mask: null, or one channel (0: outside).
// All of one size; InputError naming what is wrong otherwise.
WatershedResult watershed(const TileSource& image, const TileSource& markers, const TileSource* mask,
                          const WatershedJob& job);

}  // namespace tw
