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
#include <limits>
#include <memory>

#include "engine/exec_context.hpp"
#include "engine/tile_source.hpp"

namespace tw {

class ScratchStore;

// Components to drop while labelling (what `objects` does to a mask in the
// same pass): the others are numbered 1..N in raster order as if the dropped
// ones were background. Areas in pixels, or square microns when px_area > 0.
struct LabelFilter {
  double min_area = 0;
  double max_area = std::numeric_limits<double>::infinity();
  double px_area = 0;           // square microns per pixel; 0: areas in pixels
  bool exclude_border = false;  // drop components with a pixel on the image's border
  bool active() const { return min_area > 0 || max_area < std::numeric_limits<double>::infinity() || exclude_border; }
  double area(uint64_t px) const { return px_area > 0 ? static_cast<double>(px) * px_area : static_cast<double>(px); }
  // Below min_area, above max_area. An area in square microns is rounded
  // (1000 px at 0.1 µm/px is 10.000000000000002 µm²): one within a
  // billionth of a bound is on it, and kept.
  bool too_small(uint64_t px) const { return area(px) < min_area - 1e-9 * min_area; }
  bool too_large(uint64_t px) const { return area(px) > max_area + 1e-9 * max_area; }
  bool keep(uint64_t px, bool border) const { return !too_small(px) && !too_large(px) && !(exclude_border && border); }
};

struct LabelStats {
  uint64_t components = 0;  // numbered (kept by the filter)
  uint64_t found = 0;       // before the filter
  uint64_t removed_small = 0, removed_large = 0, removed_border = 0;
  uint64_t border_pieces = 0;  // union-find records
  int64_t tiles = 0, tile = 0;
  double seconds = 0, local_seconds = 0, merge_seconds = 0, relabel_seconds = 0;
  uint64_t tiles_spilled = 0, table_pages_spilled = 0;
  bool gpu = false;
  int64_t gpu_tiles = 0;  // of the tiles, those the GPU labelled (the CPU took the rest)
  double gpu_kernel_seconds = 0, gpu_transfer_seconds = 0;
};

// Labels the non-zero pixels of `mask` (one channel of any sample type; f32
// NaN counts as set) with connectivity 4 or 8. The result is u32, carries
// the mask's mpp, and is held in a tile store read on demand: its cache
// (a quarter of ctx.memory) is taken from ctx (take_memory). Uses ctx's
// backend (CUDA labels the tiles on the GPU), tile size, budget and scratch
// place. InputError for a mask of several channels, or more than 2^32 - 1
// components.
// With a filter, components it drops are background in the result (and in
// the numbering).
std::shared_ptr<const TileSource> label_components(std::shared_ptr<const TileSource> mask, int connectivity,
                                                   ExecContext& ctx, LabelStats* stats = nullptr,
                                                   const LabelFilter& filter = LabelFilter());

// Sets the memory a result's store keeps once its job is done, and takes
// it from ctx: all its tiles where that is at most half of what the budget
// has left, else that half.
// Later steps read such a result whole and in order, sometimes several
// times (an area filter's labels are read by the EDT, a mask and the
// watershed in `tilewave nuclei`); a cache short of the store makes every
// such read a reload from its scratch file (in LRU order, all of it), while
// the half left keeps room for the steps after.
void keep_result_cached(ScratchStore& store, ExecContext& ctx);

// The store under a result of labels_result (nullptr for any other source):
// for a pass over its tiles in place, without copying each out.
std::shared_ptr<ScratchStore> store_of_labels(const TileSource& labels);

// A store of labels as a result: read through, named, with `like`'s
// resolution (label's and objects' results).
std::shared_ptr<const TileSource> labels_result(std::shared_ptr<ScratchStore> store, const SourceInfo& like,
                                                const std::string& name);

// The same labels in a tile store (its cache left as the job used it, none
// taken from ctx): for jobs that go on modifying them (`objects`). The
// store's tile size may differ from ctx.tile (GPU tiles are larger).
std::shared_ptr<ScratchStore> label_to_store(const TileSource& mask, int connectivity, ExecContext& ctx,
                                             LabelStats* stats = nullptr, const LabelFilter& filter = LabelFilter());

// The components the filter keeps as a u8 mask (255 on them, 0 elsewhere)
// in a tile store (its cache as the job used it, none taken from ctx):
// label_to_store's passes and numbering (stats alike), without keeping the
// u32 labels between them: the last pass labels each tile again (on the CPU
// whatever ctx's backend) and writes the mask. For `objects --mask` of a
// mask on the CPU: no u32 image of labels to hold or spill (1 GB at 16384²).
std::shared_ptr<ScratchStore> kept_components_mask(const TileSource& mask, int connectivity, ExecContext& ctx,
                                                   LabelStats* stats = nullptr,
                                                   const LabelFilter& filter = LabelFilter());

}  // namespace tw
