// Every registered op as a command (engine/op_registry.hpp): its options,
// --help and argument checks come from its registry entry; running it and
// writing its result go through the jobs layer. `tilewave filter OP` picks
// one of the filter family; the others are commands of their own.
#include <chrono>
#include <cstdio>
#include <iostream>

#include "engine/json.hpp"
#include "engine/op_registry.hpp"
#include "io/open_source.hpp"
#include "jobs/op_runner.hpp"
#include "tools/tilewave/args.hpp"
#include "tools/tilewave/commands.hpp"
#include "tools/tilewave/output.hpp"
#include "tools/tilewave/pipeline_command.hpp"

namespace tw::cli {
namespace {

using Clock = std::chrono::steady_clock;

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
  const auto& pos = a.positional();
  if (pos.size() != op.inputs.size() + (writes_image(op) ? 1 : 0))
    throw UsageError(words(op) + " takes" + arguments(op) + " (see --help)");
  // The op's own options, checked before any file is touched.
  OpParams params = op.params_for();
  for (const ParamSpec& p : op.params)
    if (a.has(p.name)) params.set(p.name, a.str(p.name));
  params.check_all();
  op.validate(params);

  // A one-step pipeline: the same planner, executor and writer as `run`.
  PipelineCommand c;
  c.command = words(op);
  c.start = t0;
  c.single_op = true;
  PipelineStep step;
  step.number = 0;
  step.text = words(op);
  step.op = &op;
  step.params = params;
  for (size_t k = 0; k < op.inputs.size(); ++k) {
    // Steps read the images by these names; one input is "input".
    const std::string name = op.inputs.size() == 1 ? "input" : "image" + std::to_string(k + 1);
    c.inputs.push_back({name, pos[k]});
    step.refs.push_back(name);
  }
  // Optional images (`--mask FILE`) are inputs too: the step reads each by
  // its option's name.
  for (const auto& name : given_optional_inputs(op, params)) {
    c.inputs.push_back({name, params.text(name)});
    step.params.set(name, name);
  }
  c.pipeline.steps.push_back(step);
  if (writes_image(op)) c.output = pos.back();
  return run_pipeline_command(c, a, common);
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
