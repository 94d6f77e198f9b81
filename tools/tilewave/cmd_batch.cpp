// tilewave batch LIST OUTDIR [STEP ...]: every slide of a list as
// `tilewave pyramid` (no steps) or `tilewave run` (steps) would write it,
// one process or the ranks of an MPI job taking the slides largest first
// (docs/batch.md). Each slide runs through the very command a user would
// type, so a batch's output is byte-identical to the single commands'.
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "engine/backend.hpp"
#include "engine/cuda/device.hpp"
#include "engine/json.hpp"
#include "engine/output_file.hpp"
#include "engine/warnings.hpp"
#include "tools/tilewave/args.hpp"
#include "tools/tilewave/batch_list.hpp"
#include "tools/tilewave/batch_world.hpp"
#include "tools/tilewave/commands.hpp"
#include "tools/tilewave/output.hpp"
#include "tools/tilewave/slide_ranks.hpp"

namespace tw::cli {
namespace {

// Options of `pyramid` only: a batch with steps refuses them up front.
const std::set<std::string> kPyramidOnly = {"recompress", "no-associated", "reader"};
// The batch's own; every other option goes to each slide's command.
const std::set<std::string> kOwn = {"resume", "summary", "help"};

std::vector<OptionSpec> batch_specs() {
  std::vector<OptionSpec> s = {
      {"resume", "", "skip slides whose OUTDIR/NAME.tif exists (outputs appear only when complete)"},
      {"summary", "FILE", "the summary JSON (default OUTDIR/batch-summary.json)"},
      {"pipeline", "FILE", "the steps from FILE, one a line, as `tilewave run --pipeline`"},
      {"recompress", "", "as `tilewave pyramid` (batches without steps)"},
      {"no-associated", "", "as `tilewave pyramid` (batches without steps)"},
      {"reader", "R", "as `tilewave pyramid` (batches without steps)"},
  };
  for (auto& o : output_option_specs()) s.push_back(o);
  for (auto& o : common_option_specs()) s.push_back(o);
  return s;
}

constexpr const char* kHelp =
    "usage: tilewave batch LIST OUTDIR [STEP ...] [--resume] [--summary FILE] [OPTIONS]\n"
    "       mpirun -np N tilewave batch LIST OUTDIR [STEP ...] [OPTIONS]\n"
    "\n"
    "Writes OUTDIR/NAME.tif for every slide of LIST (one path a line, '#' comments):\n"
    "its pyramid as `tilewave pyramid` writes it, or with STEPs (or --pipeline) the\n"
    "chain's result as `tilewave run` writes it. NAME is the slide's file name without\n"
    "its extension. Slides go largest first; under mpirun every rank takes the next\n"
    "slide when it finishes one, and --device cuda gives each rank of a host its own\n"
    "GPU. A failing slide is reported and the others go on; the exit status is 1 if\n"
    "any failed. The summary JSON lists each slide's rank, host, seconds, outcome and\n"
    "its command's report. OPTIONS are those of `pyramid` or `run`, for every slide;\n"
    "--memory and --threads are per process (per rank).\n"
    "\noptions:\n";

// The options to pass on, rebuilt from what was given.
std::vector<std::string> forwarded_options(const Args& a, const std::vector<OptionSpec>& specs) {
  std::vector<std::string> out;
  for (const OptionSpec& s : specs) {
    if (kOwn.count(s.name) || !a.has(s.name)) continue;
    if (s.value.empty()) {
      out.push_back("--" + s.name);
      continue;
    }
    for (const std::string& v : a.all(s.name)) out.push_back("--" + s.name), out.push_back(v);
  }
  return out;
}

// True when it made the folder.
bool ensure_folder(const std::string& dir) {
  struct stat st {};
  if (::stat(dir.c_str(), &st) == 0) {
    if (!S_ISDIR(st.st_mode)) throw InputError("OUTDIR " + dir + " exists and is not a folder");
    return false;
  }
  if (::mkdir(dir.c_str(), 0777) != 0) throw InputError("cannot create OUTDIR " + dir + ": " + std::strerror(errno));
  return true;
}

std::string read_text(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// One slide through the command a user would run; its record for the summary.
nlohmann::json run_slide(const BatchSlide& s, const std::vector<std::string>& steps,
                         const std::vector<std::string>& options, const std::string& report_path, bool resume,
                         const BatchWorld& world) {
  nlohmann::json rec = {
      {"line", s.line}, {"input", s.input}, {"output", s.output}, {"rank", world.rank()}, {"host", world.host()}};
  struct stat st {};
  if (resume && ::stat(s.output.c_str(), &st) == 0 && S_ISREG(st.st_mode)) {
    rec["outcome"] = "skipped";
    rec["seconds"] = 0.0;
    return rec;
  }
  std::vector<std::string> words = {"tilewave", steps.empty() ? "pyramid" : "run", s.input, s.output};
  words.insert(words.end(), steps.begin(), steps.end());
  words.insert(words.end(), options.begin(), options.end());
  words.push_back("--report");
  words.push_back(report_path);
  std::vector<char*> argv;
  for (std::string& w : words) argv.push_back(w.data());
  argv.push_back(nullptr);
  const int argc = static_cast<int>(words.size());

  take_warnings();  // another slide's
  const auto t0 = std::chrono::steady_clock::now();
  int rc = 1;
  std::string error;
  try {
    rc = steps.empty() ? cmd_pyramid(argc, argv.data()) : cmd_run(argc, argv.data());
  } catch (const std::bad_alloc&) {
    error = "out of memory (try a smaller --memory or --tile)";
  } catch (const std::exception& e) {
    error = e.what();
  }
  rec["seconds"] = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  rec["outcome"] = error.empty() && rc == 0 ? "ok" : "failed";
  if (!error.empty()) rec["error"] = error;
  const std::vector<std::string> warnings = take_warnings();
  if (!warnings.empty()) rec["warnings"] = warnings;
  if (::access(report_path.c_str(), F_OK) == 0) {
    rec["report"] = nlohmann::json::parse(read_text(report_path), nullptr, /*allow_exceptions=*/false);
    ::unlink(report_path.c_str());
  }
  return rec;
}

}  // namespace

int cmd_batch(int argc, char** argv) {
  // A batch's ranks take whole slides; no slide is split over them.
  disable_slide_ranks();
  const std::vector<OptionSpec> specs = batch_specs();
  Args a("batch", argc, argv, 2, specs);
  if (a.has("help")) {
    std::cout << kHelp << a.options_help()
              << (batch_has_mpi() ? "\nMPI: this build runs batches over MPI ranks.\n"
                                  : "\nMPI: not in this build (batches run in one process).\n");
    return 0;
  }
  const auto& pos = a.positional();
  if (pos.size() < 2) throw UsageError("batch takes LIST OUTDIR [STEP ...] (see tilewave batch --help)");
  const std::string list = pos[0], outdir = pos[1];
  const std::vector<std::string> steps(pos.begin() + 2, pos.end());
  const bool chain = !steps.empty() || a.has("pipeline");
  for (const std::string& o : kPyramidOnly)
    if (chain && a.has(o)) throw UsageError("--" + o + " is an option of pyramids, not of a batch with steps");
  if (a.has("report")) throw UsageError("batch writes one summary for all slides: use --summary FILE, not --report");
  // The options are checked once here, as each slide's command will read
  // them. A CUDA device is only named here: CUDA starts in the background
  // while MPI starts (each about 0.2-0.3 s on the H200 host, one after the
  // other before), and is checked once the world is open.
  const CommonOptions common = parse_common(a, /*defer_device=*/true);
  std::vector<std::string> options = forwarded_options(a, specs);

  const std::unique_ptr<BatchWorld> world = open_batch_world();
  // Every rank fails alike (any() is collective) where one cannot use the
  // device: a rank leaving alone would leave the others waiting.
  std::string device_error;
  try {
    resolve_backend(common.backend);
  } catch (const std::exception& e) {
    device_error = e.what();
  }
  if (world->any(!device_error.empty()))
    throw InputError(device_error.empty() ? "--device " + a.str("device", "auto") + ": another rank cannot use it"
                                          : device_error);
  // Rank 0 makes OUTDIR; the others wait for it (any() is collective) and
  // fail alike when it could not.
  std::string setup_error;
  bool made = false;
  if (world->rank() == 0) try {
      made = ensure_folder(outdir);
    } catch (const std::exception& e) {
      setup_error = e.what();
    }
  if (world->any(!setup_error.empty()))
    throw InputError(setup_error.empty() ? "OUTDIR could not be made" : setup_error);
  std::vector<BatchSlide> slides;
  const std::string summary = a.str("summary", outdir + "/batch-summary.json");
  try {
    slides = read_batch_list(list, outdir);
    // Every rank checks (and fails) alike: a rank leaving alone would leave
    // the others waiting in a collective call.
    std::vector<std::string> inputs;
    for (const BatchSlide& s : slides) inputs.push_back(s.input);
    check_output_path(summary, inputs);
  } catch (...) {
    // A refused list leaves no folder behind that this run made (still
    // empty: nothing was written yet).
    if (made) ::rmdir(outdir.c_str());
    throw;
  }

  // Several ranks on a host with --device cuda: one GPU each, round robin.
  if (world->size() > 1 && a.str("device") == "cuda") {
    const size_t gpus = cuda_devices().size();
    if (gpus > 0)
      for (size_t i = 0; i + 1 < options.size(); ++i)
        if (options[i] == "--device")
          options[i + 1] = "cuda:" + std::to_string(static_cast<size_t>(world->local_rank()) % gpus);
  }

  nlohmann::json mine = nlohmann::json::array();
  bool failed = false;
  for (int64_t i = world->next(); i < static_cast<int64_t>(slides.size()); i = world->next()) {
    const BatchSlide& s = slides[static_cast<size_t>(i)];
    const std::string report = outdir + "/.tilewave-batch-report-" + std::to_string(world->rank()) + "-" +
                               std::to_string(::getpid()) + ".json";
    nlohmann::json rec = run_slide(s, steps, options, report, a.has("resume"), *world);
    const std::string outcome = rec["outcome"];
    if (outcome == "failed") {
      failed = true;
      std::fprintf(stderr, "tilewave: batch: %s failed: %s\n", s.input.c_str(),
                   rec.value("error", std::string("its command exited non-zero")).c_str());
    } else {
      std::printf("batch: %s %s (rank %d, %.2f s)\n", s.name.c_str(), outcome.c_str(), world->rank(),
                  rec["seconds"].get<double>());
    }
    std::fflush(stdout);
    mine.push_back(std::move(rec));
  }

  const std::vector<std::string> parts = world->gather(dump_json(mine));
  if (world->rank() == 0) {
    nlohmann::json all = nlohmann::json::array();
    for (const std::string& p : parts)
      for (auto& r : nlohmann::json::parse(p)) all.push_back(std::move(r));
    std::stable_sort(all.begin(), all.end(), [](const nlohmann::json& x, const nlohmann::json& y) {
      return x["line"].get<size_t>() < y["line"].get<size_t>();
    });
    int ok = 0, skipped = 0, bad = 0;
    for (const auto& r : all) {
      const std::string o = r["outcome"];
      (o == "ok" ? ok : o == "skipped" ? skipped : bad) += 1;
    }
    const nlohmann::json doc = {{"command", "batch"},     {"list", list}, {"outdir", outdir},
                                {"ranks", world->size()}, {"ok", ok},     {"skipped", skipped},
                                {"failed", bad},          {"slides", all}};
    write_small_file(summary, dump_json(doc, 2) + "\n");
    std::printf("batch: %zu slides on %d rank%s: %d written, %d skipped, %d failed; summary %s\n", all.size(),
                world->size(), world->size() == 1 ? "" : "s", ok, skipped, bad, summary.c_str());
  }
  return world->any(failed) ? 1 : 0;
}

}  // namespace tw::cli
