#pragma once
// Connected-component labelling of one tile on the GPU, with exactly the
// labels of label_tile (kernels/label/label.hpp): 1..n in raster order of
// first pixels within the tile. Block-based union-find (Playne & Hawick,
// IEEE TPDS 2018; Allegretti et al., IEEE TPDS 2020): each 32x8 block labels
// its pixels in shared memory with union-find on linear indices, blocks are
// then merged along their borders with atomicMin, and every pixel is pointed
// straight at its root. Because unions always keep the smaller index, a
// component's root is its first pixel in raster order, so numbering the roots
// by an exclusive scan over "is a root" gives the CPU's numbers.
#include <cstdint>
#include <memory>
#include <vector>

namespace tw::label {

struct CudaLabelStats {
  double kernel_seconds = 0;    // device time of the labelling kernels
  double transfer_seconds = 0;  // device time of the copies
  int64_t tiles = 0;
};

class CudaTileLabeler {
 public:
  virtual ~CudaTileLabeler() = default;
  // As label_tile: fg 0/1 bytes (fg_stride a row), labels into out
  // (out_stride u32 a row), first[k - 1] = y * w + x of label k's first
  // pixel. Tiles up to the sizes given at creation. Calls are serialised
  // by the caller.
  virtual uint32_t label(const uint8_t* fg, size_t fg_stride, int64_t w, int64_t h, int connectivity, uint32_t* out,
                         size_t out_stride, std::vector<uint32_t>& first) = 0;
  virtual CudaLabelStats stats() const = 0;
};

// A labeler on CUDA device `device` for tiles of up to max_w x max_h pixels
// (device memory: about 9 bytes a pixel). InputError in builds without CUDA.
std::unique_ptr<CudaTileLabeler> make_cuda_tile_labeler(int device, int64_t max_w, int64_t max_h);

// Device-buffer entry for benchmarks: labels the 0/1 bytes d_fg (w x h,
// packed) into d_labels (w x h u32) with the final numbers, using d_scratch
// (label_device_scratch_bytes(w, h)); returns the component count (one
// small copy back). No allocation, no synchronisation beyond that copy.
size_t label_device_scratch_bytes(int64_t w, int64_t h);
uint32_t label_device(const uint8_t* d_fg, int64_t w, int64_t h, int connectivity, uint32_t* d_labels, void* d_scratch,
                      void* stream);

}  // namespace tw::label
