#include "engine/cuda/resources.hpp"

#include <cstdint>
#include <cstdlib>
#include <mutex>
#include <new>
#include <set>

#include "engine/memory.hpp"

namespace tw::cuda {

StreamScratch::StreamScratch(cudaStream_t s) : s_(s) {
  // The pool keeps freed memory for the next tile instead of handing it back
  // at every synchronisation (the default): set once per device.
  static std::mutex mu;
  static std::set<int>& done = *new std::set<int>;  // never destroyed: used by threads running at exit()
  int dev = 0;
  TW_CUDA_CHECK(cudaGetDevice(&dev));
  std::lock_guard<std::mutex> lock(mu);
  if (done.insert(dev).second) {
    cudaMemPool_t pool;
    TW_CUDA_CHECK(cudaDeviceGetDefaultMemPool(&pool, dev));
    uint64_t keep = UINT64_MAX;
    TW_CUDA_CHECK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep));
  }
}

StreamScratch::~StreamScratch() {
  for (void* p : ptrs_) cudaFreeAsync(p, s_);
}

uint8_t* StreamScratch::alloc(size_t bytes) {
  void* p = nullptr;
  TW_CUDA_CHECK(cudaMallocAsync(&p, bytes ? bytes : 1, s_));
  ptrs_.push_back(p);
  return static_cast<uint8_t*>(p);
}

void* PinnedAllocator::allocate(size_t bytes) const {
  if (wants_huge_pages(bytes)) {
    // Plain memory on 2 MB pages, then pinned: a third of cudaHostAlloc's
    // time to pin, a sixth to free (engine/memory.hpp).
    void* p = allocate_huge(bytes);
    if (cudaHostRegister(p, huge_rounded(bytes), cudaHostRegisterPortable | cudaHostRegisterMapped) != cudaSuccess) {
      cudaGetLastError();
      std::free(p);
      throw std::bad_alloc();
    }
    return p;
  }
  void* p = nullptr;
  // cudaMallocHost returns page-aligned memory, more than the 64 bytes Image needs.
  const cudaError_t e = cudaHostAlloc(&p, bytes ? bytes : 1, cudaHostAllocPortable | cudaHostAllocMapped);
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

uint8_t* mapped_for_device(void* host) {
  cudaPointerAttributes a{};
  if (cudaPointerGetAttributes(&a, host) != cudaSuccess) {
    cudaGetLastError();  // clear it: the answer is "not reachable"
    return nullptr;
  }
  return a.type == cudaMemoryTypeHost ? static_cast<uint8_t*>(a.devicePointer) : nullptr;
}

const HostAllocator& pinned_allocator() {
  static const PinnedAllocator& a = *new PinnedAllocator;  // never destroyed (engine/image.cpp says why)
  return a;
}

}  // namespace tw::cuda
