#pragma once
// The executor: runs a planned pipeline (jobs/pipeline/plan.hpp) on a
// context. Streamed steps become sources computed on reads (their tiles are
// made when the next barrier or the writer reads them); a barrier runs when
// its turn comes, pulling its input through the streamed steps before it
// into its out-of-core store. Every budget comes off ctx.memory (each part
// takes what it holds to the end), so a chain of any length stays within
// --memory plus the fixed per-thread working tiles.
//
// The single-op commands run here too, as one-step pipelines.
#include <chrono>
#include <memory>
#include <nlohmann/json.hpp>
#include <vector>

#include "engine/exec_context.hpp"
#include "jobs/pipeline/metered_source.hpp"
#include "jobs/pipeline/plan.hpp"

namespace tw {

struct PipelineRun {
  std::vector<std::shared_ptr<const TileSource>> slots;   // every result (inputs first), metered
  std::vector<std::shared_ptr<const TileSource>> inputs;  // the inputs as the steps read them (kept to the end)
  std::vector<OpResult> results;                          // per step (their image: unmetered)
  std::vector<std::shared_ptr<StepMeter>> meters;         // per step: reads of its result
  struct Barrier {
    double seconds = 0;  // wall time of the step's own run (its input's streamed steps included)
    ByteCounts bytes;    // moved by it, its streamed inputs' share taken off
    bool stored_input = false;
    size_t budget_bytes = 0;  // of --memory, what was left for the step when it ran
    size_t held_bytes = 0;    // of that, what its result held after it ran (its store, its caches)
  };
  std::vector<Barrier> barriers;  // per step (zero for streamed ones)
  std::shared_ptr<const TileSource> output() const { return slots.back(); }
};

// Sets apart the inputs' decode memory (and a cache of decoded tiles for
// inputs read with halos) from ctx.memory, then runs every step in order.
// Errors name the step. `progress_steps`: show each barrier on the progress
// line ("step 4/6 fill-holes").
// `keep_slots`: results read after the run (--keep), besides the output.
// Results nothing reads any more are let go as the run goes (their memory
// back to ctx.memory); their slots are then null.
PipelineRun run_pipeline(const Pipeline& p, const PipelinePlan& plan,
                         const std::vector<std::shared_ptr<const TileSource>>& inputs, ExecContext& ctx,
                         bool progress_steps = false, const std::vector<int>& keep_slots = {});

// Per step: its kind, visits, pixels, time, bytes spilled and moved
// between host and device, and the op's own figures (call after the result
// was written: streamed steps run while it is read).
nlohmann::json pipeline_report(const Pipeline& p, const PipelinePlan& plan, const PipelineRun& run);

}  // namespace tw
