// tilewave.pyramid / run / nuclei: the CLI's own commands, called with the
// options the keywords name (tilewave/__init__.py turns sigma_um=0.3 into
// --sigma-um=0.3), so their checks, messages, outputs and --report are the
// CLI's. The report comes back as a dict; warnings as Python warnings.
#include <pybind11/stl.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>

#include "engine/memory.hpp"
#include "engine/warnings.hpp"
#include "tools/python/bindings.hpp"
#include "tools/python/common_options.hpp"
#include "tools/python/errors.hpp"
#include "tools/python/gil.hpp"
#include "tools/python/job_thread.hpp"
#include "tools/tilewave/commands.hpp"

namespace py = pybind11;

namespace tw::python {
namespace {

int dispatch(const std::string& command, int argc, char** argv) {
  if (command == "pyramid") return cli::cmd_pyramid(argc, argv);
  if (command == "run") return cli::cmd_run(argc, argv);
  if (command == "nuclei") return cli::cmd_nuclei(argc, argv);
  throw InternalError("no job '" + command + "'");
}

// A folder for the report when the caller asked for none; removed after.
class TempFolder {
 public:
  TempFolder() {
    const char* tmp = std::getenv("TMPDIR");
    std::string t = std::string(tmp && *tmp ? tmp : "/tmp") + "/tilewave-py-XXXXXX";
    if (!::mkdtemp(t.data())) throw InputError("cannot make a temporary folder in " + t);
    path_ = t;
  }
  ~TempFolder() {
    std::remove((path_ + "/report.json").c_str());
    ::rmdir(path_.c_str());
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// inputs: the job's input files, opened first so that a missing one is a
// FileNotFoundError (the CLI's message) rather than the command's ValueError.
py::object run_command(const std::string& command, const std::vector<std::string>& positional, Options options,
                       const py::object& progress, const std::vector<std::string>& inputs) {
  for (const auto& p : positional) require_text(p, command);
  {
    ReleaseGil nogil;
    for (const auto& in : inputs) open_for_python(in);
  }
  std::string report;
  for (const auto& [k, v] : options)
    if (k == "report") report = v;
  std::optional<TempFolder> tmp;
  if (report.empty()) {
    tmp.emplace();
    report = tmp->path() + "/report.json";
    options.push_back({"report", report});
  }
  std::vector<std::string> words = {"tilewave", command};
  for (const auto& w : option_words(options)) words.push_back(w);
  words.push_back("--");  // paths that start with '-' are still paths
  for (const auto& p : positional) words.push_back(p);

  take_warnings();  // an earlier call's, not this job's
  run_job([&] { with_argv(words, [&](int argc, char** argv) { return dispatch(command, argc, argv); }); }, progress);
  set_rss_target(0);  // the command aimed the process's memory at its --memory
  // Nor does an interpreter keep the job's freed big buffers for the next
  // one (a 16th of its --memory): they go back now.
  set_big_buffer_budget(0);
  std::cout.flush();
  std::fflush(stdout);
  py::module_ warnings = py::module_::import("warnings");
  for (const std::string& w : take_warnings())
    warnings.attr("warn")(w, py::module_::import("builtins").attr("UserWarning"), 2);

  std::ifstream f(report);
  std::stringstream text;
  text << f.rdbuf();
  if (!f) return py::dict();
  return py::module_::import("json").attr("loads")(text.str());
}

}  // namespace

void bind_jobs(py::module_& m) {
  m.def("_run_command", &run_command, py::arg("command"), py::arg("positional"), py::arg("options"),
        py::arg("progress"), py::arg("inputs"));
}

}  // namespace tw::python
