#pragma once
// One streaming pass over a stripe of level 0 (jobs/pyramid/pass_plan.hpp):
// a oneTBB pipeline of read and decode (parallel), the cascade (serial,
// in order), encode (parallel) and write (serial, in order), tokens of one
// band of level 0 each, as many in flight as the plan allows.
#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>

#include "engine/backend.hpp"
#include "engine/progress.hpp"
#include "engine/pyramid_sink.hpp"
#include "engine/raw_raster.hpp"
#include "engine/tile_source.hpp"
#include "jobs/pyramid/band_share.hpp"
#include "jobs/pyramid/level_producer.hpp"
#include "jobs/pyramid/pass_plan.hpp"
#include "jobs/pyramid/pyramid_job.hpp"

namespace tw {

// Figures summed over a pyramid's passes.
struct Counters {
  std::string jpeg_decoder;
  int64_t gpu_bands = 0;       // level-0 bands decoded on the GPU
  int64_t gpu_idct_bands = 0;  // ... finished on the GPU after the CPU's entropy decoding
  int64_t device_bands = 0;    // level-0 bands a GPU chain computed straight into the cascade's memory
  int64_t gpu_from_row = -1;   // with a pending backend: where the GPU took the cascade over
  // Nanoseconds; host stages summed over threads.
  std::atomic<int64_t> read{0}, decode{0}, reduce{0}, encode{0}, write{0};
  std::atomic<int64_t> encoded{0}, passed{0}, gpu_transformed{0}, gpu_entropy_coded{0};
  std::atomic<uint64_t> pixels{0}, bytes_read{0};
  DeviceTimes device;
};

struct PassArgs {
  const TileSource* src;
  PyramidSink* sink;
  PassGeom geom;
  int64_t T;
  int tokens;
  bool passthrough;
  bool skip_level0;
  int level_offset;
  RawRasterFile* capture;  // level K's bands for the next pass (null: none)
  Backend backend;
  PyramidJobOptions::GpuJpeg gpu_jpeg;
  size_t gpu_room;    // device budget left beside the cascade
  size_t gpu_memory;  // --gpu-memory (0: a share of the free memory)
  int64_t gpu_join_row;
  // A share of a slide split by rows over ranks: its rows, and where its
  // tiles go instead of the sink (the sink only encodes). Null: the whole
  // stripe. geom.levels carry the share's start rows.
  const BandShare* share = nullptr;
  // The pass's host budget (0: none given): bounds what a GPU chain computing
  // level 0 into device memory stages on the host at once.
  size_t memory = 0;
};

void run_pass(const PassArgs& a, Counters& cnt, Progress& progress);

// The passes' figures into the run's report (one process, or one rank's share).
void counters_to_stats(const Counters& cnt, PyramidStats& stats);

}  // namespace tw
