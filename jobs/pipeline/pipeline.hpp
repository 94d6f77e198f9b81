#pragma once
// A pipeline: ops chained on one input, written as the commands would be
// written without their images (docs/pipelines.md):
//
//   tilewave run slide.svs dist.tif 'filter gray' 'filter gaussian --sigma 2'
//                'mask: filter threshold --otsu' fill-holes edt
//
// A step reads the previous step's image unless it names its images: a step
// may be given a name ('mask: ...') and later steps read it by that name (or
// by its number, or `input`, the pipeline's input) as the command's INPUT
// arguments: 'reconstruct seeds mask', 'math subtract smooth background'.
// References point backwards only, so a pipeline is a chain with branches
// that always ends: no result can depend on itself.
#include <memory>
#include <string>
#include <vector>

#include "engine/op_registry.hpp"

namespace tw {

struct PipelineStep {
  int number = 0;    // 1-based, as the user counts; 0: a single-op command's only step
  std::string text;  // as written, for messages
  std::string name;  // given with 'NAME:', else empty
  const OpDef* op = nullptr;
  OpParams params;
  std::vector<std::string> refs;  // images read, as written; empty: the previous image

  // "step 3 (filter gaussian)" or "step 3 'smooth' (filter gaussian)".
  std::string label() const;
  // A message about the step: "LABEL: msg" (just msg for a command's only step).
  std::string where(const std::string& msg) const { return number == 0 ? msg : label() + ": " + msg; }
};

struct Pipeline {
  std::vector<PipelineStep> steps;
};

// Splits a step into words as a shell would (quotes '...' and "...",
// backslash escapes, `#` starting a comment); ParamError on an open quote.
std::vector<std::string> split_words(const std::string& text);

// One step from its text: its name, op and options, checked against the
// op's parameters (ParamError naming the step).
PipelineStep parse_step(const std::string& text, int number);

// Steps from arguments, one step each.
Pipeline parse_pipeline(const std::vector<std::string>& steps);
// The lines of a --pipeline file: one step a line, blank lines and `#`
// comments skipped. InputError when it cannot be read.
std::vector<std::string> read_pipeline_file(const std::string& path);

}  // namespace tw
