#include "engine/op_params.hpp"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace tw {
namespace {

std::string fmt_real(double d) {
  char b[32];
  std::snprintf(b, sizeof b, "%g", d);
  return b;
}

}  // namespace

int64_t parse_integer_param(const std::string& name, const std::string& v, int64_t lo, int64_t hi) {
  char* end = nullptr;
  errno = 0;
  const long long n = std::strtoll(v.c_str(), &end, 10);
  if (v.empty() || *end != 0 || errno == ERANGE) throw ParamError("--" + name + " '" + v + "' is not an integer");
  if (n < lo || n > hi)
    throw ParamError("--" + name + " " + v + " is out of range " + std::to_string(lo) + ".." + std::to_string(hi));
  return n;
}

double parse_real_param(const std::string& name, const std::string& v, double lo, double hi) {
  char* end = nullptr;
  errno = 0;
  const double d = std::strtod(v.c_str(), &end);
  if (v.empty() || *end != 0 || errno == ERANGE || !std::isfinite(d))
    throw ParamError("--" + name + " '" + v + "' is not a number");
  if (d < lo || d > hi)
    throw ParamError("--" + name + " " + v + " is out of range " + fmt_real(lo) + ".." + fmt_real(hi));
  return d;
}

ParamSpec ParamSpec::real(std::string name, std::string placeholder, double lo, double hi, std::string fallback,
                          std::string help) {
  ParamSpec s;
  s.name = std::move(name), s.kind = Kind::kReal, s.placeholder = std::move(placeholder), s.lo = lo, s.hi = hi;
  s.fallback = std::move(fallback), s.help = std::move(help);
  return s;
}

ParamSpec ParamSpec::integer(std::string name, std::string placeholder, double lo, double hi, std::string fallback,
                             std::string help) {
  ParamSpec s = real(std::move(name), std::move(placeholder), lo, hi, std::move(fallback), std::move(help));
  s.kind = Kind::kInteger;
  return s;
}

ParamSpec ParamSpec::flag(std::string name, std::string help) {
  ParamSpec s;
  s.name = std::move(name), s.kind = Kind::kFlag, s.help = std::move(help);
  return s;
}

ParamSpec ParamSpec::choice(std::string name, std::string placeholder, std::vector<std::string> choices,
                            std::string fallback, std::string help) {
  ParamSpec s;
  s.name = std::move(name), s.kind = Kind::kChoice, s.placeholder = std::move(placeholder);
  s.choices = std::move(choices), s.fallback = std::move(fallback), s.help = std::move(help);
  return s;
}

ParamSpec ParamSpec::text(std::string name, std::string placeholder, std::string fallback, std::string help) {
  ParamSpec s;
  s.name = std::move(name), s.kind = Kind::kText, s.placeholder = std::move(placeholder);
  s.fallback = std::move(fallback), s.help = std::move(help);
  return s;
}

const ParamSpec& OpParams::spec(const std::string& name) const {
  if (specs_)
    for (const auto& s : *specs_)
      if (s.name == name) return s;
  throw ParamError("unknown option --" + name + " for '" + op_ + "'");
}

void OpParams::set(const std::string& name, const std::string& value) {
  const ParamSpec& s = spec(name);
  if (s.kind == ParamSpec::Kind::kFlag && value != "1") throw ParamError("option --" + name + " takes no value");
  values_[name] = value;
}

std::string OpParams::raw(const ParamSpec& s) const {
  const auto it = values_.find(s.name);
  if (it != values_.end()) return it->second;
  if (s.required || s.fallback.empty())
    throw ParamError(op_ + " needs --" + s.name + (s.placeholder.empty() ? "" : " " + s.placeholder));
  return s.fallback;
}

double OpParams::real(const std::string& name) const {
  const ParamSpec& s = spec(name);
  return parse_real_param(name, raw(s), s.lo, s.hi);
}

int64_t OpParams::integer(const std::string& name) const {
  const ParamSpec& s = spec(name);
  return parse_integer_param(name, raw(s), static_cast<int64_t>(s.lo), static_cast<int64_t>(s.hi));
}

int64_t OpParams::integer_in(const std::string& name, int64_t lo, int64_t hi) const {
  return parse_integer_param(name, raw(spec(name)), lo, hi);
}

double OpParams::real_in(const std::string& name, double lo, double hi) const {
  return parse_real_param(name, raw(spec(name)), lo, hi);
}

std::string OpParams::choice(const std::string& name) const {
  const ParamSpec& s = spec(name);
  const std::string v = raw(s);
  for (const auto& c : s.choices)
    if (c == v) return v;
  std::string all;
  for (size_t i = 0; i < s.choices.size(); ++i)
    all += (i == 0 ? "" : i + 1 == s.choices.size() ? " or " : ", ") + s.choices[i];
  throw ParamError("--" + name + " " + v + ": expected " + all);
}

std::string OpParams::text(const std::string& name) const {
  return raw(spec(name));
}

void OpParams::check_all() const {
  if (!specs_) return;
  for (const auto& s : *specs_) {
    if (!has(s.name) && !s.required) continue;
    switch (s.kind) {
      case ParamSpec::Kind::kReal:
        real(s.name);
        break;
      case ParamSpec::Kind::kInteger:
        integer(s.name);
        break;
      case ParamSpec::Kind::kChoice:
        choice(s.name);
        break;
      case ParamSpec::Kind::kText:
        text(s.name);
        break;
      case ParamSpec::Kind::kFlag:
        break;
    }
  }
}

}  // namespace tw
