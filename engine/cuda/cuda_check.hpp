#pragma once
// Every CUDA runtime call is checked and turned into a CudaError naming the
// call, file and line (STYLE.md §3). Only compiled into CUDA builds.
#include <cuda_runtime.h>

#include <string>

#include "engine/error.hpp"

namespace tw {

[[noreturn]] void throw_cuda(cudaError_t e, const char* call, const char* file, int line);

}  // namespace tw

#define TW_CUDA_CHECK(call)                                                           \
  do {                                                                                \
    const cudaError_t tw_err_ = (call);                                               \
    if (tw_err_ != cudaSuccess) ::tw::throw_cuda(tw_err_, #call, __FILE__, __LINE__); \
  } while (0)

// After a kernel launch: launch-configuration errors surface here.
#define TW_CUDA_CHECK_LAUNCH() TW_CUDA_CHECK(cudaGetLastError())
