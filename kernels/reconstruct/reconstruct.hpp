#pragma once
// Grayscale morphological reconstruction (seed 001, alg. 3; Vincent 1993).
// By dilation: the marker J grows under the mask I,
//   J(q) < J(p) and J(q) < I(q)  =>  J(q) = min(J(p), I(q)),
// until stable; by erosion, the dual. The result equals
// skimage.morphology.reconstruction (footprint: cross for 4-connectivity,
// square for 8).
#include <memory>
#include <string>

#include "engine/wavefront/wavefront.hpp"

namespace tw {

enum class ReconstructMethod { kDilation, kErosion };
ReconstructMethod parse_reconstruct_method(const std::string& s);

struct ReconstructParams {
  ReconstructMethod method = ReconstructMethod::kDilation;
  int connectivity = 8;
  void validate() const;  // InputError
};

// The tile rule for the wavefront engine (8- or 16-bit gray).
std::unique_ptr<TilePropagator> make_reconstruct_rule(PixelFormat fmt, const ReconstructParams& p);

// Whole-image reference (one tile, no halo): reconstructs j in place under i.
void reconstruct_image(Image& j, const Image& i, const ReconstructParams& p);

}  // namespace tw
