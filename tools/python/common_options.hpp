#pragma once
// The options every Python entry point shares with the CLI (--device,
// --memory, --tile, --threads), parsed by the CLI's own parser so that a bad
// value gives the CLI's message.
#include <string>
#include <utility>
#include <vector>

#include "tools/tilewave/args.hpp"

namespace tw::python {

// argv-style words for the CLI's parser ("--name=value"; a flag "--name").
using Options = std::vector<std::pair<std::string, std::string>>;
std::vector<std::string> option_words(const Options& opts);

// parse_common over `opts` as the command `command` would see them.
cli::CommonOptions parse_common_options(const std::string& command, const Options& opts);

// Calls f(argc, argv) with `words` as a mutable argv.
template <class F>
auto with_argv(const std::vector<std::string>& words, F&& f) {
  std::vector<std::string> copy = words;
  std::vector<char*> argv;
  for (auto& w : copy) argv.push_back(w.data());
  argv.push_back(nullptr);
  return f(static_cast<int>(copy.size()), argv.data());
}

}  // namespace tw::python
