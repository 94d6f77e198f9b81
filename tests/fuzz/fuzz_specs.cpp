// fuzz_specs: the small text parsers. The input is split at NUL bytes; the
// first piece goes through every one-string parser (synthetic slide specs,
// byte sizes, codec, subsampling, reader, border, device, reconstruction
// method), the whole list through the CLI's argument parser as an argv, and
// its options through the getters the commands use. InputError (UsageError
// is one) is the expected outcome; a parser that accepts a value must give a
// usable one.
#include <cmath>

#include "engine/backend.hpp"
#include "engine/border.hpp"
#include "engine/codec_kind.hpp"
#include "engine/memory.hpp"
#include "io/open_source.hpp"
#include "io/synthetic/synthetic_source.hpp"
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
  const char* valued[] = {"compression", "quality", "subsampling", "level",   "min-size", "gpu-jpeg",
                          "sigma",       "threshold", "low",       "high",    "variant",  "variance",
                          "add",         "factor",    "center",    "value",   "reader",   "h",
                          "method",      "connectivity", "border", "json-out"};
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
    if (c.tile < 16 || c.tile % 16 || c.memory < (size_t{4} << 20)) finding("parse_common accepted a bad tile or memory");
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
  for (const auto& p : a.positional()) {
    const std::string j = cli::json_escape(p);
    if (j.size() < 2 || j.front() != '"' || j.back() != '"') finding("json_escape: not a quoted string");
    for (unsigned char c : j)
      if (c < 0x20) finding("json_escape: a raw control character");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 4096) return -1;  // specs are short
  std::vector<std::string> pieces(1);
  for (size_t i = 0; i < size; ++i) {
    if (data[i] == 0) pieces.emplace_back();
    else pieces.back().push_back(static_cast<char>(data[i]));
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
  return 0;
}
