#pragma once
// Work on a thread of its own beside the caller's: joined before the task
// goes (also while an exception unwinds the caller, so that nothing it uses
// is freed under it), and what it threw rethrown by finish(). The pyramid
// writer copies associated images so; `tilewave nuclei` measures its
// features beside the writing.
#include <exception>
#include <thread>
#include <utility>

namespace tw {

class SideTask {
 public:
  SideTask() = default;
  SideTask(const SideTask&) = delete;
  SideTask& operator=(const SideTask&) = delete;
  ~SideTask() {
    if (thread_.joinable()) thread_.join();
  }
  // Runs f() on a new thread (once per task).
  template <class F>
  void start(F&& f) {
    thread_ = std::thread([this, f = std::forward<F>(f)]() mutable {
      try {
        f();
      } catch (...) {
        error_ = std::current_exception();
      }
    });
  }
  // Waits for it (if started) and rethrows what it threw.
  void finish() {
    if (thread_.joinable()) thread_.join();
    if (error_) std::rethrow_exception(std::exchange(error_, nullptr));
  }

 private:
  std::thread thread_;
  std::exception_ptr error_;
};

}  // namespace tw
