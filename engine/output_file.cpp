#include "engine/output_file.hpp"

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <mutex>

#include "engine/error.hpp"

namespace tw {
namespace {

// Paths to remove if the process is interrupted. A fixed array, so the signal
// handler touches no allocator.
constexpr int kMaxTemps = 64;
char g_temps[kMaxTemps][4096];
std::atomic<bool> g_claimed[kMaxTemps];  // slot owned by an object
std::atomic<bool> g_armed[kMaxTemps];    // path complete: the handler may unlink it
std::once_flag g_handlers_once;

void on_signal(int sig) {
  for (int i = 0; i < kMaxTemps; ++i)
    if (g_armed[i].load()) unlink(g_temps[i]);
  signal(sig, SIG_DFL);
  raise(sig);
}

int register_temp(const std::string& p) {
  std::call_once(g_handlers_once, [] {
    signal(SIGINT, on_signal);
    signal(SIGTERM, on_signal);
    signal(SIGHUP, on_signal);
  });
  if (p.size() >= sizeof g_temps[0]) return -1;
  for (int i = 0; i < kMaxTemps; ++i) {
    bool expected = false;
    if (g_claimed[i].compare_exchange_strong(expected, true)) {
      std::memcpy(g_temps[i], p.c_str(), p.size() + 1);
      g_armed[i].store(true);
      return i;
    }
  }
  return -1;
}

void unregister_temp(int slot) {
  if (slot < 0) return;
  g_armed[slot].store(false);
  g_claimed[slot].store(false);
}

std::string dir_of(const std::string& path) {
  const auto slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

std::string base_of(const std::string& path) {
  const auto slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

std::atomic<int> g_counter{0};

std::string unique_name(const std::string& dir, const std::string& base, const std::string& suffix) {
  return dir + "/." + base + ".tw-" + std::to_string(getpid()) + "-" +
         std::to_string(g_counter.fetch_add(1)) + suffix;
}

}  // namespace

OutputFile::OutputFile(const std::string& final_path) : final_(final_path) {
  if (final_path.empty()) throw InputError("empty output path");
  const std::string dir = dir_of(final_path);
  struct stat st {};
  if (stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
    throw InputError("output folder '" + dir + "' does not exist (for " + final_path + ")");
  if (access(dir.c_str(), W_OK) != 0)
    throw InputError("output folder '" + dir + "' is not writable (for " + final_path + ")");
  if (stat(final_path.c_str(), &st) == 0 && S_ISDIR(st.st_mode))
    throw InputError("output path '" + final_path + "' is a folder");
  temp_ = unique_name(dir, base_of(final_path), ".tmp");
  slot_ = register_temp(temp_);
}

OutputFile::~OutputFile() {
  if (!committed_) unlink(temp_.c_str());
  unregister_temp(slot_);
}

void OutputFile::commit() {
  if (std::rename(temp_.c_str(), final_.c_str()) != 0)
    throw InputError("cannot rename " + temp_ + " to " + final_ + ": " + std::strerror(errno));
  committed_ = true;
}

TempPath::TempPath(const std::string& near_path, const std::string& suffix) {
  path_ = unique_name(dir_of(near_path), base_of(near_path), suffix);
  slot_ = register_temp(path_);
}

TempPath::~TempPath() {
  unlink(path_.c_str());
  unregister_temp(slot_);
}

}  // namespace tw
