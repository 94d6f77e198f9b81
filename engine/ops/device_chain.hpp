#pragma once
// One read of a chain of GPU ops (engine/ops/device_tiles.hpp): its stream,
// the lane whose pinned buffer stages the first op's input, what stage()
// read (taken by the chain's starts in turn), and the device memory of the intermediates, freed in stream order.
// Apart from op_cuda.cuh so that plain C++ (a device image the caller owns:
// engine/cuda/device_image.cpp) can drive a chain too.
#include <cuda_runtime.h>

#include "engine/cuda/lanes.hpp"
#include "engine/cuda/resources.hpp"
#include "engine/image.hpp"
#include "engine/ops/device_tiles.hpp"

namespace tw {
struct DeviceChain {
  cudaStream_t stream;
  cuda::Lane* lane;
  StagedInputs* host;
  cuda::StreamScratch scratch;
};
}  // namespace tw
