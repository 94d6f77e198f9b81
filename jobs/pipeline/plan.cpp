#include "jobs/pipeline/plan.hpp"

#include <algorithm>
#include <cctype>

#include "jobs/op_runner.hpp"

namespace tw {
namespace {

bool all_digits(const std::string& s) {
  return !s.empty() && s.size() < 9 && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

std::string known_names(const Pipeline& p, const PipelinePlan& plan, size_t before) {
  std::string s;
  for (const auto& n : plan.input_names) s += (s.empty() ? "" : ", ") + n;
  for (size_t i = 0; i < before; ++i)
    if (!p.steps[i].name.empty()) s += ", " + p.steps[i].name;
  return s;
}

// The step (its index) a name or a 1-based number names; -1 for none.
int step_named(const Pipeline& p, const std::string& ref) {
  if (all_digits(ref)) {
    const int n = std::stoi(ref);
    return n >= 1 && n <= static_cast<int>(p.steps.size()) ? n - 1 : -1;
  }
  for (size_t i = 0; i < p.steps.size(); ++i)
    if (p.steps[i].name == ref) return static_cast<int>(i);
  return -1;
}

// The slot `ref` names, as seen from step index `at`.
int resolve(const Pipeline& p, const PipelinePlan& plan, size_t at, const std::string& ref) {
  const std::string who = p.steps[at].label();
  for (size_t k = 0; k < plan.input_names.size(); ++k)
    if (plan.input_names[k] == ref) return static_cast<int>(k);
  const int found = step_named(p, ref);
  if (found < 0)
    throw InputError(who + " reads '" + ref + "', which no step makes (results so far: " + known_names(p, plan, at) +
                     "; a step is read by its name or number)");
  if (found >= static_cast<int>(at))
    throw InputError(who + " reads '" + ref + "', made by " +
                     (found == static_cast<int>(at) ? std::string("this step itself")
                                                    : p.steps[static_cast<size_t>(found)].label() + ", after it") +
                     ": a step reads only earlier results (no result can depend on itself)");
  if (!plan.steps[static_cast<size_t>(found)].image)
    throw InputError(who + " reads '" + ref + "', but " + p.steps[static_cast<size_t>(found)].label() +
                     " makes numbers, not an image");
  return plan.slot_of_step(found);
}

std::string slot_name(const Pipeline& p, int slot, const std::vector<PlanInput>& inputs) {
  if (slot < static_cast<int>(inputs.size())) return inputs[static_cast<size_t>(slot)].type.name;
  return "the result of " + p.steps[static_cast<size_t>(slot - static_cast<int>(inputs.size()))].label();
}

}  // namespace

std::string PipelinePlan::describe() const {
  std::string s;
  size_t i = 0;
  while (i < steps.size()) {
    if (!s.empty()) s += ", ";
    if (steps[i].barrier) {
      s += std::to_string(i + 1) + " " + steps[i].step->op->name +
           (steps[i].shared  ? " (stored: read more than once)"
            : steps[i].image ? " (barrier)"
                             : " (reduction)");
      ++i;
      continue;
    }
    size_t j = i;
    while (j + 1 < steps.size() && !steps[j + 1].barrier) ++j;
    s += (i == j ? std::to_string(i + 1) : std::to_string(i + 1) + "-" + std::to_string(j + 1)) + " streamed";
    i = j + 1;
  }
  return s;
}

namespace {

// Marks the streamed steps that would be computed more than once, and
// stores each once (a barrier's store, spilling under the budget) for
// everything after it to read:
// * Several passes: each barrier reading a result (directly, or through
//   streamed steps) is one pass over it, and the writer of the last step
//   another (in the nuclei pipeline: the distance's row pass, its conversion
//   and Gaussian, read by the h-dome's and the watershed's passes).
// * Many reads in one pass: a streamed step computes its input again for
//   every read of it, so a step read twice by a step read twice ... is
//   computed 2^k times per tile (`s2: math max s1 s1`, twenty deep: a
//   minute for 64 x 64 pixels). A step its pass would compute more than
//   kMaxRecomputes times per tile is stored. Up to that, a tile is carried
//   through the reads (a cheap step computed twice costs less than a store).
constexpr int64_t kMaxRecomputes = 2;

void mark_shared(PipelinePlan& plan) {
  const int n = static_cast<int>(plan.steps.size()), first = static_cast<int>(plan.input_names.size());
  // passes[j]: the passes that read step j's result: barrier indices, n for the writer.
  std::vector<std::vector<int>> passes(static_cast<size_t>(n));
  // computes[j]: how many times its passes compute step j for one tile of theirs.
  std::vector<int64_t> computes(static_cast<size_t>(n), 0);
  passes.back().push_back(n);
  computes.back() = 1;
  for (int j = n - 1; j >= 0; --j) {
    PlannedStep& ps = plan.steps[static_cast<size_t>(j)];
    std::vector<int>& mine = passes[static_cast<size_t>(j)];
    std::sort(mine.begin(), mine.end());
    mine.erase(std::unique(mine.begin(), mine.end()), mine.end());
    if (!ps.barrier && ps.image && (mine.size() >= 2 || computes[static_cast<size_t>(j)] > kMaxRecomputes))
      ps.shared = ps.barrier = true;
    const std::vector<int> through = ps.barrier ? std::vector<int>{j} : mine;
    // A step nothing reads (or only --keep: computed once more by its own
    // writer) adds nothing to what it reads.
    const int64_t times = ps.barrier ? 1 : computes[static_cast<size_t>(j)];
    for (int s : ps.reads)
      if (s >= first) {
        auto& theirs = passes[static_cast<size_t>(s - first)];
        theirs.insert(theirs.end(), through.begin(), through.end());
        // Saturating: the count only has to exceed kMaxRecomputes.
        int64_t& c = computes[static_cast<size_t>(s - first)];
        c = std::min<int64_t>(c + times, kMaxRecomputes + 1);
      }
  }
}

}  // namespace

PipelinePlan plan_pipeline(const Pipeline& p, const std::vector<PlanInput>& inputs, bool writes_image) {
  if (p.steps.empty()) throw ParamError("the pipeline has no steps");
  PipelinePlan plan;
  for (const auto& in : inputs) plan.input_names.push_back(in.name);
  std::vector<std::string> names;
  int last_image = 0;  // the previous image: the (first) input, then each step's
  for (size_t i = 0; i < p.steps.size(); ++i) {
    const PipelineStep& st = p.steps[i];
    const OpDef& op = *st.op;
    const std::string who = st.label();
    if (!st.name.empty()) {
      if (std::find(names.begin(), names.end(), st.name) != names.end() ||
          std::find(plan.input_names.begin(), plan.input_names.end(), st.name) != plan.input_names.end())
        throw ParamError(who + ": the name '" + st.name + "' is given twice");
      names.push_back(st.name);
    }
    PlannedStep ps;
    ps.step = &st;
    if (st.refs.empty()) {
      if (op.inputs.size() != 1) {
        std::string list;
        for (const auto& n : op.inputs) list += " " + n;
        throw InputError(who + " reads " + std::to_string(op.inputs.size()) + " images: name them (" +
                         op.command.back() + list + ", each a step's name or number, or input)");
      }
      ps.reads.push_back(last_image);
    } else {
      if (st.refs.size() != op.inputs.size())
        throw InputError(who + " reads " + std::to_string(op.inputs.size()) + " image(s), but " +
                         std::to_string(st.refs.size()) + " are named");
      for (const auto& r : st.refs) ps.reads.push_back(resolve(p, plan, i, r));
    }
    for (const auto& name : given_optional_inputs(op, st.params))
      ps.reads.push_back(resolve(p, plan, i, st.params.text(name)));
    std::vector<ImageType> types;
    for (int s : ps.reads) {
      const PixelFormat f = s < static_cast<int>(inputs.size())
                                ? inputs[static_cast<size_t>(s)].type.fmt
                                : plan.steps[static_cast<size_t>(s) - inputs.size()].out;
      types.push_back({f, slot_name(p, s, inputs)});
    }
    try {
      ps.out = check_op(op, types, st.params);
    } catch (const ParamError& e) {
      throw ParamError(st.where(e.what()));
    } catch (const InputError& e) {
      throw InputError(st.where(e.what()));
    }
    ps.image = op.category != OpCategory::kReduction;
    ps.stores_input = op.reads_input_twice && op.reads_input_twice(st.params);
    ps.barrier = op.category == OpCategory::kWholeImage || op.category == OpCategory::kReduction || ps.stores_input;
    plan.steps.push_back(ps);
    if (ps.image) last_image = plan.slot_of_step(static_cast<int>(i));
  }
  if (writes_image && !plan.steps.back().image)
    throw InputError(p.steps.back().label() + " is the last step and makes numbers, not an image to write");
  plan.output_slot = plan.slot_of_step(static_cast<int>(p.steps.size()) - 1);
  mark_shared(plan);
  return plan;
}

int find_result(const Pipeline& p, const PipelinePlan& plan, const std::string& name) {
  const int found = step_named(p, name);
  if (found < 0)
    throw InputError("--keep " + name +
                     ": no step has that name or number (results: " + known_names(p, plan, p.steps.size()) + ")");
  if (!plan.steps[static_cast<size_t>(found)].image)
    throw InputError("--keep " + name + ": " + p.steps[static_cast<size_t>(found)].label() + " makes no image");
  return plan.slot_of_step(found);
}

}  // namespace tw
