#include "engine/cuda/resources.hpp"

#include <cstdlib>
#include <new>

#include "engine/memory.hpp"

namespace tw::cuda {

void* PinnedAllocator::allocate(size_t bytes) const {
  if (wants_huge_pages(bytes)) {
    // Plain memory on 2 MB pages, then pinned: a third of cudaHostAlloc's
    // time to pin, a sixth to free (engine/memory.hpp).
    void* p = allocate_huge(bytes);
    if (cudaHostRegister(p, huge_rounded(bytes), cudaHostRegisterPortable) != cudaSuccess) {
      cudaGetLastError();
      std::free(p);
      throw std::bad_alloc();
    }
    return p;
  }
  void* p = nullptr;
  // cudaMallocHost returns page-aligned memory, more than the 64 bytes Image needs.
  const cudaError_t e = cudaHostAlloc(&p, bytes ? bytes : 1, cudaHostAllocPortable);
  if (e != cudaSuccess) {
    cudaGetLastError();
    throw std::bad_alloc();
  }
  return p;
}

void PinnedAllocator::deallocate(void* p, size_t bytes) const {
  if (wants_huge_pages(bytes)) {
    cudaHostUnregister(p);
    std::free(p);
    return;
  }
  cudaFreeHost(p);
}

const HostAllocator& pinned_allocator() {
  static const PinnedAllocator a;
  return a;
}

}  // namespace tw::cuda
