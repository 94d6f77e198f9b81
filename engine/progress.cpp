#include "engine/progress.hpp"

#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace tw {
namespace {
std::atomic<bool> g_single_line{false};
std::atomic<bool> g_line_open{false};
// Set only between jobs (set_observer's contract), read by every advance().
// Never destroyed: a job's threads may still advance while exit() runs.
Progress::Observer& g_observer = *new Progress::Observer;
}  // namespace

void Progress::set_observer(Observer f) {
  g_observer = std::move(f);
}

void Progress::set_single_line(bool on) {
  g_single_line = on;
}

void Progress::end_line() {
  if (g_line_open.exchange(false)) {
    std::fputc('\n', stderr);
    std::fflush(stderr);
  }
}

void Progress::show(const std::string& text) {
  if (!enabled_by_default()) return;
  std::fprintf(stderr, "\r\x1b[K%s", text.c_str());
  std::fflush(stderr);
  g_line_open = true;
}

bool Progress::enabled_by_default() {
  const char* force = std::getenv("TW_PROGRESS");
  if (force) return std::strcmp(force, "0") != 0;
  return isatty(STDERR_FILENO) != 0;
}

Progress::Progress(std::string label, int64_t total_units, double pixels_per_unit)
    : label_(std::move(label)),
      total_(total_units),
      pixels_per_unit_(pixels_per_unit),
      enabled_(enabled_by_default()),
      start_(std::chrono::steady_clock::now()),
      last_print_(start_) {}

Progress::~Progress() {
  if (enabled_ && !finished_ && !g_single_line) std::fputc('\n', stderr);
}

void Progress::advance(int64_t units) {
  const int64_t done = done_ += units;
  if (g_observer) g_observer(label_, done, total_);
  if (!enabled_) return;
  const auto now = std::chrono::steady_clock::now();
  std::unique_lock<std::mutex> lock(mu_, std::try_to_lock);
  if (!lock.owns_lock()) return;
  if (now - last_print_ < std::chrono::milliseconds(200)) return;
  last_print_ = now;
  print(false);
}

void Progress::finish() {
  if (!enabled_ || finished_) return;
  std::lock_guard<std::mutex> lock(mu_);
  print(true);
  finished_ = true;
}

void Progress::print(bool final) {
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  const int64_t done = done_.load();
  const double mps = secs > 0 ? done * pixels_per_unit_ / 1e6 / secs : 0;
  const double pct = total_ > 0 ? 100.0 * done / total_ : 100.0;
  const double eta = done > 0 ? secs * (total_ - done) / done : 0;
  const bool keep = g_single_line;
  std::fprintf(stderr, "\r\x1b[K%s: %lld/%lld (%5.1f%%)  %.0f MP/s  %s %.0fs%s", label_.c_str(),
               static_cast<long long>(done), static_cast<long long>(total_), pct, mps, final ? "took" : "ETA",
               final ? secs : eta, final && !keep ? "\n" : "");
  g_line_open = !(final && !keep);
  std::fflush(stderr);
}

}  // namespace tw
