// fuzz_specs: the small text parsers. The input is split at NUL bytes; the
// first piece goes through every one-string parser (synthetic slide specs,
// byte sizes, codec, subsampling, reader, border, device, reconstruction
// method), the whole list through the CLI's argument parser as an argv, and
// its options through the getters the commands use, and through a
// registered op's parameters. InputError (UsageError
// is one) is the expected outcome; a parser that accepts a value must give a
// usable one.
#include <cmath>

#include "engine/backend.hpp"
#include "engine/border.hpp"
#include "engine/codec_kind.hpp"
#include "engine/json.hpp"
#include "engine/memory.hpp"
#include "engine/op_registry.hpp"
#include "io/open_source.hpp"
#include "io/synthetic/synthetic_source.hpp"
#include "jobs/op_runner.hpp"
#include "kernels/reconstruct/reconstruct.hpp"
#include "tests/fuzz/fuzz_support.hpp"
#include "tools/tilewave/args.hpp"

namespace {

using namespace tw;
using fuzz::finding;

template <class F>
void expect_input_error(F&& f) {
  try {
    f();
  } catch (const InputError& e) {
    fuzz::expected(e);
  }
}

void synthetic(const std::string& s) {
  const SyntheticSpec spec = parse_synthetic_spec(s);
  if (spec.width <= 0 || spec.height <= 0 || !(spec.mpp > 0)) finding("synthetic spec accepted an empty size or mpp");
  // The source accepts every spec the parser does (it validates again), and
  // renders anywhere in its range.
  const SyntheticSource src(spec);
  const LevelInfo& l = src.level(0);
  const Rect corners[] = {Rect(0, 0, 4, 4), Rect(l.width - 4, l.height - 4, 4, 4),
                          Rect(l.width / 3, l.height / 2, 3, 5)};
  for (const Rect& r : corners) (void)src.read(0, r);
}

void byte_size(const std::string& s) {
  const size_t n = parse_byte_size(s);
  if (n == 0) finding("parse_byte_size accepted 0 bytes");
  if (format_bytes(n).empty()) finding("format_bytes gave nothing");
}

// The options of every command (their Args specs), as one list.
std::vector<cli::OptionSpec> all_specs() {
  std::vector<cli::OptionSpec> s = cli::common_option_specs();
  const char* valued[] = {"compression", "quality",      "subsampling", "level",   "min-size", "gpu-jpeg",
                          "sigma",       "threshold",    "low",         "high",    "variant",  "variance",
                          "add",         "factor",       "center",      "value",   "reader",   "h",
                          "method",      "connectivity", "border",      "json-out"};
  const char* flags[] = {"no-predictor", "otsu", "recompress", "json"};
  for (const char* n : valued) s.push_back({n, "V", ""});
  for (const char* n : flags) s.push_back({n, "", ""});
  return s;
}

void command_line(const std::vector<std::string>& pieces) {
  std::vector<std::string> argv_s = {"tilewave", "fuzz"};
  argv_s.insert(argv_s.end(), pieces.begin(), pieces.end());
  std::vector<char*> argv;
  for (auto& a : argv_s) argv.push_back(a.data());
  argv.push_back(nullptr);
  static const std::vector<cli::OptionSpec> specs = all_specs();
  const cli::Args a("fuzz", static_cast<int>(argv_s.size()), argv.data(), 2, specs);
  if (a.options_help().empty()) finding("no help");
  // What the commands ask of it, each on its own (one bad option must not
  // hide the parsing of the others).
  expect_input_error([&] {
    const cli::CommonOptions c = cli::parse_common(a);
    if (c.tile < 16 || c.tile % 16 || c.memory < (size_t{4} << 20))
      finding("parse_common accepted a bad tile or memory");
  });
  expect_input_error([&] { (void)a.integer("quality", 90, 1, 100); });
  expect_input_error([&] { (void)a.integer("min-size", 256, 1, int64_t{1} << 31); });
  expect_input_error([&] {
    const double d = a.real("sigma", 1, 1e-3, 20);
    if (!(d >= 1e-3 && d <= 20)) finding("Args::real out of its range");
  });
  expect_input_error([&] { (void)a.real("factor", 1, -1e6, 1e6); });
  expect_input_error([&] { (void)a.bytes("gpu-memory", 0); });
  expect_input_error([&] { (void)parse_codec(a.str("compression", "jpeg")); });
  expect_input_error([&] { (void)parse_subsampling(a.str("subsampling", "420")); });
  expect_input_error([&] { (void)parse_reader(a.str("reader", "auto")); });
  expect_input_error([&] { (void)parse_reconstruct_method(a.str("method", "dilation")); });
  expect_input_error([&] { (void)parse_border_mode(a.str("border", "mirror")); });
  // Any string (a path, a TIFF's description) goes into valid JSON.
  for (const auto& p : a.positional()) {
    try {
      (void)nlohmann::json::parse(dump_json(nlohmann::json(p)));
    } catch (const nlohmann::json::exception&) {
      finding("dump_json: not valid JSON");
    }
  }
}

// A registered op's options as every front end reads them: the first piece
// names the op, the next ones are NAME=VALUE; parameters, cross-rules and
// the type check on a pixel type picked from the input must either accept
// or refuse with a ParamError/InputError.
void op_params(const std::vector<std::string>& pieces, uint8_t pick) {
  const OpDef* op = op_registry().find(pieces[0]);
  if (!op) op = op_registry().all()[pick % op_registry().all().size()].get();
  OpParams params = op->params_for();
  for (size_t i = 1; i < pieces.size(); ++i) {
    const auto eq = pieces[i].find('=');
    params.set(pieces[i].substr(0, eq), eq == std::string::npos ? "1" : pieces[i].substr(eq + 1));
  }
  static const PixelFormat kFormats[] = {
      kGray8, kRgb8, {SampleType::kU16, 1}, {SampleType::kF32, 3}, {SampleType::kU8, 4}, {SampleType::kI32, 1}};
  std::vector<ImageType> in(op->inputs.size(), ImageType{kFormats[pick % 6], "fuzz"});
  check_op(*op, in, params);
  if (op->halo(params) < 0) finding("an op's halo is negative");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 4096) return -1;  // specs are short
  std::vector<std::string> pieces(1);
  for (size_t i = 0; i < size; ++i) {
    if (data[i] == 0)
      pieces.emplace_back();
    else
      pieces.back().push_back(static_cast<char>(data[i]));
  }
  const std::string& s = pieces.front();
  expect_input_error([&] { synthetic(s); });
  expect_input_error([&] { byte_size(s); });
  expect_input_error([&] { (void)parse_codec(s); });
  expect_input_error([&] { (void)parse_subsampling(s); });
  expect_input_error([&] { (void)parse_reader(s); });
  expect_input_error([&] { (void)parse_border_mode(s); });
  expect_input_error([&] { (void)parse_backend(s); });
  expect_input_error([&] { (void)parse_reconstruct_method(s); });
  expect_input_error([&] { command_line(pieces); });
  expect_input_error([&] { op_params(pieces, size ? data[size - 1] : 0); });
  return 0;
}
