// Every registered op as a command (engine/op_registry.hpp): its options,
// --help and argument checks come from its registry entry; running it and
// writing its result go through the jobs layer. `tilewave filter OP` picks
// one of the filter family; the others are commands of their own.
#include <tbb/global_control.h>

#include <chrono>
#include <cstdio>
#include <iostream>
#include <optional>

#include "engine/json.hpp"
#include "engine/op_registry.hpp"
#include "io/open_source.hpp"
#include "jobs/op_runner.hpp"
#include "tools/tilewave/args.hpp"
#include "tools/tilewave/commands.hpp"
#include "tools/tilewave/output.hpp"

namespace tw::cli {
namespace {

using Clock = std::chrono::steady_clock;

double since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

std::string words(const OpDef& op) {
  std::string s;
  for (const auto& w : op.command) s += (s.empty() ? "" : " ") + w;
  return s;
}

bool writes_image(const OpDef& op) {
  return op.category != OpCategory::kReduction;
}

std::vector<OptionSpec> option_specs(const OpDef& op) {
  std::vector<OptionSpec> s;
  for (const ParamSpec& p : op.params) s.push_back({p.name, p.placeholder, p.help});
  if (writes_image(op))
    for (auto& o : output_option_specs()) s.push_back(o);
  for (auto& o : common_option_specs()) s.push_back(o);
  return s;
}

std::string arguments(const OpDef& op) {
  std::string s;
  for (const auto& in : op.inputs) s += " " + in;
  return s + (writes_image(op) ? " OUTPUT.tif" : "");
}

void print_help(const OpDef& op, const Args& a) {
  std::cout << "usage: tilewave " << words(op) << arguments(op) << (op.usage.empty() ? "" : " " + op.usage)
            << " [OPTIONS]\n\n"
            << (op.help.empty() ? op.summary : op.help) << "\nInput: " << op.takes << ".\n\noptions:\n"
            << a.options_help();
}

}  // namespace

int run_op_command(const OpDef& op, int argc, char** argv, int first) {
  const auto t0 = Clock::now();
  Args a(words(op), argc, argv, first, option_specs(op));
  if (a.has("help")) {
    print_help(op, a);
    return 0;
  }
  CommonOptions common = parse_common(a);
  std::optional<tbb::global_control> threads;
  if (common.threads > 0)
    threads.emplace(tbb::global_control::max_allowed_parallelism, static_cast<size_t>(common.threads));
  const auto& pos = a.positional();
  if (pos.size() != op.inputs.size() + (writes_image(op) ? 1 : 0))
    throw UsageError(words(op) + " takes" + arguments(op) + " (see --help)");
  // The op's own options, checked before any file is touched.
  OpParams params = op.params_for();
  for (const ParamSpec& p : op.params)
    if (a.has(p.name)) params.set(p.name, a.str(p.name));
  params.check_all();
  op.validate(params);

  const std::vector<std::string> input_paths(pos.begin(), pos.begin() + static_cast<long>(op.inputs.size()));
  const std::string output = writes_image(op) ? pos.back() : "";
  if (writes_image(op)) check_paths(output, common, input_paths);
  std::vector<std::shared_ptr<const TileSource>> inputs;
  for (const auto& p : input_paths) inputs.push_back(open_source(p));
  ExecContext ctx = context_of(common);
  ctx.scratch_near = output;
  OpResult res = run_registered_op(op, inputs, params, ctx);
  for (const auto& m : res.messages) std::cout << m << "\n";
  if (!writes_image(op)) {
    std::cout << dump_json(res.values, 2) << "\n";
    return 0;
  }
  OutputRequest req;
  req.src = res.image.get();
  req.output = output;
  req.description = res.description;
  req.lossless_default = op.lossless;
  CommonOptions out_common = common;
  out_common.memory = ctx.memory;  // what the op and its inputs' readers left
  const double open_s = since(t0);
  const OutputResult out = write_output(req, a, out_common);
  print_written(req, out, res.summary);
  // The report's device is the op's; the writer's pass may have run
  // elsewhere (a CPU pass ends before a starting GPU joins it).
  nlohmann::json values = res.values;
  if (values.contains("op_device")) {
    values["writer_device"] = out.stats.backend;
    values["device"] = values["op_device"];
  }
  write_report(common.report, words(op), input_paths.back(), output, out, open_s, since(t0), values);
  return 0;
}

bool is_family(const std::string& word) {
  for (const auto& op : op_registry().all())
    if (op->command.size() == 2 && op->command[0] == word) return true;
  return false;
}

// The words under a family's help: `filter` ops read one image; the others
// say what they take in their own usage.
std::string family_intro(const std::string& family) {
  if (family == "filter")
    return "usage: tilewave filter OP INPUT OUTPUT.tif [OPTIONS]\n\n"
           "Runs an image op over a whole slide, tile by tile (with halos: any tile size gives\n"
           "the whole-image result), and writes a tiled pyramidal TIFF. Input: 8-bit gray or\n"
           "RGB unless an op says otherwise. Ops that need gray convert RGB with ITU-R BT.601\n"
           "luma as OpenCV does ((4899 R + 9617 G + 1868 B + 8192) >> 14). 'tilewave filter\n"
           "OP --help' lists an op's options.\n\nops:\n";
  return "usage: tilewave " + family + " OP INPUTS... OUTPUT.tif [OPTIONS]\n\n'tilewave " + family +
         " OP --help' lists an op's inputs and options.\n\nops:\n";
}

int cmd_family(const std::string& family, int argc, char** argv) {
  std::vector<const OpDef*> members;
  for (const auto& op : op_registry().all())
    if (op->command.size() == 2 && op->command[0] == family) members.push_back(op.get());
  const std::string sub = argc > 2 ? argv[2] : "";
  if (sub.empty() || sub == "--help" || sub == "-h") {
    std::string text = family_intro(family);
    for (const OpDef* op : members) {
      std::string left = "  " + op->name + (op->usage.empty() ? "" : " " + op->usage);
      if (left.size() < 32)
        left.resize(32, ' ');
      else
        left += "\n" + std::string(32, ' ');
      text += left + op->summary + "\n";
    }
    if (!sub.empty()) {
      std::cout << text;
      return 0;
    }
    throw UsageError(family + (family == "filter" ? " takes OP INPUT OUTPUT.tif" : " takes OP INPUTS... OUTPUT.tif") +
                     " (see tilewave " + family + " --help)");
  }
  const OpDef* op = op_registry().find_command({family, sub});
  if (!op) throw UsageError("unknown " + family + " op '" + sub + "' (see tilewave " + family + " --help)");
  return run_op_command(*op, argc, argv, 3);
}

}  // namespace tw::cli
