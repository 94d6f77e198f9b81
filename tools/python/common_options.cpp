#include "tools/python/common_options.hpp"

#include "engine/memory.hpp"
#include "tools/python/errors.hpp"

namespace tw::python {

std::vector<std::string> option_words(const Options& opts) {
  std::vector<std::string> w;
  for (const auto& [name, value] : opts) {
    require_text(value, name);
    w.push_back(value.empty() ? "--" + name : "--" + name + "=" + value);
  }
  return w;
}

cli::CommonOptions parse_common_options(const std::string& command, const Options& opts) {
  return with_argv(option_words(opts), [&](int argc, char** argv) {
    const cli::Args a(command, argc, argv, 0, cli::common_option_specs());
    cli::CommonOptions o = cli::parse_common(a);
    // parse_common aims the process's resident memory at --memory (heap
    // trimmed above it): a command's own process, not an interpreter that
    // holds the caller's arrays. An op call leaves that alone.
    set_rss_target(0);
    return o;
  });
}

}  // namespace tw::python
