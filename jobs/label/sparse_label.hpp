#pragma once
// Labels of a mask with few set pixels — a watershed's markers, the
// h-maxima of nuclei, are about 0.1% of a slide — kept as the sorted list of
// those pixels and their labels instead of a u32 tile store of the whole
// image (268 MB at 8192², which label_components writes, spills under a
// small budget and reads back). The numbering is label_components': 1..N in
// raster order of each component's first pixel, as scipy and scikit-image
// number them.
#include <cstddef>
#include <memory>

#include "engine/tile_source.hpp"
#include "jobs/label/label_job.hpp"

namespace tw {

// The components of the non-zero pixels of `mask` (one channel of u8) with
// connectivity 4 or 8, as a u32 source with the mask's size and mpp; its
// pixels are held in 12 bytes each. Null where `mask` is not u8 gray or has
// more than `max_pixels` non-zero pixels: label it with label_components.
// The mask is read once, in tiles of `tile` on all threads.
std::shared_ptr<const TileSource> label_sparse(const TileSource& mask, int connectivity, int64_t tile,
                                               size_t max_pixels, LabelStats* stats = nullptr);

}  // namespace tw
