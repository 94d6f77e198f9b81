#pragma once
// Optional timeline of a run, for finding where a pipeline waits: with
// TW_TRACE=FILE in the environment, spans recorded here are written to FILE
// at exit in the Chrome trace format (open in chrome://tracing or Perfetto).
// Without it a span costs one branch.
#include <chrono>
#include <cstdint>

namespace tw {

bool trace_enabled();
// name must be a string literal (kept by pointer).
void trace_record(const char* name, int64_t arg, std::chrono::steady_clock::time_point t0,
                  std::chrono::steady_clock::time_point t1);

class TraceSpan {
 public:
  TraceSpan(const char* name, int64_t arg) : name_(name), arg_(arg) {
    if (trace_enabled()) t0_ = std::chrono::steady_clock::now();
  }
  ~TraceSpan() {
    if (trace_enabled()) trace_record(name_, arg_, t0_, std::chrono::steady_clock::now());
  }
  TraceSpan(const TraceSpan&) = delete;
  TraceSpan& operator=(const TraceSpan&) = delete;

 private:
  const char* name_;
  int64_t arg_;
  std::chrono::steady_clock::time_point t0_;
};

}  // namespace tw
