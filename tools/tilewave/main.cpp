// tilewave: one binary, one subcommand per job; each is a thin layer over the
// library. Errors end as one line on stderr: exit 1 (2 for usage mistakes).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <new>
#include <string>
#include <utility>
#include <vector>

#include "engine/cuda/device.hpp"
#include "engine/trace.hpp"
#include "engine/warnings.hpp"
#include "tools/tilewave/args.hpp"
#include "tools/tilewave/commands.hpp"
#include "tools/tilewave/slide_ranks.hpp"

namespace {

// The commands: the fixed ones, then every registered op's (from its entry).
std::string usage() {
  std::string u =
      "usage: tilewave COMMAND [ARGS] [OPTIONS]\n"
      "\n"
      "commands:\n"
      "  pyramid [INPUT OUTPUT.tif]  write a tiled pyramidal BigTIFF of INPUT (with no\n"
      "                              arguments: of the built-in sample slide)\n"
      "  info INPUT                  print levels, tiles, compression, microns per pixel,\n"
      "                              vendor and associated images\n"
      "  features LABELS OUT.csv     per-object measurements of a label image (.csv, or\n"
      "                              .geojson for QuPath)\n"
      "  run INPUT OUT STEP...       a chain of the ops below in one streaming pass\n"
      "                              (each STEP one argument: 'filter gaussian --sigma 2')\n"
      "  nuclei SLIDE OUTDIR         segment a slide's nuclei: labels, CSV and GeoJSON\n"
      "                              features, an overlay (docs/nuclei.md)\n"
      "  batch LIST OUTDIR [STEPS]   every slide of a list as pyramid or run would write it;\n"
      "                              under mpirun over the ranks (docs/batch.md)\n"
      "  region SLIDE OUT.png        one rectangle of a level (--level, --rect X,Y,W,H)\n"
      "  thumbnail SLIDE OUT.png     the whole slide scaled to --size N\n"
      "  serve SLIDE [SLIDE ...]     serve slides as Deep Zoom over HTTP, with a viewer\n"
      "                              page (docs/serve.md)\n";
  // Families (`filter OP`, `math OP`): one line each, naming their ops.
  std::vector<std::pair<std::string, std::string>> families;
  for (const auto& op : tw::op_registry().all()) {
    if (op->command.size() == 2) {
      auto it =
          std::find_if(families.begin(), families.end(), [&](const auto& f) { return f.first == op->command[0]; });
      if (it == families.end()) it = families.insert(families.end(), {op->command[0], ""});
      it->second += (it->second.empty() ? "" : ", ") + op->name;
      continue;
    }
    std::string left = "  " + op->command[0];
    for (const auto& in : op->inputs) left += " " + in;
    if (op->category != tw::OpCategory::kReduction) left += " OUT";
    if (left.size() < 30)
      left.resize(30, ' ');
    else
      left += "\n" + std::string(30, ' ');
    u += left + op->summary + "\n";
  }
  for (const auto& [word, names] : families) {
    std::string left = "  " + word + " OP ... OUT";
    left.resize(30, ' ');
    u += left + (word == "filter" ? "image ops: " : "ops: ") + names + "\n";
  }
  u += "  devices                     list the CPU and CUDA backends available\n"
       "  ops                         list the registered ops (--markdown: their options tables)\n"
       "\n"
       "INPUT is a TIFF/BigTIFF, a slide OpenSlide reads (SVS, NDPI, MRXS, SCN, ...),\n"
       "or synthetic:WxH[,seed=N][,gray][,16bit][,mpp=F] for a generated tissue-like slide.\n"
       "'tilewave COMMAND --help' lists a command's options.\n";
  return u;
}

}  // namespace

static int dispatch(int argc, char** argv) {
  using namespace tw::cli;
  if (argc < 2) {
    std::fputs(usage().c_str(), stderr);
    return 2;
  }
  const std::string cmd = argv[1];
  try {
    if (cmd == "--help" || cmd == "-h" || cmd == "help") {
      std::fputs(usage().c_str(), stdout);
      return 0;
    }
    if (cmd == "--version") {
      std::puts("tilewave 0.1.0");
      return 0;
    }
    if (cmd == "info") return cmd_info(argc, argv);
    if (cmd == "pyramid") return cmd_pyramid(argc, argv);
    if (cmd == "devices") return cmd_devices(argc, argv);
    if (cmd == "features") return cmd_features(argc, argv);
    if (is_family(cmd)) return cmd_family(cmd, argc, argv);
    if (cmd == "ops") return cmd_ops(argc, argv);
    if (cmd == "run") return cmd_run(argc, argv);
    if (cmd == "nuclei") return cmd_nuclei(argc, argv);
    if (cmd == "batch") return cmd_batch(argc, argv);
    if (cmd == "serve") return cmd_serve(argc, argv);
    if (cmd == "region") return cmd_region(argc, argv);
    if (cmd == "thumbnail") return cmd_thumbnail(argc, argv);
    if (const tw::OpDef* op = tw::op_registry().find_command({cmd})) return run_op_command(*op, argc, argv, 2);
    throw UsageError("unknown command '" + cmd + "' (see tilewave --help)");
  } catch (const tw::ParamError& e) {
    std::fprintf(stderr, "tilewave: error: %s\n", e.what());
    return 2;
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "tilewave: error: out of memory (try a smaller --memory or --tile)\n");
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tilewave: error: %s\n", e.what());
    return 1;
  }
}

int main(int argc, char** argv) {
  const int rc = dispatch(argc, argv);
  // A rank that failed while others may wait on it ends them all.
  if (rc != 0) tw::cli::end_slide_ranks_after_error();
  // Warnings are said when the command succeeded; a failed run's stderr is
  // its one error line.
  for (const std::string& w : tw::take_warnings())
    if (rc == 0 && tw::cli::is_lead_rank()) std::fprintf(stderr, "tilewave: warning: %s\n", w.c_str());
  tw::cuda_settle();
  if (tw::trace_enabled())
    tw::trace_record("exit", rc, std::chrono::steady_clock::now(), std::chrono::steady_clock::now());
  return rc;
}
