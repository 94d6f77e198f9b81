#pragma once
// Progress on stderr for long runs: units done, megapixels per second, ETA.
// Silent unless stderr is a terminal (or TW_PROGRESS=1 forces it).
#include <atomic>
#include <chrono>
#include <functional>
#include <mutex>
#include <stdexcept>
#include <string>

namespace tw {

// A job stopped on request (the Python bindings' Ctrl-C, or their progress
// callback raising): thrown out of Progress::advance by an observer, it
// leaves the pass like any error, so no output reaches its final path.
class Cancelled : public std::runtime_error {
 public:
  Cancelled() : std::runtime_error("interrupted") {}
};

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
  // One observer of every Progress of the process, for front ends that show
  // progress their own way and may stop the job (the Python bindings):
  // called from advance(), on whichever thread runs it, with the label and
  // units done of the total. It may throw (Cancelled) to stop the job. Set
  // it (or clear it with nullptr) only while no job runs.
  using Observer = std::function<void(const std::string& label, int64_t done, int64_t total)>;
  static void set_observer(Observer f);

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
