// ops: the registered ops (engine/op_registry.hpp) as a table, or with
// --markdown the options table of each op as docs/ops/*.md hold them (a
// test checks the docs against this).
#include <cstdio>
#include <iostream>

#include "engine/op_registry.hpp"
#include "tools/tilewave/args.hpp"
#include "tools/tilewave/commands.hpp"

namespace tw::cli {

int cmd_ops(int argc, char** argv) {
  Args a("ops", argc, argv, 2,
         {{"markdown", "", "print each op's options table in markdown, as docs/ops/ holds it"},
          {"help", "", "show this help"}});
  if (a.has("help")) {
    std::cout << "usage: tilewave ops [--markdown]\n\nThe registered ops: command, category, inputs, what they "
                 "take.\n\noptions:\n"
              << a.options_help();
    return 0;
  }
  if (!a.positional().empty()) throw UsageError("ops takes no arguments");
  for (const auto& op : op_registry().all()) {
    std::string cmd;
    for (const auto& w : op->command) cmd += (cmd.empty() ? "" : " ") + w;
    if (a.has("markdown")) {
      std::cout << "<!-- options: " << op->name << " -->\n" << params_markdown(*op) << "<!-- /options -->\n\n";
      continue;
    }
    std::string ins;
    for (const auto& in : op->inputs) ins += (ins.empty() ? "" : " ") + in;
    std::printf("%-22s %-14s %-12s %s\n", cmd.c_str(), category_name(op->category), ins.c_str(), op->takes.c_str());
  }
  return 0;
}

}  // namespace tw::cli
