#pragma once
// Everything a job needs to know about where and how it runs, in one place,
// passed to every job: the backend, threads, the memory budgets, the tile
// size, where scratch files go, and where warnings, progress and report
// figures go. Jobs take their shares of the budget from it (take_memory), so
// the arithmetic of who gets what is in one place, not in every front end.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>

#include "engine/backend.hpp"
#include "engine/ranks/ranks.hpp"

namespace tw {

struct ExecContext {
  Backend backend;                  // cpu, or cuda:N (possibly still starting: Backend::pending)
  int threads = 0;                  // 0: all cores (the caller limits TBB's arena)
  size_t memory = size_t{1} << 30;  // host budget for pixel data (docs/LIMITS.md)
  size_t gpu_memory = 0;            // device budget; 0: half the device's free memory
  int64_t tile = 256;               // tile size of outputs and working stores
  std::string scratch_near;         // scratch files go in this path's folder; empty: $TMPDIR
  // The ranks one slide is split over (mpirun, or several GPUs of one
  // process); null or size 1: this process does everything.
  Ranks* ranks = nullptr;
  // Figures for --report: jobs add their own keys.
  nlohmann::json report = nlohmann::json::object();
  // A label and a fraction done, for a progress display (may be empty).
  std::function<void(const std::string& what, double fraction)> progress;
  // Set by the pipeline executor for a whole-image step on CUDA whose result
  // only the streamed steps after it read (GPU ops, which take a source's
  // tiles where they lie): the step may leave its result in device memory
  // instead of bringing it down to the host (the next steps would send it
  // straight back up). Never for the output, a kept result or a stored one.
  bool result_to_device = false;
  // Set by the pipeline executor for a whole-image step whose inputs are all
  // results the run holds (barrier results, not files or streamed chains):
  // the step's result may read them when it is read (OpResult::reads_inputs),
  // and the executor then keeps them, with their share of the budget, as long
  // as that result.
  bool inputs_held = false;

  // Takes `bytes` off the budget for a part of the job that holds them to
  // its end (a reader's decode buffers, a cache); returns what it took.
  size_t take_memory(size_t bytes) {
    const size_t t = bytes < memory ? bytes : memory;
    memory -= t;
    return t;
  }
  // Thread count the job runs on (threads, or the machine's cores).
  int thread_count() const;
  // The scratch folder's anchor path (scratch_near, or $TMPDIR/tilewave).
  std::string scratch_path() const;
};

}  // namespace tw
