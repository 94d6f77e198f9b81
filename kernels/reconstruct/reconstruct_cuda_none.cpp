// Builds without CUDA: no GPU rule.
#include "engine/error.hpp"
#include "kernels/reconstruct/reconstruct_cuda.hpp"

namespace tw {

std::unique_ptr<TilePropagator> make_cuda_reconstruct_rule(int, PixelFormat, const ReconstructParams&,
                                                           GpuWavefrontStats*) {
  throw InputError("this build has no CUDA backend (nvcc was not found when it was built)");
}

std::unique_ptr<TilePropagator> make_cuda_binary_reconstruct_rule(int, int, GpuWavefrontStats*, bool) {
  throw InputError("this build has no CUDA backend (nvcc was not found when it was built)");
}

void reconstruct_binary_planes(int, int, uint32_t*, const uint32_t*, int64_t, int64_t, GpuWavefrontStats*) {
  throw InputError("this build has no CUDA backend (nvcc was not found when it was built)");
}

bool fill_holes_binary_on_device(int, int, const uint8_t*, size_t, int64_t, int64_t, uint32_t*, GpuWavefrontStats*) {
  throw InputError("this build has no CUDA backend (nvcc was not found when it was built)");
}

size_t grey_whole_image_device_bytes(int64_t, int64_t) {
  return 0;
}

bool reconstruct_grey_on_device(int, const GreyWholeImage&, GpuWavefrontStats*) {
  throw InputError("this build has no CUDA backend (nvcc was not found when it was built)");
}

}  // namespace tw
