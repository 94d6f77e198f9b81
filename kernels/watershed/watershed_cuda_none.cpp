// Builds without CUDA: no GPU rule.
#include "engine/error.hpp"
#include "kernels/watershed/watershed_cuda.hpp"

namespace tw {

std::unique_ptr<TilePropagator> make_cuda_watershed_rule(int, int, GpuWatershedStats*) {
  throw InputError("this build has no CUDA backend (nvcc was not found when it was built)");
}

}  // namespace tw
