#include "engine/cuda/cuda_check.hpp"
#include "engine/cuda/device.hpp"

namespace tw {

void throw_cuda(cudaError_t e, const char* call, const char* file, int line) {
  throw CudaError(std::string(call) + " failed at " + file + ":" + std::to_string(line) + ": " +
                  cudaGetErrorString(e));
}

bool cuda_compiled() { return true; }

std::vector<CudaDeviceInfo> cuda_devices() {
  std::vector<CudaDeviceInfo> out;
  int n = 0;
  // No driver or no GPU is an ordinary situation here, not an error.
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError();
    return out;
  }
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
    out.push_back(d);
  }
  return out;
}

std::string cuda_unavailable_reason() {
  int n = 0;
  const cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) {
    cudaGetLastError();
    return cudaGetErrorString(e);
  }
  return n == 0 ? "no CUDA device" : "";
}

}  // namespace tw
