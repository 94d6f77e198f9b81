#include "tools/tilewave/pipeline_command.hpp"

#include <tbb/global_control.h>

#include <iostream>
#include <optional>

#include "engine/cuda/split_jpeg_input.hpp"
#include "engine/json.hpp"
#include "engine/memory.hpp"
#include "engine/output_file.hpp"
#include "engine/progress.hpp"
#include "engine/side_task.hpp"
#include "io/open_source.hpp"
#include "jobs/pipeline/executor.hpp"
#include "jobs/pyramid/pass_plan.hpp"
#include "tools/tilewave/output.hpp"

namespace tw::cli {
namespace {

using Clock = std::chrono::steady_clock;

// At least these for the command's own work to run beside the writing.
constexpr int kBesideThreads = 8;
constexpr size_t kBesideMemory = size_t{4} << 30;

double since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

std::string description_of(const Pipeline& p, const PipelineRun& run, int step_index, bool single_op) {
  if (single_op) return run.results[static_cast<size_t>(step_index)].description;
  std::string s = "Tilewave run:";
  for (int i = 0; i <= step_index; ++i) s += (i ? " | " : " ") + p.steps[static_cast<size_t>(i)].text;
  return s;
}

}  // namespace

int run_pipeline_command(const PipelineCommand& c, const Args& a, const CommonOptions& common) {
  std::optional<tbb::global_control> threads;
  if (common.threads > 0)
    threads.emplace(tbb::global_control::max_allowed_parallelism, static_cast<size_t>(common.threads));
  // Paths first: the output, every kept file and the report must be new or
  // regular files, none an input, none the same as another.
  std::vector<std::string> input_paths;
  for (const auto& in : c.inputs) input_paths.push_back(in.second);
  std::vector<std::string> read_paths = input_paths;
  for (const auto& f : c.read_files) read_paths.push_back(f);
  std::vector<std::string> written;
  if (!c.output.empty()) {
    check_paths(c.output, common, read_paths);
    written.push_back(c.output);
  } else if (!common.report.empty()) {
    check_output_path(common.report, read_paths);
  }
  auto check_written = [&](const std::string& what, const std::string& path) {
    check_output_path(path, read_paths);
    for (const auto& w : written)
      if (path == w || same_file(path, w)) throw UsageError(what + ": written twice");
    if (!common.report.empty() && (path == common.report || same_file(path, common.report)))
      throw UsageError(what + " is the --report file");
    written.push_back(path);
  };
  for (const auto& [name, path] : c.keeps) check_written("--keep " + name + "=" + path, path);
  for (const auto& path : c.other_outputs) check_written(path, path);
  // Headers only: the planner needs the inputs' pixel types.
  std::vector<std::shared_ptr<const TileSource>> sources;
  std::vector<PlanInput> plan_inputs;
  for (const auto& [name, path] : c.inputs) {
    sources.push_back(open_source(path));
    // Not yet shared with anything that reads it: setting it is not a race.
    if (sources.size() == 1 && c.input_mpp > 0)
      std::const_pointer_cast<TileSource>(sources[0])->set_resolution(c.input_mpp, c.input_mpp);
    plan_inputs.push_back({name, {sources.back()->info().fmt, path}});
  }
  const PipelinePlan plan = plan_pipeline(c.pipeline, plan_inputs, !c.output.empty());
  if (c.check_plan) c.check_plan(plan);
  std::vector<std::pair<int, std::string>> keep_slots;
  for (const auto& [name, path] : c.keeps) keep_slots.push_back({find_result(c.pipeline, plan, name), path});
  // The writer's settings for every image written, checked now (JPEG cannot
  // store float32): nothing runs for an output that cannot be written.
  auto request = [&](int slot, const std::string& path) {
    OutputRequest req;
    req.output = path;
    const int step = slot - static_cast<int>(plan.input_names.size());
    req.lossless_default = c.pipeline.steps[static_cast<size_t>(step)].op->lossless;
    return req;
  };
  auto fmt_of = [&](int slot) { return plan.steps[static_cast<size_t>(slot) - plan.input_names.size()].out; };
  // And their tile indexes, which the writer holds through its pass, within
  // --memory: an input whose header claims a million pixels square is
  // refused now, not after the steps have read all of it. Every op keeps
  // its input's size.
  const LevelInfo& l0 = sources.at(0)->level(0);
  auto check_output = [&](int slot, const std::string& path) {
    const OutputSpec spec = output_spec(request(slot, path), a);
    encode_settings(fmt_of(slot), spec, common.tile);
    check_output_fits(path, fmt_of(slot), l0.width, l0.height, spec, common.tile, common.memory);
  };
  if (!c.output.empty()) check_output(plan.output_slot, c.output);
  for (const auto& [slot, path] : keep_slots) check_output(slot, path);

  ExecContext ctx = context_of(common);
  ctx.scratch_near = c.output.empty() ? (c.keeps.empty() ? "" : c.keeps[0].second) : c.output;
  if (!c.single_op) Progress::set_single_line(true);
  std::vector<int> kept;
  for (const auto& k : keep_slots) kept.push_back(k.first);
  PipelineRun run = run_pipeline(c.pipeline, plan, sources, ctx, !c.single_op, kept);
  for (size_t i = 0; i < run.results.size(); ++i) {
    const std::string prefix = c.single_op ? "" : c.pipeline.steps[i].label() + ": ";
    for (const auto& m : run.results[i].messages) std::cout << prefix << m << "\n";
    if (!plan.steps[i].image) std::cout << prefix << dump_json(run.results[i].values, c.single_op ? 2 : -1) << "\n";
  }
  if (c.output.empty()) return 0;

  CommonOptions out_common = common;
  out_common.memory = ctx.memory;  // what the steps and the inputs' readers left
  // A writer short of memory says so in the user's terms: what --memory
  // left it after the steps' stores, and a --memory that would do (the
  // steps take shares of it, so it scales the whole).
  auto write = [&](const OutputRequest& req) {
    try {
      return write_output(req, a, out_common);
    } catch (const BudgetTooSmall& e) {
      if (out_common.memory >= common.memory || e.had == 0) throw;
      const size_t give = memory_to_give(common.memory, e.needed, e.had);
      throw InputError("--memory " + format_bytes(common.memory) + " leaves " + format_bytes(e.had) + " for writing " +
                       req.output + " after the steps' stores, and it needs at least " + format_bytes(e.needed) +
                       ": give --memory " + format_bytes(give) + " or more (or a smaller --tile)");
    }
  };
  const int last = static_cast<int>(plan.steps.size()) - 1;
  // The command's own work on the results (the nuclei's features) runs
  // beside the writing where the writing leaves cores idle: its codecs kept
  // about half of 16 threads busy on the H200 (encode 24 thread-seconds in
  // its 4.2 s), the features took 2.7 s more after it. Each then gets half
  // of what the steps left, so only with plenty of it; on fewer threads
  // both already fill the cores, and they run one after the other.
  std::vector<std::shared_ptr<const TileSource>> kept_sources;
  for (const auto& k : keep_slots) kept_sources.push_back(run.slots[static_cast<size_t>(k.first)]);
  const int pool = static_cast<int>(tbb::global_control::active_value(tbb::global_control::max_allowed_parallelism));
  // Declared before the task, so that they outlive it when the writing
  // throws (the task's destructor waits for it).
  nlohmann::json beside_values = nlohmann::json::object();
  const bool beside_writing = c.with_outputs && pool >= kBesideThreads && out_common.memory >= 2 * kBesideMemory;
  SideTask beside;
  if (beside_writing) {
    out_common.memory /= 2;
    beside.start([&, memory = out_common.memory] { c.with_outputs(beside_values, kept_sources, run.inputs, memory); });
  }
  nlohmann::json kept_files = nlohmann::json::array();
  for (const auto& [slot, path] : keep_slots) {
    OutputRequest req = request(slot, path);
    const int step = slot - static_cast<int>(plan.input_names.size());
    req.src = run.slots[static_cast<size_t>(slot)].get();
    req.description = description_of(c.pipeline, run, step, false);
    req.progress_label = "writing " + path;
    const OutputResult out = write(req);
    Progress::end_line();
    print_written(req, out, "kept from " + c.pipeline.steps[static_cast<size_t>(step)].label());
    kept_files.push_back({{"step", step + 1}, {"path", path}, {"bytes", out.bytes}});
  }
  OutputRequest req = request(plan.output_slot, c.output);
  req.src = run.output().get();
  req.description = description_of(c.pipeline, run, last, c.single_op);
  if (!c.single_op) req.progress_label = "writing " + c.output;
  const double open_s = since(c.start);
  const OutputResult out = write(req);
  Progress::end_line();
  std::string summary = run.results.back().summary;
  if (!c.single_op) summary = std::to_string(plan.steps.size()) + " steps (" + plan.describe() + ")";
  print_written(req, out, summary);
  // The report's device is the last op's; the writer's pass may have run
  // elsewhere (a CPU pass ends before a starting GPU joins it).
  nlohmann::json values = c.single_op ? run.results.back().values : nlohmann::json::object();
  if (values.contains("op_device")) {
    values["writer_device"] = out.stats.backend;
    values["device"] = values["op_device"];
  }
  values["steps"] = pipeline_report(c.pipeline, plan, run);
  values["plan"] = plan.describe();
  // Per input: the JPEG tiles the GPU steps took the split way (entropy
  // decoding on the CPU, the rest on the device); -1: not read so.
  nlohmann::json split = nlohmann::json::array();
  for (size_t k = 0; k < plan.input_names.size(); ++k) split.push_back(split_jpeg_tiles(*run.inputs[k]));
  values["input_gpu_split_jpeg_tiles"] = split;
  std::vector<int64_t> gpu_decoded;
  for (size_t k = 0; k < plan.input_names.size(); ++k)
    gpu_decoded.push_back(split_jpeg_gpu_decoded_tiles(*run.inputs[k]));
  values["input_gpu_entropy_decoded_tiles"] = gpu_decoded;
  if (!kept_files.empty()) values["kept"] = kept_files;
  if (beside_writing) {
    beside.finish();  // rethrows what it threw
    for (const auto& [k, v] : beside_values.items()) values[k] = v;
  } else if (c.with_outputs) {
    c.with_outputs(values, kept_sources, run.inputs, common.memory);
  }
  if (c.with_outputs) values["measured_beside_writing"] = beside_writing;
  write_report(common.report, c.command, input_paths.back(), c.output, out, open_s, since(c.start), values);
  return 0;
}

}  // namespace tw::cli
