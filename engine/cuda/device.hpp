#pragma once
// The CUDA devices this process can use. Safe to call in any build: a build
// without CUDA, or a machine without a driver or GPU, reports none.
#include <cstddef>
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

bool cuda_compiled();
// The device-memory budget: what the user asked for (--gpu-memory), else
// half of the free memory (at least 64 MiB).
inline size_t gpu_memory_budget(size_t requested, size_t free_bytes) {
  return requested ? requested : (free_bytes / 2 > (size_t{64} << 20) ? free_bytes / 2 : size_t{64} << 20);
}  // this build has the CUDA backend compiled in
// The devices are probed once per process (free memory as of then).
std::vector<CudaDeviceInfo> cuda_devices();
// Starts the probe on a background thread, so that CUDA's start-up (driver,
// contexts: ~0.3 s on an H100 host) overlaps other work; cuda_devices()
// then waits for it.
void cuda_warm_up();
// Whether cuda_devices() would answer without waiting.
bool cuda_devices_ready();
// Waits for a probe cuda_warm_up started. Call before the process exits:
// the CUDA runtime's exit-time teardown must not meet a thread still
// starting it (that hung a process that failed early).
void cuda_settle();
// Why there are no devices ("no CUDA driver", "no GPU", ...), for messages.
std::string cuda_unavailable_reason();

}  // namespace tw
