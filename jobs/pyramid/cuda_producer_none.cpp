// Builds without CUDA: the producer does not exist.
#include "engine/error.hpp"
#include "jobs/pyramid/level_producer.hpp"

namespace tw {

const HostAllocator* gpu_host_allocator() {
  return nullptr;
}

size_t cuda_producer_bytes(PixelFormat, const std::vector<CascadeLevel>&, int64_t) {
  return 0;
}

bool cuda_can_decode(const RawTileFormat&) {
  return false;
}

size_t cuda_encode_bytes(const JpegEncodeSpecs&, const std::vector<CascadeLevel>&) {
  return 0;
}

size_t cuda_coef_bytes(PixelFormat, const CascadeLevel&, int64_t, const JpegCoefLayout&, int) {
  return 0;
}

size_t cuda_jpeg_bytes(PixelFormat, const CascadeLevel&, int64_t, int64_t) {
  return 0;
}

std::unique_ptr<LevelProducer> make_cuda_producer(int, PixelFormat, std::vector<CascadeLevel>, int64_t, ImagePool&,
                                                  int64_t) {
  throw InputError("this build has no CUDA backend (nvcc was not found when it was built)");
}

}  // namespace tw
