#pragma once
// The CUDA devices this process can use. Safe to call in any build: a build
// without CUDA, or a machine without a driver or GPU, reports none.
#include <string>
#include <vector>

namespace tw {

struct CudaDeviceInfo {
  int index = 0;
  std::string name;
  int sm_major = 0, sm_minor = 0;
  int multiprocessors = 0;
  size_t memory_bytes = 0;
  size_t free_bytes = 0;
};

bool cuda_compiled();  // this build has the CUDA backend compiled in
std::vector<CudaDeviceInfo> cuda_devices();
// Why there are no devices ("no CUDA driver", "no GPU", ...), for messages.
std::string cuda_unavailable_reason();

}  // namespace tw
