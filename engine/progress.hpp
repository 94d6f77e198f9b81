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
