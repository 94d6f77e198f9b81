#pragma once
// mpirun for the CLI tests of MPI features (batches, a slide split over
// ranks): whether it can run here, and a run as CI runs it.
#include <string>
#include <vector>

#include "tests/support/test_support.hpp"

namespace tw::test {

inline bool mpi_ready(std::string* why) {
  if (kSanitizerBuild) return *why = "Open MPI's own allocations fail LeakSanitizer", false;
  if (run({"bash", "-c", "command -v mpirun"}).exit_code != 0) return *why = "no mpirun", false;
  if (run_cli({"batch", "--help"}).out.find("runs batches over MPI ranks") == std::string::npos)
    return *why = "this build has no MPI", false;
  return true;
}

// As root where CI is root, more ranks than cores.
inline RunResult mpirun(int np, const std::vector<std::string>& args) {
  std::vector<std::string> c = {"mpirun", "--oversubscribe", "-np", std::to_string(np), cli_path()};
  c.insert(c.end(), args.begin(), args.end());
  RunOptions o;
  o.env = {{"OMPI_ALLOW_RUN_AS_ROOT", "1"},
           {"OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1"},
           {"OMPI_MCA_rmaps_base_oversubscribe", "1"}};
  return run(c, o);
}

}  // namespace tw::test
