// Builds without CUDA: no GPU math.
#include "engine/error.hpp"
#include "kernels/math/math_cuda.hpp"

namespace tw::ops {

std::shared_ptr<const TileSource> make_math_cuda(MathKind, std::shared_ptr<const TileSource>,
                                                 std::shared_ptr<const TileSource>, int, const std::string&) {
  throw InputError("this build has no CUDA backend (nvcc was not found when it was built)");
}

}  // namespace tw::ops
