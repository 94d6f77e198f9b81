// The CPU-only build's answer to "which GPUs are there?".
#include "engine/cuda/device.hpp"

namespace tw {

bool cuda_compiled() {
  return false;
}
std::vector<CudaDeviceInfo> cuda_devices() {
  return {};
}
void cuda_warm_up() {}
bool cuda_devices_ready() {
  return true;
}
void cuda_settle() {}
std::string cuda_unavailable_reason() {
  return "this build has no CUDA backend (nvcc was not found)";
}

}  // namespace tw
