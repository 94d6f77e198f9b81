// The CPU-only build's device images: there are none to read or make.
#include "engine/cuda/device.hpp"
#include "engine/cuda/device_image.hpp"
#include "engine/error.hpp"

namespace tw {
namespace {
[[noreturn]] void no_cuda() {
  throw CudaError("device arrays need the CUDA backend: " + cuda_unavailable_reason());
}
}  // namespace

int device_of_pointer(const void*) {
  no_cuda();
}
void synchronize_device(int) {
  no_cuda();
}
SourcePtr make_device_image_source(const DeviceImage&, std::shared_ptr<void>, const std::string&) {
  no_cuda();
}
std::shared_ptr<uint8_t> allocate_device_bytes(int, size_t) {
  no_cuda();
}
bool compute_into_device(const TileSource&, const DeviceImage&, size_t) {
  no_cuda();
}
bool compute_rect_into_device(const TileSource&, const Rect&, const DeviceImage&, size_t) {
  no_cuda();
}
void for_each_band_from_device(const DeviceImage&, int64_t, const std::function<void(const ImageView&)>&) {
  no_cuda();
}

}  // namespace tw
