#pragma once
// A grey (8- or 16-bit) reconstruction on the GPU in one go, the
// counterpart of binary_whole.hpp for images that are not binary (h-dome's
// input, a grey reconstruct): the mask — and a given marker — computed or
// read once into device memory (a GPU chain's result never leaves it), the
// marker made there from the mask where the op defines it so (h-dome,
// fill-holes), one kernel run over the whole image, and the result either
// left in device memory for the GPU steps that read it or brought down once
// into a tile store. No tiles, no visits, no tile re-uploaded per visit.
// Where the images do not fit both budgets, or a given marker is out of
// order, it gives nothing and the tile wavefront runs (and reports).
#include <optional>

#include "jobs/reconstruct/reconstruct_job.hpp"

namespace tw {

std::optional<ReconstructResult> reconstruct_grey_whole(const TileSource& marker, const TileSource& mask,
                                                        const ReconstructJob& job);

}  // namespace tw
