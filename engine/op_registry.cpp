#include "engine/op_registry.hpp"

#include <tbb/global_control.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <mutex>

namespace tw {

const char* category_name(OpCategory c) {
  switch (c) {
    case OpCategory::kPixel:
      return "pixel";
    case OpCategory::kNeighbourhood:
      return "neighbourhood";
    case OpCategory::kReduction:
      return "reduction";
    case OpCategory::kWholeImage:
      return "whole-image";
  }
  return "?";
}

void OpRegistry::add(OpDef op) {
  TW_ASSERT(!op.name.empty() && !op.command.empty() && op.run && op.output_format);
  TW_ASSERT(find(op.name) == nullptr);
  if (!op.halo) op.halo = [](const OpParams&) { return 0; };
  if (!op.validate) op.validate = [](const OpParams&) {};
  for (const auto& name : op.optional_inputs) {
    const bool declared =
        std::any_of(op.params.begin(), op.params.end(), [&](const ParamSpec& p) { return p.name == name; });
    if (!declared) {
      std::string upper = name;
      for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
      op.params.push_back(ParamSpec::text(name, upper, "", "optional image: a file; in a pipeline, a step or input"));
    }
  }
  ops_.push_back(std::make_unique<OpDef>(std::move(op)));
}

std::vector<std::string> given_optional_inputs(const OpDef& op, const OpParams& p) {
  std::vector<std::string> given;
  for (const auto& name : op.optional_inputs)
    if (p.has(name)) given.push_back(name);
  return given;
}

const OpDef* OpRegistry::find(const std::string& name) const {
  for (const auto& o : ops_)
    if (o->name == name) return o.get();
  return nullptr;
}

const OpDef* OpRegistry::find_command(const std::vector<std::string>& words) const {
  for (const auto& o : ops_) {
    if (o->command.size() > words.size()) continue;
    bool match = true;
    for (size_t i = 0; i < o->command.size() && match; ++i) match = o->command[i] == words[i];
    if (match) return o.get();
  }
  return nullptr;
}

const OpRegistry& op_registry() {
  // Never destroyed: threads still running at exit() may look ops up.
  static OpRegistry& r = *new OpRegistry;
  static std::once_flag once;
  std::call_once(once, [] { register_all_ops(r); });
  return r;
}

std::string params_markdown(const OpDef& op) {
  std::string s = "| option | range | default | what |\n| --- | --- | --- | --- |\n";
  for (const ParamSpec& p : op.params) {
    std::string range, def = p.required ? "required" : p.fallback.empty() ? "—" : p.fallback;
    switch (p.kind) {
      case ParamSpec::Kind::kReal:
      case ParamSpec::Kind::kInteger: {
        char b[64];
        std::snprintf(b, sizeof b, "%g .. %g", p.lo, p.hi);
        range = p.lo <= -1e300 && p.hi >= 1e300 ? "any number" : b;
        break;
      }
      case ParamSpec::Kind::kChoice:
        for (const auto& c : p.choices) range += (range.empty() ? "" : ", ") + c;
        break;
      case ParamSpec::Kind::kFlag:
        range = "flag", def = "off";
        break;
      case ParamSpec::Kind::kText:
        range = "text";
        break;
    }
    s += "| `--" + p.name + (p.placeholder.empty() ? "" : " " + p.placeholder) + "` | " + range + " | " + def + " | " +
         p.help + " |\n";
  }
  return s;
}

int ExecContext::thread_count() const {
  if (threads > 0) return threads;
  return static_cast<int>(tbb::global_control::active_value(tbb::global_control::max_allowed_parallelism));
}

std::string ExecContext::scratch_path() const {
  if (!scratch_near.empty()) return scratch_near;
  const char* tmp = std::getenv("TMPDIR");
  return std::string(tmp && *tmp ? tmp : "/tmp") + "/tilewave";
}

}  // namespace tw
