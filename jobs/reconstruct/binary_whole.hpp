#pragma once
// A binary reconstruction on the GPU in one go (reconstruct_job.cpp tries it
// first with CUDA): marker and mask read once, packed into the bit planes of
// the whole image on the host (an eighth of a byte a pixel), sent up, solved
// by the bit-plane kernel over the whole image — no tiles, no visits, no
// halos — and brought back once. The result is read from its bit plane.
// Where the image is not binary, the marker is out of order, or the planes
// do not fit the budgets, it gives nothing and the tile wavefront runs.
#include <optional>

#include "jobs/reconstruct/reconstruct_job.hpp"

namespace tw {

std::optional<ReconstructResult> reconstruct_binary_whole(const TileSource& marker, const TileSource& mask,
                                                          const ReconstructJob& job);

}  // namespace tw
