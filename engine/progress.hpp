#pragma once
// Progress on stderr for long runs: units done, megapixels per second, ETA.
// Silent unless stderr is a terminal (or TW_PROGRESS=1 forces it).
#include <atomic>
#include <chrono>
#include <mutex>
#include <string>

namespace tw {

class Progress {
 public:
  Progress(std::string label, int64_t total_units, double pixels_per_unit);
  ~Progress();
  void advance(int64_t units = 1);
  void finish();
  static bool enabled_by_default();
  // Runs of several phases (a pipeline's steps, then its writer) keep one
  // line: each phase's display replaces the last, and end_line() ends it.
  static void set_single_line(bool on);
  static void end_line();
  // Shows `text` on the line now (a phase with no units to count).
  static void show(const std::string& text);

 private:
  void print(bool final);
  std::string label_;
  int64_t total_;
  double pixels_per_unit_;
  std::atomic<int64_t> done_{0};
  bool enabled_;
  bool finished_ = false;
  std::mutex mu_;
  std::chrono::steady_clock::time_point start_, last_print_;
};

}  // namespace tw
