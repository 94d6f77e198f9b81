#include "engine/trace.hpp"

#include <pthread.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <vector>

#include "engine/json.hpp"

namespace tw {
namespace {

struct Event {
  const char* name;
  int64_t arg;
  int64_t t0_us, t1_us;
  uint64_t thread;
};

struct Trace {
  std::string path;
  std::mutex mu;
  std::vector<Event> events;
  std::chrono::steady_clock::time_point origin = std::chrono::steady_clock::now();

  Trace() {
    const char* p = std::getenv("TW_TRACE");
    if (p && *p) path = p;
  }
  void write() {
    std::lock_guard<std::mutex> l(mu);
    if (path.empty()) return;
    std::FILE* f = std::fopen(path.c_str(), "w");
    if (!f) {
      // At exit, after the CLI has said its warnings: straight to stderr.
      std::fprintf(stderr, "tilewave: warning: cannot write trace %s\n", path.c_str());
      return;
    }
    nlohmann::json all = nlohmann::json::array();
    for (const Event& e : events)
      all.push_back({{"name", e.name},
                     {"ph", "X"},
                     {"pid", 1},
                     {"tid", e.thread},
                     {"ts", e.t0_us},
                     {"dur", e.t1_us - e.t0_us},
                     {"args", {{"n", e.arg}}}});
    const std::string text = dump_json(all) + "\n";
    std::fwrite(text.data(), 1, text.size(), f);
    std::fclose(f);
    path.clear();
  }
};

Trace& trace() {
  static Trace& t = *new Trace;  // never destroyed: threads may trace while exit() runs
  return t;
}

const bool g_enabled = !trace().path.empty();

// Writes the trace when the process exits (the trace itself stays alive).
struct WriteAtExit {
  ~WriteAtExit() { trace().write(); }
} g_write_at_exit;

}  // namespace

bool trace_enabled() {
  return g_enabled;
}

void trace_record(const char* name, int64_t arg, std::chrono::steady_clock::time_point t0,
                  std::chrono::steady_clock::time_point t1) {
  Trace& t = trace();
  auto us = [&](std::chrono::steady_clock::time_point x) {
    return std::chrono::duration_cast<std::chrono::microseconds>(x - t.origin).count();
  };
  // Small integers for threads keep the viewer's rows readable.
  static thread_local uint64_t id = [] {
    static std::atomic<uint64_t> next{1};
    return next++;
  }();
  std::lock_guard<std::mutex> l(t.mu);
  t.events.push_back({name, arg, us(t0), us(t1), id});
}

}  // namespace tw
