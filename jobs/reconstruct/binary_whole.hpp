#pragma once
// A binary reconstruction in one go (reconstruct_job.cpp tries it first):
// marker and mask read once, packed into the bit planes of the whole image
// on the host (an eighth of a byte a pixel) and solved over the whole image
// — no tiles, no visits, no halos, no stores to spill — by the bit-plane
// kernel on the GPU (sent up, brought back once) or by bit rows on every
// core (kernels/reconstruct/planes_cpu.hpp). The result is read from its
// bit plane. Where the image is not binary, the marker is out of order, the
// planes do not fit the budgets, or (CPU) the passes do not converge in
// their rounds, it gives nothing and the tile wavefront runs.
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "jobs/reconstruct/reconstruct_job.hpp"

namespace tw {

// A whole image's bit plane (the layout of engine/bit_plane.hpp) as an 8-bit
// source: a set bit reads 255, a clear one 0; with `zeros` the other way
// round (the planes of a reconstruction by erosion hold the zero bytes).
// Its bit_plane() gives the bits to readers that take them whole.
std::shared_ptr<const TileSource> make_bit_plane_source(std::vector<uint32_t> plane, int64_t w, int64_t h, bool zeros,
                                                        const SourceInfo& like);

std::optional<ReconstructResult> reconstruct_binary_whole(const TileSource& marker, const TileSource& mask,
                                                          const ReconstructJob& job);

}  // namespace tw
