// The registry is the one declaration of every op: the docs' options tables
// must be exactly what it says (`tilewave ops --markdown` prints them), and
// every op must be documented somewhere in docs/ops/.
#include <dirent.h>
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <sstream>

#include "engine/op_registry.hpp"
#include "tests/support/test_support.hpp"

namespace tw {
namespace {

std::map<std::string, std::string> doc_tables() {
  std::map<std::string, std::string> tables;  // op -> the table between its markers
  const std::string dir = test::source_dir() + "/docs/ops";
  DIR* d = opendir(dir.c_str());
  if (!d) return tables;
  while (const dirent* e = readdir(d)) {
    const std::string name = e->d_name;
    if (name.size() < 4 || name.compare(name.size() - 3, 3, ".md") != 0) continue;
    std::ifstream f(dir + "/" + name);
    std::stringstream ss;
    ss << f.rdbuf();
    const std::string text = ss.str();
    const std::string open = "<!-- options: ", close = "<!-- /options -->";
    for (size_t at = text.find(open); at != std::string::npos; at = text.find(open, at + 1)) {
      const size_t name_end = text.find(" -->\n", at);
      const size_t end = text.find(close, at);
      if (name_end == std::string::npos || end == std::string::npos) break;
      tables[text.substr(at + open.size(), name_end - at - open.size())] =
          text.substr(name_end + 5, end - name_end - 5);
    }
  }
  closedir(d);
  return tables;
}

TEST(OpDocs, OptionsTablesAreTheRegistrys) {
  const auto tables = doc_tables();
  for (const auto& op : op_registry().all()) {
    const auto it = tables.find(op->name);
    if (it == tables.end()) {
      ADD_FAILURE() << "docs/ops/ has no options table for '" << op->name << "'; add:\n<!-- options: " << op->name
                    << " -->\n"
                    << params_markdown(*op) << "<!-- /options -->";
      continue;
    }
    EXPECT_EQ(it->second, params_markdown(*op)) << "docs/ops/ table of '" << op->name << "' differs from the registry "
                                                << "(tilewave ops --markdown prints it)";
  }
  for (const auto& [name, table] : tables)
    EXPECT_NE(op_registry().find(name), nullptr) << "docs name an op '" << name << "' that is not registered";
}

TEST(OpDocs, EveryOpHasHelpAndAUniqueCommand) {
  std::map<std::string, std::string> seen;
  for (const auto& op : op_registry().all()) {
    std::string cmd;
    for (const auto& w : op->command) cmd += w + " ";
    EXPECT_TRUE(seen.emplace(cmd, op->name).second) << cmd << "is two ops' command";
    EXPECT_FALSE(op->summary.empty()) << op->name;
    EXPECT_FALSE(op->takes.empty()) << op->name;
    for (const auto& p : op->params) EXPECT_FALSE(p.help.empty()) << op->name << " --" << p.name;
    // --help works for every op, through the CLI.
    std::vector<std::string> args = op->command;
    args.push_back("--help");
    const auto r = test::run_cli(args);
    EXPECT_EQ(r.exit_code, 0) << op->name << ": " << r.err;
    EXPECT_NE(r.out.find("usage: tilewave " + cmd.substr(0, cmd.size() - 1)), std::string::npos) << r.out;
  }
}

}  // namespace
}  // namespace tw
