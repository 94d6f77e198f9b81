#include <chrono>
#include <future>
#include <mutex>

#include "engine/cuda/cuda_check.hpp"
#include "engine/cuda/device.hpp"

namespace tw {

void throw_cuda(cudaError_t e, const char* call, const char* file, int line) {
  throw CudaError(std::string(call) + " failed at " + file + ":" + std::to_string(line) + ": " + cudaGetErrorString(e));
}

bool cuda_compiled() {
  return true;
}

namespace {

struct Probe {
  std::vector<CudaDeviceInfo> devices;
  std::string reason;  // why there are none
};

// Also creates each device's primary context (cudaMemGetInfo needs one):
// that and the driver's start are most of CUDA's ~0.3 s set-up cost.
Probe probe() {
  Probe out;
  int n = 0;
  // No driver or no GPU is an ordinary situation here, not an error.
  const cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) {
    cudaGetLastError();
    out.reason = cudaGetErrorString(e);
    return out;
  }
  if (n == 0) out.reason = "no CUDA device";
  for (int i = 0; i < n; ++i) {
    cudaDeviceProp p{};
    TW_CUDA_CHECK(cudaGetDeviceProperties(&p, i));
    CudaDeviceInfo d;
    d.index = i;
    d.name = p.name;
    d.sm_major = p.major, d.sm_minor = p.minor;
    d.multiprocessors = p.multiProcessorCount;
    d.memory_bytes = p.totalGlobalMem;
    int prev = 0;
    TW_CUDA_CHECK(cudaGetDevice(&prev));
    TW_CUDA_CHECK(cudaSetDevice(i));
    size_t free_b = 0, total_b = 0;
    if (cudaMemGetInfo(&free_b, &total_b) == cudaSuccess) d.free_bytes = free_b;
    TW_CUDA_CHECK(cudaSetDevice(prev));
    out.devices.push_back(d);
  }
  return out;
}

std::once_flag g_started;
std::shared_future<Probe> g_probe;

const std::shared_future<Probe>& started() {
  std::call_once(g_started, [] { g_probe = std::async(std::launch::async, probe).share(); });
  return g_probe;
}

}  // namespace

void cuda_warm_up() {
  started();
}

bool cuda_devices_ready() {
  return started().wait_for(std::chrono::seconds(0)) == std::future_status::ready;
}

std::vector<CudaDeviceInfo> cuda_devices() {
  return started().get().devices;
}

void cuda_settle() {
  if (g_probe.valid()) g_probe.wait();
}

std::string cuda_unavailable_reason() {
  return started().get().reason;
}

}  // namespace tw
