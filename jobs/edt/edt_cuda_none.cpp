// Builds without CUDA: no GPU distance transform.
#include "engine/error.hpp"
#include "jobs/edt/edt_cuda_job.hpp"

namespace tw {

std::shared_ptr<const TileSource> euclidean_distance_cuda(const TileSource&, const EdtCudaJob&, EdtStats*) {
  throw InputError("this build has no CUDA backend (nvcc was not found when it was built)");
}

}  // namespace tw
