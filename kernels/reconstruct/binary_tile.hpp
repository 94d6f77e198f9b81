#pragma once
// The CPU wavefront's fast path for binary tiles (masks from a threshold:
// fill-holes, hysteresis-like reconstructions): a tile whose working values,
// halo and mask take only 0 and the type's maximum is reconstructed on bit
// rows, 64 pixels a word. Row by row, the pixels a neighbour row reaches
// seed whole runs of the row's allowed pixels at once (a carry through an
// addition fills a run), in raster and anti-raster passes until nothing
// changes. Same result as the byte rule (reconstruction is unique), about
// 10x fewer operations: fill-holes of a 1-GP mask spent most of its time in
// the byte rule's scans.
#include "engine/image.hpp"

namespace tw {

// Reconstructs the core of j (with its one-pixel halo, as TilePropagator's
// propagate() gets it) under i. Returns false, leaving j untouched, when the
// tile is not binary (or is not worth it); else sets `changed`.
template <class T>
bool propagate_binary_tile(const ImageView& j, const ImageView& i, const Rect& core, bool dilate, bool eight,
                           bool& changed);

}  // namespace tw
