// Builds without CUDA: no GPU distance transform.
#include "engine/error.hpp"
#include "kernels/edt/edt_cuda.hpp"

namespace tw {

std::shared_ptr<const TileSource> euclidean_distance_cuda(const TileSource&, const EdtCudaJob&, EdtStats*) {
  throw InputError("this build has no CUDA backend (nvcc was not found when it was built)");
}

}  // namespace tw
