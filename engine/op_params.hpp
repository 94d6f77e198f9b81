#pragma once
// Typed parameters of an op, declared once (name, kind, range, default,
// help) and read the same way from every front end: the command line's
// --name value options, a pipeline step's text, Python keywords. Values are
// kept as the user wrote them and checked when read, so every front end
// gives the same one-line message for a bad value.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "engine/error.hpp"

namespace tw {

// A value the user gave does not fit its parameter (the command line exits
// with status 2 for it, as for any other usage mistake).
class ParamError : public InputError {
 public:
  using InputError::InputError;
};

struct ParamSpec {
  enum class Kind { kReal, kInteger, kFlag, kChoice, kText };
  std::string name;  // without "--"
  Kind kind = Kind::kReal;
  std::string placeholder;  // "S", "N"; empty for a flag
  std::string help;
  double lo = 0, hi = 0;             // kReal, kInteger: the accepted range
  std::string fallback;              // the default as text; empty: none (see required)
  bool required = false;             // "OP needs --NAME"
  std::vector<std::string> choices;  // kChoice

  static ParamSpec real(std::string name, std::string placeholder, double lo, double hi, std::string fallback,
                        std::string help);
  static ParamSpec integer(std::string name, std::string placeholder, double lo, double hi, std::string fallback,
                           std::string help);
  static ParamSpec flag(std::string name, std::string help);
  static ParamSpec choice(std::string name, std::string placeholder, std::vector<std::string> choices,
                          std::string fallback, std::string help);
  static ParamSpec text(std::string name, std::string placeholder, std::string fallback, std::string help);
  ParamSpec& needed() {
    required = true;
    return *this;
  }
};

class OpParams {
 public:
  OpParams() = default;
  // `op` names the op in messages ("gaussian needs --sigma S").
  OpParams(std::string op, const std::vector<ParamSpec>* specs) : op_(std::move(op)), specs_(specs) {}

  // Sets a value as written (throws ParamError for an unknown name, or a
  // value given to a flag). Flags are set with value "1".
  void set(const std::string& name, const std::string& value);
  bool has(const std::string& name) const { return values_.count(name) != 0; }
  const std::map<std::string, std::string>& given() const { return values_; }

  // Typed reads: the given value, else the default; ParamError for a value
  // out of range or not a number, or a required one missing.
  double real(const std::string& name) const;
  int64_t integer(const std::string& name) const;
  bool flag(const std::string& name) const { return has(name); }
  std::string choice(const std::string& name) const;
  std::string text(const std::string& name) const;
  // The same reads with a range narrower than the declared one (one that
  // depends on the input, e.g. h-dome's height on the pixel type).
  int64_t integer_in(const std::string& name, int64_t lo, int64_t hi) const;
  double real_in(const std::string& name, double lo, double hi) const;

  // Checks every given value and every required one.
  void check_all() const;
  const std::string& op() const { return op_; }

 private:
  const ParamSpec& spec(const std::string& name) const;
  std::string raw(const ParamSpec& s) const;  // given or default; ParamError when required and absent
  std::string op_;
  const std::vector<ParamSpec>* specs_ = nullptr;
  std::map<std::string, std::string> values_;
};

// The same checks, for the front ends' own options (--tile, --quality).
int64_t parse_integer_param(const std::string& name, const std::string& value, int64_t lo, int64_t hi);
double parse_real_param(const std::string& name, const std::string& value, double lo, double hi);

}  // namespace tw
