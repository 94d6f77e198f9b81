#include "jobs/pipeline/executor.hpp"

#include <tbb/parallel_for.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <functional>
#include <mutex>
#include <thread>

#include "engine/cuda/device.hpp"
#include "engine/cuda/device_image.hpp"
#include "engine/cuda/split_jpeg_input.hpp"
#include "engine/memory.hpp"
#include "engine/ops/device_tiles.hpp"
#include "engine/progress.hpp"
#include "engine/read_pieces.hpp"
#include "engine/scratch_store.hpp"
#include "engine/trace.hpp"
#include "jobs/op_runner.hpp"

namespace tw {
namespace {

using Clock = std::chrono::steady_clock;
using SourceP = std::shared_ptr<const TileSource>;

double since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

// "step 4/6 fill-holes: 12 s" on the progress line while a barrier runs
// (it has no units to count; the time shows it is alive).
class BarrierTicker {
 public:
  BarrierTicker(bool on, std::string label) : label_(std::move(label)) {
    if (!on || !Progress::enabled_by_default()) return;
    thread_ = std::thread([this] {
      const auto t0 = Clock::now();
      std::unique_lock<std::mutex> lock(mu_);
      do {
        char s[32];
        std::snprintf(s, sizeof s, ": %.0f s", since(t0));
        Progress::show(label_ + s);
      } while (!cv_.wait_for(lock, std::chrono::milliseconds(500), [this] { return stop_; }));
    });
  }
  ~BarrierTicker() {
    if (!thread_.joinable()) return;
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }

 private:
  std::string label_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::thread thread_;
};

// On CUDA, a GPU chain's result stored in device memory where it fits a
// quarter of the device budget: its readers (GPU ops, GPU reductions: Otsu's
// histogram) take it there, and it never crosses the bus (a 2-GP chain's
// Otsu input went down, up for the histogram and up again for the
// threshold: 6 GB). Null where it does not fit or is not on a GPU.
SourceP store_input_on_device(const SourceP& in, const ExecContext& ctx, const std::string& name) {
  const DeviceTiles* chain = in->device_tiles();
  if (!ctx.backend.is_cuda() || !chain) return nullptr;
  const LevelInfo& l0 = in->level(0);
  const PixelFormat fmt = in->info().fmt;
  const size_t bytes = static_cast<size_t>(l0.width) * static_cast<size_t>(l0.height) * fmt.bytes_per_pixel();
  const std::vector<CudaDeviceInfo> devs = cuda_devices();
  const int dev = chain->device();
  if (dev < 0 || static_cast<size_t>(dev) >= devs.size() ||
      bytes > gpu_memory_budget(ctx.gpu_memory, devs[static_cast<size_t>(dev)].free_bytes) / 4)
    return nullptr;
  std::shared_ptr<uint8_t> mem;
  try {
    mem = allocate_device_bytes(dev, bytes);
  } catch (const CudaError&) {
    return nullptr;  // the device is fuller than its budget says: the host store
  }
  DeviceImage img;
  img.device = dev, img.data = mem.get(), img.pitch = static_cast<size_t>(l0.width) * fmt.bytes_per_pixel();
  img.fmt = fmt, img.width = l0.width, img.height = l0.height;
  compute_into_device(*in, img, ctx.memory);
  SourcePtr stored = make_device_image_source(img, std::move(mem), name);
  std::const_pointer_cast<TileSource>(stored)->set_resolution(in->info().mpp_x, in->info().mpp_y);
  return stored;
}

// A computed input stored once, for ops that read their input twice (on
// the device where it may be: `device`), or a streamed result that several
// passes read (on the host: some of them read it there).
SourceP store_input(const SourceP& in, ExecContext& ctx, const std::string& name, bool device = false) {
  if (device)
    if (SourceP on_device = store_input_on_device(in, ctx, name)) return on_device;
  const LevelInfo& l0 = in->level(0);
  const TileGrid grid{l0.width, l0.height, ctx.tile, ctx.tile};
  const size_t bytes =
      static_cast<size_t>(grid.count()) * static_cast<size_t>(ctx.tile * ctx.tile) * in->info().fmt.bytes_per_pixel();
  const size_t cache = ctx.take_memory(std::min(bytes, ctx.memory / 4));
  auto store =
      std::make_shared<ScratchStore>(in->info().fmt, l0.width, l0.height, ctx.tile, cache, ctx.scratch_path(), name);
  store->set_resolution(in->info().mpp_x, in->info().mpp_y);
  const TileGrid& g = store->grid();
  // A GPU chain pays a launch, a sync and a copy per read: it is read a run
  // of tiles along a row at a time (a read piece's worth), not tile by tile
  // (a 2-GP image is 31k tiles of 256²), and the run copied into its tiles.
  const size_t tile_bytes = static_cast<size_t>(ctx.tile * ctx.tile) * in->info().fmt.bytes_per_pixel();
  const int64_t run =
      in->device_tiles() ? std::clamp<int64_t>(static_cast<int64_t>(kReadPieceBytes / tile_bytes), 1, g.cols()) : 1;
  const int64_t runs_per_row = (g.cols() + run - 1) / run;
  tbb::parallel_for(int64_t{0}, runs_per_row * g.rows(), [&](int64_t i) {
    const int64_t tx0 = (i % runs_per_row) * run, ty = i / runs_per_row, tx1 = std::min(g.cols(), tx0 + run);
    if (tx1 - tx0 == 1) {
      ScratchStore::Pin pin = store->acquire(tx0, ty, true);
      in->read(0, pin.image().view().sub(g.tile_rect(tx0, ty)));
      pin.mark_dirty();
      return;
    }
    const Rect first = g.tile_rect(tx0, ty), last = g.tile_rect(tx1 - 1, ty);
    const Image pixels = in->read(0, Rect(first.x, first.y, last.x1() - first.x, first.h));
    for (int64_t tx = tx0; tx < tx1; ++tx) {
      ScratchStore::Pin pin = store->acquire(tx, ty, true);
      copy_overlap(pixels.view(), pin.image().view());
      pin.mark_dirty();
    }
  });
  return store;
}

std::string step_words(const PipelineStep& st) {
  std::string s;
  for (const auto& w : st.op->command) s += (s.empty() ? "" : " ") + w;
  return s;
}

// For each step, the last step whose run reads its result, directly or
// through the streamed steps after it (a streamed step is read when its
// reader is); n for results read to the end: the output and kept ones.
std::vector<int> last_use(const PipelinePlan& plan, const std::vector<int>& keep_slots) {
  const int n = static_cast<int>(plan.steps.size()), first = static_cast<int>(plan.input_names.size());
  std::vector<int> live(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) live[static_cast<size_t>(i)] = i;
  live.back() = n;
  for (int s : keep_slots) live[static_cast<size_t>(s - first)] = n;
  for (int j = n - 1; j >= 0; --j) {
    const PlannedStep& ps = plan.steps[static_cast<size_t>(j)];
    for (int s : ps.reads) {
      if (s < first) continue;
      int& l = live[static_cast<size_t>(s - first)];
      l = std::max(l, ps.barrier ? j : live[static_cast<size_t>(j)]);
    }
  }
  return live;
}

// Whether step i's result is read by streamed steps of the run only: not by
// the writer, a barrier, or after the run (--keep).
bool read_by_streamed_steps_only(const PipelinePlan& plan, int i, const std::vector<int>& keep_slots) {
  const int slot = plan.slot_of_step(i);
  if (slot == plan.output_slot || std::count(keep_slots.begin(), keep_slots.end(), slot)) return false;
  bool read = false;
  for (const PlannedStep& ps : plan.steps) {
    if (!std::count(ps.reads.begin(), ps.reads.end(), slot)) continue;
    if (ps.barrier) return false;
    read = true;
  }
  return read;
}

// Whether every input of step i is a result the run holds: a barrier's
// (stored, or a whole-image op's), not an input file or a streamed chain,
// which would be decoded or computed again at every read of a view.
bool inputs_are_held_results(const PipelinePlan& plan, int i) {
  const int first = static_cast<int>(plan.input_names.size());
  const PlannedStep& ps = plan.steps[static_cast<size_t>(i)];
  if (ps.reads.empty()) return false;
  for (int s : ps.reads)
    if (s < first || !plan.steps[static_cast<size_t>(s - first)].barrier) return false;
  return true;
}

// ctx.result_to_device and ctx.inputs_held for one step's run (off again
// however it ends).
class ResultPlace {
 public:
  ResultPlace(ExecContext& ctx, bool on_device, bool inputs_held) : ctx_(ctx) {
    ctx_.result_to_device = on_device;
    ctx_.inputs_held = inputs_held;
  }
  ~ResultPlace() {
    ctx_.result_to_device = false;
    ctx_.inputs_held = false;
  }
  ResultPlace(const ResultPlace&) = delete;
  ResultPlace& operator=(const ResultPlace&) = delete;

 private:
  ExecContext& ctx_;
};

}  // namespace

PipelineRun run_pipeline(const Pipeline&, const PipelinePlan& plan, const std::vector<SourceP>& inputs,
                         ExecContext& ctx, bool progress_steps, const std::vector<int>& keep_slots) {
  if (inputs.size() != plan.input_names.size()) throw InternalError("run_pipeline: inputs do not match the plan");
  PipelineRun run;
  run.slots = inputs;
  // On CUDA, inputs of JPEG tiles reach the GPU steps the split way: level
  // 0's coefficients entropy-decoded on the GPU and kept there where they fit
  // a quarter of the device budget (as a chain's stored result), else the
  // entropy decoding on the CPU; the rest on the device
  // (engine/cuda/split_jpeg_input.hpp).
  if (ctx.backend.is_cuda()) {
    const std::vector<CudaDeviceInfo> devs = cuda_devices();
    const int dev = ctx.backend.device;
    const size_t device_budget = dev >= 0 && static_cast<size_t>(dev) < devs.size()
                                     ? gpu_memory_budget(ctx.gpu_memory, devs[static_cast<size_t>(dev)].free_bytes) / 4
                                     : 0;
    for (SourceP& in : run.slots) in = make_split_jpeg_input(in, dev, device_budget, ctx.memory);
    set_gpu_piece_budget(ctx.memory);
  }
  run.inputs = run.slots;
  set_big_buffer_budget(ctx.memory);
  // The inputs' readers: decode memory for each; a cache of decoded tiles
  // for those read with halos (reductions read each pixel once), holding the
  // whole input where several steps read it (the nuclei pipeline reads the
  // slide for Otsu's chain, for the overlay, and again for the features).
  for (size_t k = 0; k < inputs.size(); ++k) {
    bool halo_reads = false;
    int readers = 0;
    for (const auto& ps : plan.steps)
      if (std::count(ps.reads.begin(), ps.reads.end(), static_cast<int>(k))) {
        ++readers;
        if (ps.step->op->category != OpCategory::kReduction) halo_reads = true;
      }
    // Through the input as the steps read it: a split JPEG input (CUDA)
    // keeps part of the cache for the coefficients its GPU chains stage.
    if (halo_reads)
      reserve_input_reads(*run.inputs[k], ctx, readers > 1);
    else
      ctx.take_memory(reserve_decode_memory(*run.inputs[k], ctx.memory, ctx.thread_count()));
  }
  const int n = static_cast<int>(plan.steps.size());
  std::vector<int> live = last_use(plan, keep_slots);
  std::vector<size_t> taken(static_cast<size_t>(n), 0);
  // Per step whose result is a view of its inputs: the slots it reads.
  std::vector<std::vector<int>> held(static_cast<size_t>(n));
  const std::function<void(int, int)> keep_alive = [&](int step, int until) {
    for (int s : held[static_cast<size_t>(step)]) {
      const int k = s - static_cast<int>(inputs.size());
      int& l = live[static_cast<size_t>(k)];
      l = std::max(l, until);
      keep_alive(k, until);
    }
  };
  for (int i = 0; i < n; ++i) {
    const size_t memory_before = ctx.memory;
    const PlannedStep& ps = plan.steps[static_cast<size_t>(i)];
    const PipelineStep& st = *ps.step;
    std::vector<SourceP> in;
    for (int s : ps.reads) in.push_back(run.slots[static_cast<size_t>(s)]);
    PipelineRun::Barrier b;
    b.budget_bytes = memory_before;
    const ByteCounts b0 = process_byte_counts();
    ByteCounts m0;
    for (const auto& m : run.meters) m0 += m->bytes();
    const auto t0 = Clock::now();
    OpResult res;
    const TraceSpan span("pipeline-step", i + 1);
    const bool inputs_held = ps.barrier && !ps.stores_input && inputs_are_held_results(plan, i);
    try {
      BarrierTicker ticker(progress_steps && ps.barrier,
                           "step " + std::to_string(i + 1) + "/" + std::to_string(n) + " " + step_words(st));
      if (ps.stores_input)
        for (size_t k = 0; k < in.size(); ++k)
          if (ps.reads[k] >= static_cast<int>(inputs.size()) &&
              !plan.steps[static_cast<size_t>(ps.reads[k]) - inputs.size()].barrier) {
            in[k] = store_input(in[k], ctx, "input of " + st.op->name, true);
            b.stored_input = true;
          }
      const ResultPlace place(
          ctx, ctx.backend.is_cuda() && ps.barrier && !ps.shared && read_by_streamed_steps_only(plan, i, keep_slots),
          inputs_held);
      res = st.op->run(optional_input_slots(*st.op, st.params, in, SourceP()), st.params, ctx);
      carry_resolution(res, in);
      if (ps.shared) {
        res.image = store_input(res.image, ctx, "result of " + st.op->name);
        res.reads_inputs = false;  // a copy now
      }
    } catch (const ParamError& e) {
      throw ParamError(st.where(e.what()));
    } catch (const InputError& e) {
      throw InputError(st.where(e.what()));
    }
    if (ps.barrier) {
      b.seconds = since(t0);
      ByteCounts m1;
      for (const auto& m : run.meters) m1 += m->bytes();
      b.bytes = (process_byte_counts() - b0) - (m1 - m0);
    }
    auto meter = std::make_shared<StepMeter>();
    run.meters.push_back(meter);
    run.barriers.push_back(b);
    run.slots.push_back(res.image ? std::make_shared<MeteredSource>(res.image, meter) : nullptr);
    run.results.push_back(std::move(res));
    taken[static_cast<size_t>(i)] = memory_before - ctx.memory;
    run.barriers.back().held_bytes = taken[static_cast<size_t>(i)];
    // A view of its inputs keeps them: they, and their share of the budget,
    // live as long as it does (and what they in turn read).
    if (run.results.back().reads_inputs) {
      if (!inputs_held) throw InternalError(st.where("the result reads inputs the run does not hold"));
      held[static_cast<size_t>(i)] = ps.reads;
      keep_alive(i, live[static_cast<size_t>(i)]);
    }
    // A barrier's transient buffers (tiles in flight, reduction cells, a
    // store's mask) were freed between long-lived allocations of many
    // threads: hand glibc's free pages back before the next step takes its
    // share, or the process holds both (1.39 GB for --memory 1G).
    if (ps.barrier) release_free_heap();
    // Results nothing reads any more (a barrier's store once the barriers
    // after it have read it) go, and the memory they held goes back to the
    // budget: a chain of any number of barriers runs where each step does.
    for (int k = 0; k <= i; ++k) {
      const size_t ks = static_cast<size_t>(k), slot = static_cast<size_t>(plan.slot_of_step(k));
      if (live[ks] != i || !run.slots[slot]) continue;
      run.slots[slot].reset();
      run.results[ks].image.reset();
      ctx.memory += taken[ks];
      taken[ks] = 0;
    }
  }
  return run;
}

nlohmann::json pipeline_report(const Pipeline& p, const PipelinePlan& plan, const PipelineRun& run) {
  nlohmann::json steps = nlohmann::json::array();
  for (size_t i = 0; i < plan.steps.size(); ++i) {
    const PlannedStep& ps = plan.steps[i];
    const PipelineStep& st = p.steps[i];
    const StepMeter& m = *run.meters[i];
    const PipelineRun::Barrier& b = run.barriers[i];
    nlohmann::json j = {
        {"step", st.number},
        {"text", st.text},
        {"op", step_words(st)},
        {"kind", !ps.image    ? "reduction"
                 : ps.shared  ? "stored"
                 : ps.barrier ? "barrier"
                              : "streamed"},
        {"pixel_type", ps.image ? ps.out.str() : ""},
        // Reads of the step's result (by the next steps or the writer):
        // for a streamed step, the tiles it computed.
        {"result_reads", m.visits.load()},
        {"pixels_read", m.pixels.load()},
    };
    const nlohmann::json& v = run.results[i].values;
    // Tile visits: a streamed step's computed tiles; a wavefront's visits.
    j["tile_visits"] = ps.barrier && v.contains("tile_visits") ? v["tile_visits"] : nlohmann::json(m.visits.load());
    if (!st.name.empty()) j["name"] = st.name;
    ByteCounts bytes = m.bytes();
    if (ps.barrier) {
      j["seconds"] = b.seconds;
      j["stored_input"] = b.stored_input;
      bytes += b.bytes;
    } else {
      j["busy_seconds"] = static_cast<double>(m.busy_ns.load()) * 1e-9;
    }
    // The budget as the step found it, and what the step took off it for
    // as long as its result lives: where a run spills, these say why.
    j["budget_bytes"] = b.budget_bytes;
    j["held_bytes"] = b.held_bytes;
    j["bytes_spilled"] = bytes.spilled;
    j["bytes_uploaded"] = bytes.uploaded;
    j["bytes_downloaded"] = bytes.downloaded;
    j["values"] = run.results[i].values;
    steps.push_back(std::move(j));
  }
  return steps;
}

}  // namespace tw
