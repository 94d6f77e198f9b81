#pragma once
// Move-only owners of CUDA resources (STYLE.md §4). Only engine/cuda/
// allocates device memory or creates streams; everything else borrows.
#include <cuda_runtime.h>

#include <cstddef>
#include <utility>
#include <vector>

#include "engine/cuda/cuda_check.hpp"
#include "engine/image.hpp"

namespace tw::cuda {

class Stream {
 public:
  // A stream of the current device.
  Stream() { TW_CUDA_CHECK(cudaStreamCreateWithFlags(&s_, cudaStreamNonBlocking)); }
  // A stream of `device`, whichever is current: for members, which are built
  // before a constructor's DeviceScope takes effect (a stream of the wrong
  // device makes every event recorded on it fail: "invalid resource handle").
  static Stream on_device(int device);
  ~Stream() {
    if (s_) cudaStreamDestroy(s_);
  }
  Stream(Stream&& o) noexcept : s_(std::exchange(o.s_, nullptr)) {}
  Stream& operator=(Stream&& o) noexcept {
    std::swap(s_, o.s_);
    return *this;
  }
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  cudaStream_t get() const { return s_; }
  void sync() const { TW_CUDA_CHECK(cudaStreamSynchronize(s_)); }

 private:
  cudaStream_t s_ = nullptr;
};

class Event {
 public:
  explicit Event(bool timing = true) {
    TW_CUDA_CHECK(cudaEventCreateWithFlags(&e_, timing ? cudaEventDefault : cudaEventDisableTiming));
  }
  ~Event() {
    if (e_) cudaEventDestroy(e_);
  }
  Event(Event&& o) noexcept : e_(std::exchange(o.e_, nullptr)) {}
  Event& operator=(Event&& o) noexcept {
    std::swap(e_, o.e_);
    return *this;
  }
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  cudaEvent_t get() const { return e_; }
  void record(cudaStream_t s) { TW_CUDA_CHECK(cudaEventRecord(e_, s)); }
  void sync() const { TW_CUDA_CHECK(cudaEventSynchronize(e_)); }
  // Milliseconds from `start` to this event; both recorded and complete.
  float ms_since(const Event& start) const {
    float ms = 0;
    TW_CUDA_CHECK(cudaEventElapsedTime(&ms, start.e_, e_));
    return ms;
  }

 private:
  cudaEvent_t e_ = nullptr;
};

template <class T>
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(size_t n) : n_(n) {
    if (n) TW_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&p_), n * sizeof(T)));
  }
  ~DeviceBuffer() {
    if (p_) cudaFree(p_);
  }
  DeviceBuffer(DeviceBuffer&& o) noexcept : p_(std::exchange(o.p_, nullptr)), n_(std::exchange(o.n_, 0)) {}
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    std::swap(p_, o.p_);
    std::swap(n_, o.n_);
    return *this;
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  T* get() const { return p_; }
  size_t size() const { return n_; }
  size_t bytes() const { return n_ * sizeof(T); }

 private:
  T* p_ = nullptr;
  size_t n_ = 0;
};

template <class T>
class PinnedBuffer {
 public:
  PinnedBuffer() = default;
  explicit PinnedBuffer(size_t n) : n_(n) {
    if (n) TW_CUDA_CHECK(cudaMallocHost(reinterpret_cast<void**>(&p_), n * sizeof(T)));
  }
  ~PinnedBuffer() {
    if (p_) cudaFreeHost(p_);
  }
  PinnedBuffer(PinnedBuffer&& o) noexcept : p_(std::exchange(o.p_, nullptr)), n_(std::exchange(o.n_, 0)) {}
  PinnedBuffer& operator=(PinnedBuffer&& o) noexcept {
    std::swap(p_, o.p_);
    std::swap(n_, o.n_);
    return *this;
  }
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;
  T* get() const { return p_; }
  size_t size() const { return n_; }

 private:
  T* p_ = nullptr;
  size_t n_ = 0;
};

// Device memory for one piece of work on one stream (cudaMallocAsync from
// the device's pool, which keeps what it was given): freed in stream order
// when the owner goes, so a tile's intermediates live exactly as long as the
// kernels that use them, and allocating them costs no synchronisation.
class StreamScratch {
 public:
  explicit StreamScratch(cudaStream_t s);
  ~StreamScratch();
  StreamScratch(const StreamScratch&) = delete;
  StreamScratch& operator=(const StreamScratch&) = delete;
  uint8_t* alloc(size_t bytes);

 private:
  cudaStream_t s_;
  std::vector<void*> ptrs_;
};

// Page-locked host memory for Image buffers that asynchronous copies read
// or write (pageable memory would make cudaMemcpyAsync synchronous).
class PinnedAllocator : public HostAllocator {
 public:
  void* allocate(size_t bytes) const override;
  void deallocate(void* p, size_t bytes) const override;
};
const HostAllocator& pinned_allocator();

// The address at which kernels of the current device write `host`, a byte
// of page-locked memory (pinned_allocator's maps all it gives); null for
// memory they cannot reach (pageable memory), so callers copy instead.
uint8_t* mapped_for_device(void* host);

// Makes `device` current for the scope, restoring the previous one.
class DeviceScope {
 public:
  explicit DeviceScope(int device) {
    TW_CUDA_CHECK(cudaGetDevice(&prev_));
    if (prev_ != device) TW_CUDA_CHECK(cudaSetDevice(device));
  }
  ~DeviceScope() { cudaSetDevice(prev_); }
  DeviceScope(const DeviceScope&) = delete;
  DeviceScope& operator=(const DeviceScope&) = delete;

 private:
  int prev_ = 0;
};

inline Stream Stream::on_device(int device) {
  DeviceScope scope(device);
  return Stream();
}

}  // namespace tw::cuda
