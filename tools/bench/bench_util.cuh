#pragma once
// Shared by the GPU benchmarks: a median of device-timed repetitions, and an
// NPP stream context for the default stream (when NPP is there).
#include <cuda_runtime.h>
#if __has_include(<npp.h>)
#include <npp.h>
#define TW_BENCH_HAVE_NPP 1
#endif

#include <algorithm>
#include <vector>

#include "engine/cuda/cuda_check.hpp"

namespace tw::bench {

// Median milliseconds of `reps` runs of f on the default stream, after one
// warm-up run.
template <class F>
double median_ms(F&& f, int reps = 15) {
  cudaEvent_t a, b;
  cudaEventCreate(&a), cudaEventCreate(&b);
  f();
  TW_CUDA_CHECK(cudaDeviceSynchronize());
  std::vector<float> t;
  for (int i = 0; i < reps; ++i) {
    cudaEventRecord(a, 0);
    f();
    cudaEventRecord(b, 0);
    TW_CUDA_CHECK(cudaEventSynchronize(b));
    float ms = 0;
    cudaEventElapsedTime(&ms, a, b);
    t.push_back(ms);
  }
  cudaEventDestroy(a), cudaEventDestroy(b);
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

#ifdef TW_BENCH_HAVE_NPP
inline NppStreamContext npp_context() {
  NppStreamContext c{};
  c.hStream = 0;
  TW_CUDA_CHECK(cudaGetDevice(&c.nCudaDeviceId));
  cudaDeviceGetAttribute(&c.nMultiProcessorCount, cudaDevAttrMultiProcessorCount, c.nCudaDeviceId);
  cudaDeviceGetAttribute(&c.nMaxThreadsPerMultiProcessor, cudaDevAttrMaxThreadsPerMultiProcessor, c.nCudaDeviceId);
  cudaDeviceGetAttribute(&c.nMaxThreadsPerBlock, cudaDevAttrMaxThreadsPerBlock, c.nCudaDeviceId);
  int smem = 0;
  cudaDeviceGetAttribute(&smem, cudaDevAttrMaxSharedMemoryPerBlock, c.nCudaDeviceId);
  c.nSharedMemPerBlock = static_cast<size_t>(smem);
  cudaDeviceGetAttribute(&c.nCudaDevAttrComputeCapabilityMajor, cudaDevAttrComputeCapabilityMajor, c.nCudaDeviceId);
  cudaDeviceGetAttribute(&c.nCudaDevAttrComputeCapabilityMinor, cudaDevAttrComputeCapabilityMinor, c.nCudaDeviceId);
  return c;
}
#endif

}  // namespace tw::bench
