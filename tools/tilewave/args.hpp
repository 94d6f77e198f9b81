#pragma once
// Command-line parsing shared by every subcommand: positionals, options
// (--name value, --name=value, --flag), and the options common to all
// commands (--tile, --memory, --threads, --device, --report).
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "engine/backend.hpp"
#include "engine/error.hpp"
#include "engine/op_params.hpp"

namespace tw::cli {

// A mistake in the command line itself: exit status 2.
class UsageError : public ParamError {
 public:
  using ParamError::ParamError;
};

struct OptionSpec {
  std::string name;   // without the leading "--"
  std::string value;  // placeholder ("N", "FILE"); empty for a flag
  std::string help;
};

class Args {
 public:
  Args(const std::string& command, int argc, char** argv, int first, std::vector<OptionSpec> specs);

  const std::vector<std::string>& positional() const { return positional_; }
  bool has(const std::string& name) const { return values_.count(name) != 0; }
  std::string str(const std::string& name, const std::string& fallback = "") const;
  // Every value of an option that may be given more than once (--keep), in order.
  std::vector<std::string> all(const std::string& name) const;
  int64_t integer(const std::string& name, int64_t fallback, int64_t lo, int64_t hi) const;
  double real(const std::string& name, double fallback, double lo, double hi) const;
  size_t bytes(const std::string& name, size_t fallback) const;
  const std::string& command() const { return command_; }
  std::string options_help() const;

 private:
  std::string command_;
  std::vector<OptionSpec> specs_;
  std::vector<std::string> positional_;
  std::map<std::string, std::string> values_;
  std::map<std::string, std::vector<std::string>> all_values_;
};

struct CommonOptions {
  int64_t tile = 256;
  size_t memory = size_t{1} << 30;
  int threads = 0;        // 0: all cores
  Backend backend;        // --device: auto (the default), cpu, cuda, cuda:N
  size_t gpu_memory = 0;  // --gpu-memory; 0: half the device's free memory
  std::string report;     // --report FILE.json
};

std::vector<OptionSpec> common_option_specs();
// defer_device: a CUDA choice may come back pending (Backend::pending), for
// jobs that start on the CPU while CUDA starts up.
CommonOptions parse_common(const Args& a, bool defer_device = false);

}  // namespace tw::cli
