#pragma once
// Object filters on a label image, out of core and exact (docs/ops/objects.md):
// an object is all pixels of one label value (connected or not). Holes are
// filled first (optional), then objects are removed by area and by touching
// the image border, and the kept objects are renumbered 1..N in raster order
// of their first pixels: `objects` of `label` equals scikit-image's
// remove_small_objects followed by a relabelling.
#include <cstdint>
#include <limits>
#include <memory>

#include "engine/exec_context.hpp"
#include "engine/tile_source.hpp"
#include "jobs/label/label_job.hpp"

namespace tw {

class OpRegistry;

struct ObjectsParams {
  double min_area = 0;                                        // objects smaller are removed
  double max_area = std::numeric_limits<double>::infinity();  // objects larger are removed
  bool um2 = false;                                           // areas in square microns (the image's mpp), not pixels
  bool exclude_border = false;                                // remove objects with a pixel on the image's border
  bool fill_holes = false;                                    // fill each object's holes first
  int connectivity = 8;                                       // of a binary input's objects; holes take the other one
  // u32 labels that stay readable and unchanged as long as the result lives
  // (a pipeline's stored result): the result may be a view of them through a
  // renumbering table, not a copy (filter_objects says when).
  bool view_of_input = false;
  // For a u8/u16 mask without fill_holes: the result is the kept objects
  // as a u8 mask (255), made without a u32 image of labels
  // (kept_components_mask). Ignored otherwise.
  bool mask_out = false;
};

struct ObjectsStats {
  uint64_t objects = 0, kept = 0;
  uint64_t removed_small = 0, removed_large = 0, removed_border = 0;
  uint64_t holes_filled = 0;
  uint64_t tiles_spilled = 0, table_pages_spilled = 0;  // of the job's store and tables
  double seconds = 0;
  // A mask's labelling (jobs/label/label_job.hpp): its passes and the GPU's share.
  LabelStats labelling;
};

// labels: u32 labels, or a u8/u16 mask (labelled first with
// p.connectivity). The result is u32 with the input's mpp, held in a tile
// store whose cache (a quarter of ctx.memory) is taken from ctx; with
// p.view_of_input, u32 labels without --fill-holes whose largest value's
// table fits an eighth of the budget come out as a view of `labels` read
// through a table of the new numbers (taken from ctx), and *is_view is set.
std::shared_ptr<const TileSource> filter_objects(std::shared_ptr<const TileSource> labels, const ObjectsParams& p,
                                                 ExecContext& ctx, ObjectsStats* stats = nullptr,
                                                 bool* is_view = nullptr);

// The `objects` op's registry entry (jobs/label/label_ops.cpp).
void register_objects(OpRegistry& r);

}  // namespace tw
