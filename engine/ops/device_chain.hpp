#pragma once
// One read of a chain of GPU ops (engine/ops/device_tiles.hpp): its stream,
// the lane whose pinned buffer stages the first op's input, what stage()
// read (taken by the chain's starts in turn), and the device memory of the intermediates, freed in stream order.
// Apart from op_cuda.cuh so that plain C++ (a device image the caller owns:
// engine/cuda/device_image.cpp) can drive a chain too.
#include <cuda_runtime.h>

#include <cstring>

#include "engine/byte_counters.hpp"
#include "engine/cuda/cuda_check.hpp"
#include "engine/cuda/lanes.hpp"
#include "engine/cuda/resources.hpp"
#include "engine/image.hpp"
#include "engine/ops/device_tiles.hpp"
#include "engine/trace.hpp"

namespace tw {
struct DeviceChain {
  cudaStream_t stream;
  cuda::Lane* lane;
  StagedInputs* host;
  cuda::StreamScratch scratch;
};

// A read of a GPU chain's top (`chain`, whose result has dst's format) into
// host memory: staged, computed on one lane's stream, and copied down.
inline void read_chain_piece(const DeviceTiles& chain, cuda::LanePool& pool, const ImageView& dst) {
  const Rect r = dst.rect;
  // The input is read before a lane is taken: it may itself be a GPU op
  // drawing on the same shared pool, and holding a lane while waiting for
  // another could leave every lane waiting.
  StagedInputs host;
  chain.stage(r, host);
  TraceSpan span("gpu-op", r.h);
  cuda::DeviceScope scope(pool.device());
  auto lane = pool.acquire();
  const size_t row = dst.row_length_bytes(), out_bytes = row * static_cast<size_t>(r.h);
  {
    TraceSpan phase("gpu-op-reserve", r.h);
    lane->reserve(0, out_bytes);
  }
  const cudaStream_t s = lane->stream.get();
  {
    DeviceChain c{s, &*lane, &host, cuda::StreamScratch(s)};
    chain.compute(r, lane->dev_out.get(), row, c);
    TW_CUDA_CHECK(cudaMemcpyAsync(lane->host_out.get(), lane->dev_out.get(), out_bytes, cudaMemcpyDeviceToHost, s));
    count_downloaded(out_bytes);
  }
  {
    TraceSpan phase("gpu-op-sync", r.h);
    lane->stream.sync();
  }
  TraceSpan out_span("gpu-op-copy-out", r.h);
  for (int64_t y = 0; y < r.h; ++y) std::memcpy(dst.row_bytes(r.y + y), lane->host_out.get() + y * row, row);
}

}  // namespace tw
