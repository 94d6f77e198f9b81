#include "engine/cuda/resources.hpp"

#include <new>

namespace tw::cuda {

void* PinnedAllocator::allocate(size_t bytes) const {
  void* p = nullptr;
  // cudaMallocHost returns page-aligned memory, more than the 64 bytes Image needs.
  const cudaError_t e = cudaHostAlloc(&p, bytes ? bytes : 1, cudaHostAllocPortable);
  if (e != cudaSuccess) {
    cudaGetLastError();
    throw std::bad_alloc();
  }
  return p;
}

void PinnedAllocator::deallocate(void* p, size_t) const { cudaFreeHost(p); }

const HostAllocator& pinned_allocator() {
  static const PinnedAllocator a;
  return a;
}

}  // namespace tw::cuda
