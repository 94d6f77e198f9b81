// tilewave: one binary, one subcommand per job; each is a thin layer over the
// library. Errors end as one line on stderr: exit 1 (2 for usage mistakes).
#include <chrono>
#include <cstdio>
#include <cstring>
#include <new>
#include <string>

#include "engine/cuda/device.hpp"
#include "engine/trace.hpp"
#include "engine/warnings.hpp"
#include "tools/tilewave/args.hpp"
#include "tools/tilewave/commands.hpp"

namespace {

constexpr const char* kUsage =
    "usage: tilewave COMMAND [ARGS] [OPTIONS]\n"
    "\n"
    "commands:\n"
    "  pyramid [INPUT OUTPUT.tif]  write a tiled pyramidal BigTIFF of INPUT (with no\n"
    "                              arguments: of the built-in sample slide)\n"
    "  info INPUT                  print levels, tiles, compression, microns per pixel,\n"
    "                              vendor and associated images\n"
    "  reconstruct MARKER MASK OUT morphological reconstruction (by dilation or erosion)\n"
    "  fill-holes INPUT OUT        fill holes (regions not connected to the border)\n"
    "  hdome INPUT OUT --h H       h-dome transform (reconstruction from INPUT - H)\n"
    "  edt INPUT OUT               exact Euclidean distance transform (float32)\n"
    "  filter OP INPUT OUT         gaussian, sobel, canny, brightness, contrast, threshold, invert, gray, hed\n"
    "  stats INPUT                 min, max, mean, histogram (JSON)\n"
    "  devices                     list the CPU and CUDA backends available\n"
    "\n"
    "INPUT is a TIFF/BigTIFF, a slide OpenSlide reads (SVS, NDPI, MRXS, SCN, ...),\n"
    "or synthetic:WxH[,seed=N][,gray][,16bit][,mpp=F] for a generated tissue-like slide.\n"
    "'tilewave COMMAND --help' lists a command's options.\n";

}  // namespace

static int dispatch(int argc, char** argv) {
  using namespace tw::cli;
  if (argc < 2) {
    std::fputs(kUsage, stderr);
    return 2;
  }
  const std::string cmd = argv[1];
  try {
    if (cmd == "--help" || cmd == "-h" || cmd == "help") {
      std::fputs(kUsage, stdout);
      return 0;
    }
    if (cmd == "--version") {
      std::puts("tilewave 0.1.0");
      return 0;
    }
    if (cmd == "info") return cmd_info(argc, argv);
    if (cmd == "pyramid") return cmd_pyramid(argc, argv);
    if (cmd == "devices") return cmd_devices(argc, argv);
    if (cmd == "reconstruct") return cmd_reconstruct(argc, argv);
    if (cmd == "fill-holes") return cmd_fill_holes(argc, argv);
    if (cmd == "hdome") return cmd_hdome(argc, argv);
    if (cmd == "edt") return cmd_edt(argc, argv);
    if (cmd == "filter") return cmd_filter(argc, argv);
    if (cmd == "stats") return cmd_stats(argc, argv);
    throw UsageError("unknown command '" + cmd + "' (see tilewave --help)");
  } catch (const UsageError& e) {
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
  // Warnings are said when the command succeeded; a failed run's stderr is
  // its one error line.
  for (const std::string& w : tw::take_warnings())
    if (rc == 0) std::fprintf(stderr, "tilewave: warning: %s\n", w.c_str());
  tw::cuda_settle();
  if (tw::trace_enabled()) tw::trace_record("exit", rc, std::chrono::steady_clock::now(), std::chrono::steady_clock::now());
  return rc;
}
