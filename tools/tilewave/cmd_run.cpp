// tilewave run INPUT OUTPUT STEP [STEP ...]: a chain of registered ops in
// one streaming pass (jobs/pipeline/, docs/pipelines.md).
#include <iostream>

#include "tools/tilewave/commands.hpp"
#include "tools/tilewave/output.hpp"
#include "tools/tilewave/pipeline_command.hpp"

namespace tw::cli {
namespace {

std::vector<OptionSpec> run_specs() {
  std::vector<OptionSpec> s = {
      {"pipeline", "FILE", "read the steps from FILE, one a line ('#' starts a comment); after any given as arguments"},
      {"keep", "NAME=FILE", "also write the result of step NAME (its name or number) to FILE; may be repeated"},
  };
  for (auto& o : output_option_specs()) s.push_back(o);
  for (auto& o : common_option_specs()) s.push_back(o);
  return s;
}

constexpr const char* kHelp =
    "usage: tilewave run INPUT OUTPUT.tif STEP [STEP ...] [--pipeline FILE] [--keep NAME=FILE] [OPTIONS]\n"
    "\n"
    "Runs a chain of ops over a whole slide in one streaming pass: each STEP is one\n"
    "argument written as the op's command without its images, e.g.\n"
    "\n"
    "  tilewave run slide.svs dist.tif 'filter gray' 'filter gaussian --sigma 2' \\\n"
    "      'filter threshold --otsu' fill-holes edt\n"
    "\n"
    "A step reads the image of the step before it (the first reads INPUT). 'NAME: STEP'\n"
    "names a step's result; a later step reads it by naming it where the command takes\n"
    "its images ('reconstruct seeds mask', 'math subtract smooth bg'); 'input' is INPUT,\n"
    "and a step's number names it too. Runs of pixel and neighbourhood steps are fused\n"
    "(a tile goes through all of them, no intermediate image is made); whole-image steps\n"
    "(reconstruct, fill-holes, hdome, edt, canny, Otsu) keep their input in the tile store\n"
    "under --memory. --report gives each step's tile visits, time and bytes moved.\n"
    "'tilewave ops' lists the ops; docs/pipelines.md has the details.\n"
    "\noptions:\n";

}  // namespace

int cmd_run(int argc, char** argv) {
  const auto t0 = std::chrono::steady_clock::now();
  Args a("run", argc, argv, 2, run_specs());
  if (a.has("help")) {
    std::cout << kHelp << a.options_help();
    return 0;
  }
  CommonOptions common = parse_common(a);
  const auto& pos = a.positional();
  if (pos.size() < 2) throw UsageError("run takes INPUT OUTPUT.tif STEP [STEP ...] (see tilewave run --help)");
  std::vector<std::string> steps(pos.begin() + 2, pos.end());
  if (a.has("pipeline"))
    for (auto& s : read_pipeline_file(a.str("pipeline"))) steps.push_back(std::move(s));
  if (steps.empty()) throw UsageError("run: no steps (give them as arguments or with --pipeline FILE)");
  PipelineCommand c;
  c.command = "run";
  c.start = t0;
  c.inputs.push_back({"input", pos[0]});
  c.output = pos[1];
  c.pipeline = parse_pipeline(steps);
  if (a.has("pipeline")) c.read_files.push_back(a.str("pipeline"));
  for (const std::string& k : a.all("keep")) {
    const auto eq = k.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == k.size())
      throw UsageError("--keep takes NAME=FILE (a step's name or number, and a file), not '" + k + "'");
    c.keeps.push_back({k.substr(0, eq), k.substr(eq + 1)});
  }
  return run_pipeline_command(c, a, common);
}

}  // namespace tw::cli
