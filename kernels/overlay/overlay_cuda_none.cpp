// Builds without CUDA: no GPU overlay.
#include "engine/error.hpp"
#include "kernels/overlay/overlay_cuda.hpp"

namespace tw {

std::shared_ptr<const TileSource> make_overlay_cuda(std::shared_ptr<const TileSource>,
                                                    std::shared_ptr<const TileSource>, std::array<uint8_t, 3>, int) {
  throw InputError("this build has no CUDA backend (nvcc was not found when it was built)");
}

}  // namespace tw
