#pragma once
// A band's entropy-coded tiles brought home packed. After jpeg_huffman_cuda a
// tile's room holds its segment (a tenth of the room, typically) or, where
// the GPU left it as coefficients, all its coefficients. Copying the rooms
// whole moves ten times the bytes the CPU uses, and the host cannot copy
// only the segments without first waiting for their sizes. So the GPU writes
// them itself, one after another, into mapped pinned host memory, together
// with where each one went: one band, one kernel, no round trip.
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

namespace tw {

// Each tile's bytes start on this boundary in the packed output, so that a
// tile left as coefficients is int16-aligned, and copies go 16 bytes a time.
constexpr size_t kJpegSegmentAlign = 16;

struct JpegSegmentsLaunch {
  const uint8_t* rooms = nullptr;   // device: tiles x room bytes; tile t's segment at its room's first byte
  size_t room = 0;                  // bytes of a tile's room, a multiple of kJpegSegmentAlign
  const uint32_t* sizes = nullptr;  // device: per tile, its segment's bytes or kJpegTileAsCoefficients (all the room)
  int tiles = 0;
  uint8_t* out = nullptr;           // mapped host memory (its device address): tiles x room bytes at most
  uint64_t* out_offsets = nullptr;  // mapped host memory: per tile, where its bytes start in out
  uint32_t* out_sizes = nullptr;    // mapped host memory: a copy of sizes
};

void jpeg_gather_segments_cuda(const JpegSegmentsLaunch& a, cudaStream_t stream);

}  // namespace tw
