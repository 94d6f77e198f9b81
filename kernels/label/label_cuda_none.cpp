// Builds without CUDA: no GPU labeler.
#include "engine/error.hpp"
#include "kernels/label/label_cuda.hpp"

namespace tw::label {

std::unique_ptr<CudaTileLabeler> make_cuda_tile_labeler(int, int64_t, int64_t) {
  throw InputError("this build has no CUDA backend (nvcc was not found when it was built)");
}

size_t label_device_scratch_bytes(int64_t, int64_t) {
  return 0;
}

uint32_t label_device(const uint8_t*, int64_t, int64_t, int, uint32_t*, void*, void*) {
  throw InputError("this build has no CUDA backend (nvcc was not found when it was built)");
}

}  // namespace tw::label
