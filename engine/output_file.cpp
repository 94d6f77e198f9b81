#include "engine/output_file.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>

#include "engine/error.hpp"

namespace tw {
namespace {

// Paths to remove if the process is interrupted or dies of a fatal signal. A
// fixed array, so the signal handler touches no allocator.
constexpr int kMaxTemps = 64;
char g_temps[kMaxTemps][4096];
std::atomic<bool> g_claimed[kMaxTemps];  // slot owned by an object
std::atomic<bool> g_armed[kMaxTemps];    // path complete: the handler may unlink it
std::once_flag g_handlers_once;

// Interrupts end the process; fatal signals (a library that aborts, a crash)
// are passed on to whoever handled them before (the default action, or a
// sanitizer's reporter) once our temporaries are gone.
constexpr int kSignals[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGABRT, SIGTRAP, SIGSEGV, SIGBUS, SIGFPE, SIGILL};
constexpr int kNumSignals = sizeof kSignals / sizeof kSignals[0];
struct sigaction g_previous[kNumSignals];

// A temporary folder (engine/output_folder.hpp) and what it holds, with
// only async-signal-safe calls: no allocation, no stdio, no opendir.
void remove_tree_in_handler(int parent, const char* name, int depth) {
  const int fd = openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd >= 0) {
    alignas(8) char buf[4096];
    // Removing entries while reading may make the listing skip some: read
    // it again from the start, a bounded number of times (an entry that
    // cannot be removed must not make the handler loop).
    for (int pass = 0; pass < 3; ++pass, lseek(fd, 0, SEEK_SET)) {
      for (;;) {
        const long n = syscall(SYS_getdents64, fd, buf, sizeof buf);
        if (n <= 0) break;
        for (long off = 0; off < n;) {
          const auto* e = reinterpret_cast<const dirent64*>(buf + off);
          off += e->d_reclen;
          const char* s = e->d_name;
          if (s[0] == '.' && (s[1] == 0 || (s[1] == '.' && s[2] == 0))) continue;
          // d_type may be DT_UNKNOWN: then unlinkat tells a folder by EISDIR.
          const bool dir = e->d_type == DT_DIR || (unlinkat(fd, s, 0) != 0 && errno == EISDIR);
          if (dir && depth < 16) remove_tree_in_handler(fd, s, depth + 1);
        }
      }
    }
    close(fd);
  }
  unlinkat(parent, name, AT_REMOVEDIR);
}

void on_signal(int sig, siginfo_t* info, void* ctx) {
  const int saved_errno = errno;
  for (int i = 0; i < kMaxTemps; ++i)
    if (g_armed[i].load() && unlink(g_temps[i]) != 0 && errno == EISDIR)
      remove_tree_in_handler(AT_FDCWD, g_temps[i], 0);
  errno = saved_errno;
  for (int k = 0; k < kNumSignals; ++k) {
    if (kSignals[k] != sig) continue;
    const struct sigaction& prev = g_previous[k];
    if ((prev.sa_flags & SA_SIGINFO) && prev.sa_sigaction) {
      prev.sa_sigaction(sig, info, ctx);
      return;
    }
    if (prev.sa_handler != SIG_DFL && prev.sa_handler != SIG_IGN && prev.sa_handler) {
      prev.sa_handler(sig);
      return;
    }
  }
  signal(sig, SIG_DFL);
  raise(sig);
}

void install_handlers() {
  for (int k = 0; k < kNumSignals; ++k) {
    struct sigaction sa {};
    sa.sa_sigaction = on_signal;
    sa.sa_flags = SA_SIGINFO | SA_RESETHAND;
    sigemptyset(&sa.sa_mask);
    sigaction(kSignals[k], &sa, &g_previous[k]);
    // An interrupt the caller chose to ignore (nohup) stays ignored.
    if (g_previous[k].sa_handler == SIG_IGN && !(g_previous[k].sa_flags & SA_SIGINFO))
      sigaction(kSignals[k], &g_previous[k], nullptr);
  }
}

int register_temp(const std::string& p) {
  std::call_once(g_handlers_once, install_handlers);
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
constexpr const char* kTag = ".tw-";

std::string unique_name(const std::string& dir, const std::string& base, const std::string& suffix) {
  return dir + "/." + base + kTag + std::to_string(getpid()) + "-" + std::to_string(g_counter.fetch_add(1)) + suffix;
}

// The PID in "." NAME ".tw-PID-N" SUFFIX, or -1 when the name is not one of ours.
long temp_owner(const std::string& name) {
  if (name.size() < 2 || name[0] != '.') return -1;
  const bool tmp = name.size() > 4 && name.compare(name.size() - 4, 4, ".tmp") == 0;
  const bool raster = name.size() > 7 && name.compare(name.size() - 7, 7, ".raster") == 0;
  // ".store": scratch stores of versions before 0.2, which named them.
  const bool store = name.size() > 6 && name.compare(name.size() - 6, 6, ".store") == 0;
  if (!tmp && !raster && !store) return -1;
  const auto at = name.rfind(kTag);
  if (at == std::string::npos) return -1;
  const char* p = name.c_str() + at + std::strlen(kTag);
  char* end = nullptr;
  const long pid = std::strtol(p, &end, 10);
  if (end == p || *end != '-' || pid <= 0) return -1;
  const char* q = end + 1;
  std::strtol(q, &end, 10);
  if (end == q || *end != '.') return -1;
  return pid;
}

void check_folder(const std::string& dir, const std::string& path) {
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
    throw InputError("output folder '" + dir + "' does not exist (for " + path + ")");
  if (::access(dir.c_str(), W_OK) != 0)
    throw InputError("output folder '" + dir + "' is not writable (for " + path + ")");
}

// Empty when `path` may be replaced: absent, or a regular file.
std::string not_replaceable(const std::string& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) return "";
  if (S_ISREG(st.st_mode)) return "";
  if (S_ISDIR(st.st_mode)) return "is a folder";
  if (S_ISLNK(st.st_mode)) return "is a symbolic link (give the path it points to)";
  if (S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode)) return "is a device";
  if (S_ISFIFO(st.st_mode)) return "is a FIFO";
  if (S_ISSOCK(st.st_mode)) return "is a socket";
  return "is not a regular file";
}

}  // namespace

std::string temporary_name(const std::string& final_path, const std::string& suffix) {
  return unique_name(dir_of(final_path), base_of(final_path), suffix);
}

long temporary_owner(const std::string& name) {
  return temp_owner(name);
}

int remove_on_signal(const std::string& path) {
  return register_temp(path);
}

void keep_on_signal(int slot) {
  unregister_temp(slot);
}

bool same_file(const std::string& a, const std::string& b) {
  struct stat sa {
  }, sb{};
  return ::stat(a.c_str(), &sa) == 0 && ::stat(b.c_str(), &sb) == 0 && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

void check_output_path(const std::string& output, const std::vector<std::string>& inputs) {
  if (output.empty()) throw InputError("empty output path");
  if (output.back() == '/') throw InputError("output path '" + output + "' names a folder, not a file");
  check_folder(dir_of(output), output);
  const std::string why = not_replaceable(output);
  if (!why.empty()) throw InputError("output path '" + output + "' " + why + ": refusing to replace it");
  for (const std::string& in : inputs)
    if (same_file(in, output))
      throw InputError("output " + output + " is the input file " + in + ": refusing to overwrite an input");
}

int remove_stale_temporaries(const std::string& folder) {
  DIR* d = ::opendir(folder.c_str());
  if (!d) return 0;
  int removed = 0;
  const long me = static_cast<long>(getpid());
  while (const dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    const long pid = temp_owner(name);
    if (pid < 0 || pid == me) continue;
    // A live process (or a new one that reused the PID: then the file waits
    // for a later run) keeps its files.
    if (::kill(static_cast<pid_t>(pid), 0) == 0 || errno == EPERM) continue;
    const std::string path = folder + "/" + name;
    const int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    if (fd < 0) continue;
    struct stat st {};
    // The owner's flock: held while it lives, whichever host it runs on.
    if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && ::flock(fd, LOCK_EX | LOCK_NB) == 0 &&
        ::unlink(path.c_str()) == 0)
      ++removed;
    ::close(fd);
  }
  ::closedir(d);
  return removed;
}

OutputFile::OutputFile(const std::string& final_path) : final_(final_path) {
  check_output_path(final_path);
  const std::string dir = dir_of(final_path);
  remove_stale_temporaries(dir);
  temp_ = unique_name(dir, base_of(final_path), ".tmp");
  slot_ = register_temp(temp_);
  fd_ = ::open(temp_.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644);
  if (fd_ < 0) {
    const int err = errno;
    unregister_temp(slot_);
    throw InputError("cannot create " + temp_ + " (for " + final_path + "): " + std::strerror(err));
  }
  ::flock(fd_, LOCK_EX | LOCK_NB);  // tells later runs that this file is in use
}

OutputFile::~OutputFile() {
  if (!committed_) ::unlink(temp_.c_str());
  if (fd_ >= 0) ::close(fd_);
  unregister_temp(slot_);
}

void OutputFile::commit() {
  // The path may have changed since the run began (another program put a
  // FIFO or a link there): check again just before replacing it.
  const std::string why = not_replaceable(final_);
  if (!why.empty()) throw InputError("output path '" + final_ + "' " + why + ": refusing to replace it");
  if (std::rename(temp_.c_str(), final_.c_str()) != 0)
    throw InputError("cannot rename " + temp_ + " to " + final_ + ": " + std::strerror(errno));
  committed_ = true;
}

ScratchFile::ScratchFile(const std::string& near_path) {
  const std::string dir = dir_of(near_path);
  name_ = "scratch file in " + dir;
#ifdef O_TMPFILE
  fd_ = ::open(dir.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
#endif
  if (fd_ < 0) {
    // A file system without O_TMPFILE: a named file, unlinked at once (a kill
    // in between leaves a temporary that the next run removes).
    const std::string path = unique_name(dir, base_of(near_path), ".raster");
    fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd_ < 0) throw InputError("cannot create a scratch file in " + dir + ": " + std::strerror(errno));
    ::unlink(path.c_str());
  }
}

ScratchFile::~ScratchFile() {
  if (fd_ >= 0) ::close(fd_);
}

void write_small_file(const std::string& path, const std::string& content) {
  OutputFile out(path);
  const char* p = content.data();
  size_t n = content.size();
  while (n > 0) {
    const ssize_t w = ::write(out.fd(), p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) throw InputError("cannot write " + path + ": " + std::strerror(errno));
    p += w, n -= static_cast<size_t>(w);
  }
  out.commit();
}

}  // namespace tw
