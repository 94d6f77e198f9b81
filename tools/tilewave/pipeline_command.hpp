#pragma once
// What `tilewave run` and every single-op command share: open the inputs,
// plan the steps (every check before any work), run them through the
// pipeline executor, write the kept results and the output, print and
// report. A single-op command is a one-step pipeline run here.
#include <chrono>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "engine/tile_source.hpp"
#include "jobs/pipeline/pipeline.hpp"
#include "jobs/pipeline/plan.hpp"
#include "tools/tilewave/args.hpp"

namespace tw::cli {

struct PipelineCommand {
  std::string command;                                      // "run", "filter gaussian" (report, messages)
  std::vector<std::pair<std::string, std::string>> inputs;  // (name steps read it by, path)
  std::string output;                                       // empty: the last step is a reduction, printed
  Pipeline pipeline;
  std::vector<std::pair<std::string, std::string>> keeps;  // (result name or number, path)
  bool single_op = false;                                  // messages unprefixed, as the op's own command
  // Files read that are not images (the --pipeline file): nothing written may be one.
  std::vector<std::string> read_files;
  // Files with_outputs writes (the nuclei's tables): checked as the output is.
  std::vector<std::string> other_outputs;
  // > 0: the first input's microns per pixel, both ways (the user's --mpp),
  // in place of what its file says: the results and the files written carry it.
  double input_mpp = 0;
  // Runs after planning, before any work: a command's own checks of the
  // plan (the nuclei's labels step must make labels). Throws to refuse.
  std::function<void(const PipelinePlan& plan)> check_plan;
  // Runs once the steps are done, before the report: adds its own figures
  // to the report's values (the nuclei's feature tables). `kept`: the kept
  // results as the run holds them (in the order of `keeps`), so that what is
  // measured is read from memory, not decoded again from the file written.
  // `inputs`: the run's inputs (in the order of `inputs`), whose read
  // caches hold what the run decoded last. `memory`: what it may take.
  // With many threads and memory it runs beside the writing of the images
  // (run_pipeline_command says when), else after it.
  std::function<void(nlohmann::json& report_values, const std::vector<std::shared_ptr<const TileSource>>& kept,
                     const std::vector<std::shared_ptr<const TileSource>>& inputs, size_t memory)>
      with_outputs;
  std::chrono::steady_clock::time_point start;
};

int run_pipeline_command(const PipelineCommand& c, const Args& a, const CommonOptions& common);

}  // namespace tw::cli
