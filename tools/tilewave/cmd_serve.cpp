// `tilewave serve`: the front end of tools/serve/server.hpp — options, the
// one line saying where it listens, and shutdown on SIGINT/SIGTERM.
#include <malloc.h>
#include <pthread.h>
#include <signal.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <sstream>
#include <thread>

#include "tools/serve/server.hpp"
#include "tools/tilewave/args.hpp"
#include "tools/tilewave/commands.hpp"

#ifndef TW_VIEWER_DIR
#define TW_VIEWER_DIR "tools/viewer"
#endif

namespace tw::cli {
namespace {

std::array<uint8_t, 3> parse_rgb(const std::string& text) {
  std::array<int, 3> v{};
  char c1 = 0, c2 = 0, extra = 0;
  std::istringstream s(text);
  if (!(s >> v[0] >> c1 >> v[1] >> c2 >> v[2]) || c1 != ',' || c2 != ',' || (s >> extra) || v[0] < 0 || v[0] > 255 ||
      v[1] < 0 || v[1] > 255 || v[2] < 0 || v[2] > 255 || v[0] + v[1] + v[2] == 0)
    throw UsageError("--outline-color takes R,G,B with each 0..255, not black, not '" + text + "'");
  return {static_cast<uint8_t>(v[0]), static_cast<uint8_t>(v[1]), static_cast<uint8_t>(v[2])};
}

}  // namespace

int cmd_serve(int argc, char** argv) {
  Args a("serve", argc, argv, 2,
         {{"port", "N", "TCP port (default 8000; 0: any free port)"},
          {"bind", "ADDR", "address to listen on (default 127.0.0.1: this machine only)"},
          {"host", "ADDR", "the same as --bind"},
          {"overlay", "FILE",
           "outlines drawn over the slide: a GeoJSON file (.geojson/.json, e.g. tilewave nuclei's "
           "nuclei.geojson) or a u32 label image; the i-th --overlay goes with the i-th slide "
           "(default: the nuclei.geojson beside the slide, when there is one)"},
          {"memory", "SIZE",
           "tile cache, cache of levels made on the fly, readers and GeoJSON outlines (at most a "
           "quarter) (default 1G)"},
          {"threads", "N", "worker threads: concurrent requests and encodes (default: all cores)"},
          {"tile", "N", "Deep Zoom tile size (default 254)"},
          {"overlap", "N", "Deep Zoom tile overlap (default 1)"},
          {"compression", "C", "tile format the descriptors name: jpeg (default) or png; both are served"},
          {"quality", "Q", "JPEG quality 1..100 (default 90)"},
          {"outline-color", "R,G,B", "colour of the overlay's outlines (default 0,255,0)"},
          {"viewer", "DIR", "the viewer folder (default: tools/viewer of the source tree)"},
          {"help", "", "show this help"}});
  if (a.has("help")) {
    std::cout << "usage: tilewave serve SLIDE [SLIDE ...] [--port N] [--bind ADDR] [--overlay FILE]\n\n"
                 "Serves each SLIDE as Deep Zoom made on request from its own levels, with a viewer\n"
                 "page at / (docs/serve.md). Ctrl-C stops it.\n\n"
              << a.options_help();
    return 0;
  }
  const auto& specs = a.positional();
  if (specs.empty()) throw UsageError("serve needs at least one SLIDE (see tilewave serve --help)");
  const std::vector<std::string> overlays = a.all("overlay");
  if (overlays.size() > specs.size())
    throw UsageError("more --overlay images (" + std::to_string(overlays.size()) + ") than slides (" +
                     std::to_string(specs.size()) + ")");
  if (a.has("bind") && a.has("host")) throw UsageError("give --bind or --host, not both");
  serve::ServeOptions o;
  o.bind = a.has("host") ? a.str("host") : a.str("bind", o.bind);
  o.port = static_cast<int>(a.integer("port", 8000, 0, 65535));
  o.memory = a.bytes("memory", o.memory);
  if (o.memory < (size_t{16} << 20)) throw UsageError("--memory must be at least 16M for serve");
  const unsigned cores = std::thread::hardware_concurrency();
  o.threads = static_cast<int>(a.integer("threads", cores ? cores : 4, 1, 1024));
  o.tile = a.integer("tile", 254, 1, 8192);
  o.overlap = a.integer("overlap", 1, 0, 64);
  if (o.overlap * 2 >= o.tile) throw UsageError("--overlap must be less than half the --tile");
  o.format = serve::parse_tile_format(a.str("compression", "jpeg"));
  o.quality = static_cast<int>(a.integer("quality", 90, 1, 100));
  if (a.has("outline-color")) o.outline = parse_rgb(a.str("outline-color"));
  o.viewer_dir = a.str("viewer", TW_VIEWER_DIR);

  // The signals are taken by one thread (sigwait), blocked in every other —
  // the workers inherit the mask — so that stopping runs as ordinary code.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  signal(SIGPIPE, SIG_IGN);  // a client gone mid-response is that request's end

  // Every tile allocates and frees a few buffers of 64 KiB to a few MiB on
  // each worker thread. glibc raises its mmap threshold to the largest block
  // freed, after which such buffers come from per-thread heaps that keep
  // their freed pages: the server's memory grew to 130 MB on a 16 MB
  // --memory (ServeCli.MemoryBoundedOnASlideLargerThanTheBudget). A fixed
  // threshold (which turns the adjustment off) hands them back on free.
  mallopt(M_MMAP_THRESHOLD, 128 * 1024);

  serve::TileServer server(specs, overlays, o);
  const int port = server.bind();
  std::printf("tilewave: serving %zu slide%s on http://%s:%d/\n", server.slides().size(),
              server.slides().size() == 1 ? "" : "s", o.bind.c_str(), port);
  if (!server.viewer_installed())
    std::printf("tilewave: note: no viewer page (OpenSeadragon is not installed in %s: run tools/install-deps.sh)\n",
                o.viewer_dir.c_str());
  std::fflush(stdout);

  std::atomic<bool> finished{false}, signalled{false};
  std::thread stopper([&] {
    int sig = 0;
    sigwait(&stop_signals, &sig);
    signalled = true;
    // stop() ends only a running server: wait for run() to have started.
    while (!finished && !server.running()) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    if (!finished) server.stop();
  });
  auto end_stopper = [&] {
    finished = true;
    // Wake the stopper if the server ended without a signal (it cannot have
    // exited before setting `signalled`).
    if (!signalled) pthread_kill(stopper.native_handle(), SIGTERM);
    stopper.join();
  };
  try {
    server.run();
  } catch (...) {
    end_stopper();
    throw;
  }
  end_stopper();
  std::printf("tilewave: stopped\n");
  return 0;
}

}  // namespace tw::cli
