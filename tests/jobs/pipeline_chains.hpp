#pragma once
// What the pipeline tests share (pipeline_test.cpp, pipeline_cuda_test.cpp):
// chains over every op category, each step's reference (the step run alone,
// as its own command runs it, on lossless in-memory copies of the results it
// reads), the pipeline run the way `tilewave run` runs it, and a bit-exact
// comparison of images of any sample type.
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <ostream>
#include <sstream>
#include <string>
#include <vector>

#include "engine/memory_source.hpp"
#include "io/open_source.hpp"
#include "jobs/op_runner.hpp"
#include "jobs/pipeline/executor.hpp"
#include "tests/support/op_test.hpp"

namespace tw::test {

using SourceP = std::shared_ptr<const TileSource>;

// A step of a chain: its text as `tilewave run` takes it, and the results it
// reads, written out by hand (0: the input; k: step k's result), so the
// reference does not depend on the planner's resolution of names.
struct ChainStep {
  std::string text;
  std::vector<int> reads;
};

struct Chain {
  std::string name;  // a gtest name
  std::vector<ChainStep> steps;
  // Commands the chain needs registered (filter channel, filter convert and
  // the math family arrived after the pipelines).
  std::vector<std::vector<std::string>> needs;
  std::string plan;  // PipelinePlan::describe(), as the user sees it
};

// The chains of the issue: a fused run of pixel and neighbourhood steps; a
// reduction barrier (Otsu) before two wavefront barriers; two-input steps
// reading a streamed result both before and after a barrier; an h-dome and a
// reconstruction (by hand: a darker marker under the named image); hed's float channels picked and converted
// before Otsu and the EDT; a reduction in mid-chain (the next step reads the
// image before it) and Canny as a barrier.
inline std::vector<Chain> pipeline_chains() {
  return {
      {"NeighbourhoodRun",
       {{"filter gaussian --sigma 1.5", {0}},
        {"filter gray", {1}},
        {"filter sobel", {2}},
        {"filter contrast --factor 1.4 --center 30", {3}},
        {"filter gaussian --sigma=0.8", {4}}},
       {},
       "1-5 streamed"},
      {"OtsuFillHolesEdt",
       {{"filter gray", {0}},
        {"filter threshold --otsu", {1}},
        {"filter invert", {2}},
        {"fill-holes", {3}},
        {"edt", {4}}},
       {},
       "1 streamed, 2 threshold (barrier), 3 streamed, 4 fill-holes (barrier), 5 edt (barrier)"},
      {"TwoInputSteps",
       {{"g: filter gray", {0}},
        {"s: filter gaussian --sigma 3", {1}},
        {"math subtract g s", {1, 2}},
        {"filter threshold --value 6", {3}},
        {"m: fill-holes", {4}},
        {"math mask g m", {1, 5}}},
       {{"math", "subtract"}, {"math", "mask"}},
       "1 gray (stored: read more than once), 2-4 streamed, 5 fill-holes (barrier), 6 streamed"},
      {"HdomeReconstruct",
       {{"filter gray", {0}},
        {"g: filter gaussian --sigma 1.5", {1}},
        {"hdome --h 10", {2}},
        {"m: filter brightness --add -30 g", {2}},
        {"reconstruct m g --connectivity 4", {4, 2}}},
       {},
       "1 streamed, 2 gaussian (stored: read more than once), 3 hdome (barrier), 4 streamed, 5 reconstruct "
       "(barrier)"},
      {"HedChannelConvert",
       {{"filter hed", {0}},
        {"filter channel --index 0", {1}},
        {"filter convert --type u8 --from 0 --to 0.25", {2}},
        {"filter gaussian --sigma 1", {3}},
        {"filter threshold --otsu", {4}},
        {"edt", {5}}},
       {{"filter", "channel"}, {"filter", "convert"}},
       "1-4 streamed, 5 threshold (barrier), 6 edt (barrier)"},
      {"ReductionMidChain",
       {{"g: filter gray", {0}},
        {"stats", {1}},
        {"filter canny --low 20 --high 60", {1}},
        {"filter invert", {3}},
        {"edt", {4}}},
       {},
       "1 gray (stored: read more than once), 2 stats (reduction), 3 canny (barrier), 4 streamed, 5 edt (barrier)"},
  };
}

// gtest prints a chain by its name.
inline void PrintTo(const Chain& c, std::ostream* os) {
  *os << c.name;
}

inline std::vector<std::string> texts_of(const Chain& c) {
  std::vector<std::string> t;
  for (const auto& s : c.steps) t.push_back(s.text);
  return t;
}

// "" when every op the chain needs is registered; else what is missing.
inline std::string missing_ops(const Chain& c) {
  std::string s;
  for (const auto& words : c.needs)
    if (!op_registry().find_command(words)) s += (s.empty() ? "" : ", ") + words[0] + " " + words[1];
  return s;
}

// The first pixels of a synthetic slide (tissue, stain, nuclei: Otsu and
// the wavefront ops have something to find), held in memory.
inline SourceP slide(int64_t w, int64_t h, int seed) {
  const SourcePtr s =
      open_source("synthetic:" + std::to_string(w) + "x" + std::to_string(h) + ",seed=" + std::to_string(seed));
  return source_of(s->read(0, s->level(0).bounds()));
}

// A lossless copy of a result: the intermediate file of a separate command.
inline SourceP stored(const TileSource& s) {
  return std::make_shared<MemorySource>(read_tiled(s, 256));
}

// Each step of the chain run alone on the results it reads, each result
// stored in memory before the next step reads it: the commands one by one.
struct Reference {
  std::vector<Image> images;                       // per slot (0: the input); empty for a reduction
  std::vector<nlohmann::json> values;              // per step
  std::vector<std::vector<std::string>> messages;  // per step
};

inline Reference run_separately(const Chain& c, const SourceP& input, const Backend& backend = {}) {
  Reference ref;
  std::vector<SourceP> slots = {stored(*input)};
  ref.images.push_back(read_tiled(*slots[0]));
  for (size_t i = 0; i < c.steps.size(); ++i) {
    const PipelineStep st = parse_step(c.steps[i].text, static_cast<int>(i) + 1);
    std::vector<SourceP> in;
    for (int k : c.steps[i].reads) in.push_back(slots.at(static_cast<size_t>(k)));
    ExecContext ctx;  // a command's own: its default budget and tile
    ctx.backend = backend;
    const OpResult r = run_registered_op(*st.op, in, st.params, ctx);
    slots.push_back(r.image ? stored(*r.image) : nullptr);
    ref.images.push_back(r.image ? read_tiled(*slots.back()) : Image());
    ref.values.push_back(r.values);
    ref.messages.push_back(r.messages);
  }
  return ref;
}

// A pipeline as `tilewave run` runs it: parsed, planned, run; the Pipeline
// outlives its plan (which points at its steps) and its run.
struct ChainRun {
  std::unique_ptr<Pipeline> pipeline;
  PipelinePlan plan;
  PipelineRun run;
};

inline ChainRun run_chain(const Chain& c, const SourceP& input, ExecContext& ctx) {
  ChainRun r;
  r.pipeline = std::make_unique<Pipeline>(parse_pipeline(texts_of(c)));
  r.plan = plan_pipeline(*r.pipeline, {{"input", {input->info().fmt, "input"}}});
  // Every result is compared, so every one is kept (the executor lets go of
  // those nothing reads any more; PipelineCli.ManyBarriers... covers that).
  std::vector<int> all;
  for (size_t i = 0; i < r.plan.steps.size(); ++i)
    if (r.plan.steps[i].image) all.push_back(r.plan.slot_of_step(static_cast<int>(i)));
  r.run = run_pipeline(*r.pipeline, r.plan, {input}, ctx, false, all);
  return r;
}

// The plan reads what the chain says each step reads.
inline std::string plan_mismatch(const Chain& c, const PipelinePlan& plan) {
  if (plan.steps.size() != c.steps.size()) return "plan has " + std::to_string(plan.steps.size()) + " steps";
  for (size_t i = 0; i < c.steps.size(); ++i)
    if (plan.steps[i].reads != c.steps[i].reads) return "step " + std::to_string(i + 1) + " reads other results";
  if (plan.describe() != c.plan) return "plan '" + plan.describe() + "', expected '" + c.plan + "'";
  return "";
}

inline std::string sample_string(SampleType t, const uint8_t* p) {
  std::ostringstream o;
  switch (t) {
    case SampleType::kU8:
      o << int{*p};
      break;
    case SampleType::kU16: {
      uint16_t v;
      std::memcpy(&v, p, 2);
      o << v;
      break;
    }
    case SampleType::kI32: {
      int32_t v;
      std::memcpy(&v, p, 4);
      o << v;
      break;
    }
    case SampleType::kU32: {
      uint32_t v;
      std::memcpy(&v, p, 4);
      o << v;
      break;
    }
    case SampleType::kF32: {
      float v;
      uint32_t bits;
      std::memcpy(&v, p, 4), std::memcpy(&bits, p, 4);
      o.precision(9);
      o << v << " (0x" << std::hex << bits << ")";
      break;
    }
  }
  return o.str();
}

// "" when a and b hold the same bytes; else the count of differing samples,
// the first (x, y, channel) and both values.
inline std::string bytes_diff(const ImageView& a, const ImageView& b) {
  if (a.fmt != b.fmt) return "formats differ: " + a.fmt.str() + " vs " + b.fmt.str();
  if (a.rect.w != b.rect.w || a.rect.h != b.rect.h) return "sizes differ: " + a.rect.str() + " vs " + b.rect.str();
  const size_t sb = sample_bytes(a.fmt.type);
  int64_t count = 0;
  std::string first;
  for (int64_t y = 0; y < a.rect.h; ++y) {
    const uint8_t* p = a.row_bytes(a.rect.y + y);
    const uint8_t* q = b.row_bytes(b.rect.y + y);
    if (std::memcmp(p, q, a.row_length_bytes()) == 0) continue;
    for (int64_t i = 0; i < a.rect.w * a.fmt.channels; ++i) {
      if (std::memcmp(p + i * sb, q + i * sb, sb) == 0) continue;
      if (count++ == 0)
        first = "first at (" + std::to_string(i / a.fmt.channels) + ", " + std::to_string(y) + ") channel " +
                std::to_string(i % a.fmt.channels) + ": " + sample_string(a.fmt.type, p + i * sb) + " vs " +
                sample_string(b.fmt.type, q + i * sb);
    }
  }
  return count == 0 ? "" : std::to_string(count) + " samples differ; " + first;
}

// Every result of the run (read in tiles of `tile`, as the writer and
// --keep read them) against the reference's; "" when all are equal, else
// the first step that differs and how.
inline std::string results_diff(const Chain& c, const PipelineRun& run, const Reference& ref, int64_t tile) {
  for (size_t k = 1; k < ref.images.size(); ++k) {
    const bool image = !ref.images[k].empty();
    if (image != (run.slots[k] != nullptr))
      return "step " + std::to_string(k) + " (" + c.steps[k - 1].text + "): an image in one run only";
    if (!image) continue;
    const std::string d = bytes_diff(read_tiled(*run.slots[k], tile).view(), ref.images[k].view());
    if (!d.empty()) return "step " + std::to_string(k) + " (" + c.steps[k - 1].text + "): " + d;
  }
  return "";
}

// Whether an image holds more than one value (a test's data is not trivial).
inline bool varies(const Image& img) {
  const size_t n = img.view().row_length_bytes(), sb = sample_bytes(img.fmt().type);
  const uint8_t* first = img.row_bytes(img.rect().y);
  for (int64_t y = img.rect().y; y < img.rect().y1(); ++y)
    for (size_t i = 0; i < n; i += sb)
      if (std::memcmp(img.row_bytes(y) + i, first, sb) != 0) return true;
  return false;
}

}  // namespace tw::test
