#pragma once
// The op registry: every user-facing op declared once — name, category,
// parameters (engine/op_params.hpp), the pixel types it takes and makes, its
// halo, and how it runs on a context. The command line's commands and their
// --help, the docs' option tables (checked by a test), pipeline steps and the
// Python bindings all read these entries; nothing else lists the ops.
//
// Registration: each op's folder has a `register_<op>(OpRegistry&)` and the
// one list in jobs/all_ops.cpp calls it (docs/ops/writing-an-op.md).
#include <algorithm>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "engine/exec_context.hpp"
#include "engine/op_params.hpp"
#include "engine/pixel.hpp"
#include "engine/tile_source.hpp"

namespace tw {

enum class OpCategory {
  kPixel,          // each output pixel from the same input pixel
  kNeighbourhood,  // ... from a window around it (the halo)
  kReduction,      // the whole image to numbers (a histogram, statistics)
  kWholeImage,     // needs the whole image at once: wavefront ops, the EDT
};
const char* category_name(OpCategory c);

// An input as an op's type check sees it: its pixel type, and a name for
// messages (the file, or the pipeline step that makes it).
struct ImageType {
  PixelFormat fmt;
  std::string name;
};

// What an op gives back: an image (a source computed on reads, or a store
// the op filled), numbers, or both.
struct OpResult {
  std::shared_ptr<const TileSource> image;
  nlohmann::json values = nlohmann::json::object();  // reductions' results, figures for the report
  std::vector<std::string> messages;                 // lines for the user ("Otsu threshold: 103")
  std::string description;                           // for the output file ("Tilewave filter gaussian")
  std::string summary;                               // how it went, for the "wrote ..." line
  // The image reads the inputs when it is read (a view of them): only where
  // ExecContext::inputs_held allowed it.
  bool reads_inputs = false;
};

struct OpDef {
  std::string name;                  // "gaussian", "fill-holes"
  std::vector<std::string> command;  // the CLI's words: {"filter", "gaussian"}, {"edt"}
  OpCategory category = OpCategory::kPixel;
  std::string summary;                          // one line, for lists
  std::string usage;                            // the options part of the usage line ("--sigma S")
  std::string help;                             // the paragraph of --help and of the docs
  std::vector<std::string> inputs = {"INPUT"};  // the image arguments, in order
  // Optional images given as options (`--mask MASK`): a file on the command
  // line; in a pipeline step a result's name or number, or `input`. Each is
  // also a text parameter of that name (OpRegistry::add declares it when the
  // op does not). run() and output_format() get them after `inputs`, in
  // this order: a null source, or an ImageType with an empty name, when not
  // given (optional_input_slots).
  std::vector<std::string> optional_inputs;
  std::vector<ParamSpec> params;
  std::string takes;     // the input pixel types, in words ("8-bit gray or RGB")
  bool lossless = true;  // results stored deflate by default (JPEG would change them)

  // Cross-parameter rules (ParamError), beyond each value's own range.
  std::function<void(const OpParams&)> validate;
  // Whether the op reads its whole input before its first output pixel and
  // then again (Otsu's threshold: the histogram, then the pixels). A
  // pipeline stores such an input once rather than computing it twice, and
  // counts the step as a barrier. Empty: no.
  std::function<bool(const OpParams&)> reads_input_twice;
  // Pixels of input needed around each output pixel (0 for pixel ops).
  std::function<int(const OpParams&)> halo;
  // The output's pixel type for these inputs, or InputError naming the op
  // and the input it cannot take.
  std::function<PixelFormat(const std::vector<ImageType>&, const OpParams&)> output_format;
  // Runs on the context (backend, budgets): inputs already type-checked,
  // their readers' memory already set apart (jobs/op_runner.hpp runs ops).
  std::function<OpResult(const std::vector<std::shared_ptr<const TileSource>>&, const OpParams&, ExecContext&)> run;

  OpParams params_for() const { return OpParams(name, &params); }
};

// The optional inputs given in these parameters, in the op's order.
std::vector<std::string> given_optional_inputs(const OpDef& op, const OpParams& p);

// `given` (the required inputs, then the given optional ones) with a
// placeholder (`absent`) where an optional input was not given: the vector
// run() and output_format() receive.
template <class T>
std::vector<T> optional_input_slots(const OpDef& op, const OpParams& p, std::vector<T> given, const T& absent) {
  size_t next = op.inputs.size();
  given.reserve(op.inputs.size() + op.optional_inputs.size());
  std::vector<T> out(given.begin(), given.begin() + static_cast<std::ptrdiff_t>(std::min(next, given.size())));
  for (const auto& name : op.optional_inputs)
    out.push_back(p.has(name) && next < given.size() ? given[next++] : absent);
  return out;
}

class OpRegistry {
 public:
  void add(OpDef op);  // InternalError for a name given twice
  const OpDef* find(const std::string& name) const;
  // The op whose command starts these words ({"filter", "gaussian"}).
  const OpDef* find_command(const std::vector<std::string>& words) const;
  const std::vector<std::unique_ptr<OpDef>>& all() const { return ops_; }

 private:
  std::vector<std::unique_ptr<OpDef>> ops_;
};

// The process's registry, filled on first use by register_all_ops()
// (jobs/all_ops.cpp).
const OpRegistry& op_registry();
void register_all_ops(OpRegistry& r);

// A markdown table of an op's parameters (for docs/ops/*.md; a test checks
// that the docs hold exactly these tables).
std::string params_markdown(const OpDef& op);

}  // namespace tw
