#pragma once
// The megapixel work queue of the IWPP-MP kernels (seed 001, alg. 5), shared
// by the general reconstruction (reconstruct_cuda.cu) and the binary one
// (reconstruct_binary_cuda.cu). Include only from .cu files.
#include <cuda_runtime.h>

#include <cstdint>
#include <memory>
#include <mutex>

#include "engine/cuda/resources.hpp"

namespace tw::mp_queue {

// A ticket queue: producers and consumers draw indices with fetch-add (no
// retries, so thousands of idle blocks do not serialise on one word) and meet
// at slot index % capacity. A slot word is (state << 32 | item), state 2L =
// empty for lap L, 2L + 1 = holding lap L's item. The capacity exceeds the
// megapixels plus the blocks, so a producer never waits on a slot whose
// consumer has not drawn its ticket.
struct Queue {
  unsigned long long* slots;
  uint32_t* queued;  // per megapixel: 1 while in the queue
  unsigned long long* head;
  unsigned long long* tail;
  int* pending;
  unsigned long long* visits;
  unsigned long long capacity;
};

template <class T>
__device__ __forceinline__ T load_relaxed(const T* p) {
  return *const_cast<const volatile T*>(p);
}

template <class T>
__device__ __forceinline__ void store_relaxed(T* p, T v) {
  *const_cast<volatile T*>(p) = v;
}

__device__ __forceinline__ uint32_t slot_state(unsigned long long word) {
  return static_cast<uint32_t>(word >> 32);
}

// Warp-wide: each lane with `want` queues megapixel `mp` unless it is queued
// already. The new items are counted in `pending` before they are published,
// so the count cannot touch zero while work is about to appear. One leader
// reserves all the tickets: the chain of dependent atomics is what a
// propagation front waits on at every megapixel it crosses.
__device__ inline void enqueue_warp(const Queue& q, bool want, uint32_t mp, int lane) {
  const bool fresh = want && atomicExch(&q.queued[mp], 1u) == 0;
  const unsigned mask = __ballot_sync(0xffffffffu, fresh);
  if (!mask) return;
  const int leader = __ffs(mask) - 1, count = __popc(mask);
  unsigned long long base = 0;
  if (lane == leader) {
    atomicAdd(q.pending, count);
    __threadfence();
    base = atomicAdd(q.tail, static_cast<unsigned long long>(count));
  }
  base = __shfl_sync(0xffffffffu, base, leader);
  if (fresh) {
    const unsigned long long t = base + __popc(mask & ((1u << lane) - 1u));
    unsigned long long* slot = &q.slots[t % q.capacity];
    const uint32_t lap = static_cast<uint32_t>(t / q.capacity);
    // The previous lap's consumer may still be taking its item.
    while (slot_state(load_relaxed(slot)) != 2 * lap) __nanosleep(20);
    store_relaxed(slot, (static_cast<unsigned long long>(2 * lap + 1) << 32) | mp);
  }
}

// Lane 0 takes the next megapixel; -1 once no work is pending anywhere.
// A warp waits on its own slot; it looks at the shared `pending` word only
// every 16th time, so that thousands of idle warps do not crowd the L2 slice
// that the working warps' counter updates go to.
__device__ inline int dequeue(const Queue& q) {
  const unsigned long long h = atomicAdd(q.head, 1ull);
  unsigned long long* slot = &q.slots[h % q.capacity];
  const uint32_t lap = static_cast<uint32_t>(h / q.capacity);
  for (unsigned polls = 0;; ++polls) {
    const unsigned long long word = load_relaxed(slot);
    if (slot_state(word) == 2 * lap + 1) {
      store_relaxed(slot, static_cast<unsigned long long>(2 * lap + 2) << 32);
      const uint32_t mp = static_cast<uint32_t>(word);
      // From here on it may be queued again; whoever queues it wrote its
      // values before, so our loads (after this fence) see them.
      atomicExch(&q.queued[mp], 0u);
      __threadfence();
      return static_cast<int>(mp);
    }
    if (polls % 16 == 15 && load_relaxed(q.pending) == 0) return -1;
    __nanosleep(20);
  }
}

// The device buffers of the reconstructions, one set per device for the
// whole process: a batch of images (or of wavefront tiles) reuses them
// instead of allocating ~10 bytes per pixel for every call. Calls on one
// device serialise on its mutex (one tile fills the GPU).
struct Workspace {
  std::mutex mu;
  std::unique_ptr<cuda::Stream> stream;
  cuda::DeviceBuffer<uint32_t> j, i, queued;
  cuda::DeviceBuffer<unsigned long long> slots, counters;
  cuda::DeviceBuffer<uint8_t> staging;
  cuda::PinnedBuffer<uint32_t> host_on, host_allowed, host_result;  // the binary rule's bit planes
  cuda::PinnedBuffer<uint8_t> host_j, host_i, host_out;             // the general rule's tiles
};
Workspace& workspace(int device);

// Sizes the queue for n megapixels and `consumers` persistent warps and
// resets it on stream s: every megapixel queued (all_queued) or none.
Queue reset_queue(Workspace& ws, int n, int consumers, bool all_queued, cudaStream_t s);

}  // namespace tw::mp_queue
