#pragma once
// The op registry: every user-facing op declared once — name, category,
// parameters (engine/op_params.hpp), the pixel types it takes and makes, its
// halo, and how it runs on a context. The command line's commands and their
// --help, the docs' option tables (checked by a test), pipeline steps and the
// Python bindings all read these entries; nothing else lists the ops.
//
// Registration: each op's folder has a `register_<op>(OpRegistry&)` and the
// one list in jobs/all_ops.cpp calls it (docs/ops/writing-an-op.md).
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
};

struct OpDef {
  std::string name;                  // "gaussian", "fill-holes"
  std::vector<std::string> command;  // the CLI's words: {"filter", "gaussian"}, {"edt"}
  OpCategory category = OpCategory::kPixel;
  std::string summary;                          // one line, for lists
  std::string usage;                            // the options part of the usage line ("--sigma S")
  std::string help;                             // the paragraph of --help and of the docs
  std::vector<std::string> inputs = {"INPUT"};  // the image arguments, in order
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
