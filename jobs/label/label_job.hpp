#pragma once
// Connected components of a whole slide, out of core and exact
// (docs/ops/label.md): u32 labels 1..N in raster order of each component's
// first pixel, as scipy.ndimage.label and skimage.measure.label number them,
// the same for every tile size, memory budget and backend.
//
//  1. Tiles are labelled independently (kernels/label: CPU, or the GPU's
//     block union-find) into a tile store; each tile records the pieces that
//     touch its borders (a record each), its border pixels as indices of
//     those records, and how many of its pieces start on each of its rows.
//  2. Union-find over the border pieces only, joining pieces that touch
//     across tile borders; each set learns its first pixel (the smallest
//     linear index of its pieces' first pixels).
//  3. Bands of tiles, top to bottom: the components starting in each row of
//     each tile are counted, an exclusive prefix over (row, tile column)
//     gives every start its number, and the tiles are relabelled in place.
// The tables of steps 1-2 live in paged arrays (jobs/label/paged_array.hpp)
// that spill to scratch files beyond their share of the budget.
#include <cstdint>
#include <memory>

#include "engine/exec_context.hpp"
#include "engine/tile_source.hpp"

namespace tw {

struct LabelStats {
  uint64_t components = 0;
  uint64_t border_pieces = 0;  // union-find records
  int64_t tiles = 0, tile = 0;
  double seconds = 0, local_seconds = 0, merge_seconds = 0, relabel_seconds = 0;
  uint64_t tiles_spilled = 0, table_pages_spilled = 0;
  bool gpu = false;
  double gpu_kernel_seconds = 0, gpu_transfer_seconds = 0;
};

// Labels the non-zero pixels of `mask` (one channel of any sample type; f32
// NaN counts as set) with connectivity 4 or 8. The result is u32, carries
// the mask's mpp, and is held in a tile store read on demand: its cache
// (a quarter of ctx.memory) is taken from ctx (take_memory). Uses ctx's
// backend (CUDA labels the tiles on the GPU), tile size, budget and scratch
// place. InputError for a mask of several channels, or more than 2^32 - 1
// components.
std::shared_ptr<const TileSource> label_components(std::shared_ptr<const TileSource> mask, int connectivity,
                                                   ExecContext& ctx, LabelStats* stats = nullptr);

}  // namespace tw
