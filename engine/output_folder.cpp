#include "engine/output_folder.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <ftw.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "engine/error.hpp"
#include "engine/output_file.hpp"

namespace tw {
namespace {

// "out.zarr/" and "out.zarr" are the same folder.
std::string without_trailing_slashes(std::string p) {
  while (p.size() > 1 && p.back() == '/') p.pop_back();
  return p;
}

std::string dir_of(const std::string& path) {
  const auto slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

std::string real_path(const std::string& p) {
  char buf[PATH_MAX];
  return ::realpath(p.c_str(), buf) ? std::string(buf) : std::string();
}

// Empty when `path` may be written: absent, or a folder of `kind`.
std::string not_replaceable(const std::string& path, const FolderKind& kind) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) return "";
  if (S_ISDIR(st.st_mode)) {
    if (kind.is_one && kind.is_one(path)) return "";
    return "is a folder that is not " + kind.name;
  }
  if (S_ISREG(st.st_mode)) return "is a file, not " + kind.name;
  if (S_ISLNK(st.st_mode)) return "is a symbolic link (give the path it points to)";
  if (S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode)) return "is a device";
  if (S_ISFIFO(st.st_mode)) return "is a FIFO";
  if (S_ISSOCK(st.st_mode)) return "is a socket";
  return "is not a folder";
}

int remove_entry(const char* path, const struct stat*, int type, struct FTW*) {
  // FTW_DP: a folder after its contents (FTW_DEPTH); anything else, links
  // included (FTW_PHYS), is unlinked itself.
  return type == FTW_DP ? ::rmdir(path) : ::unlink(path);
}

}  // namespace

void check_output_folder(const std::string& output_in, const FolderKind& kind, const std::vector<std::string>& inputs) {
  if (output_in.empty()) throw InputError("empty output path");
  const std::string output = without_trailing_slashes(output_in);
  const std::string dir = dir_of(output);
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
    throw InputError("output folder '" + dir + "' does not exist (for " + output + ")");
  if (::access(dir.c_str(), W_OK) != 0)
    throw InputError("output folder '" + dir + "' is not writable (for " + output + ")");
  const std::string why = not_replaceable(output, kind);
  if (!why.empty()) throw InputError("output path '" + output + "' " + why + ": refusing to replace it");
  const std::string out_real = real_path(output);
  for (const std::string& in : inputs) {
    if (same_file(in, output))
      throw InputError("output " + output + " is the input " + in + ": refusing to overwrite an input");
    const std::string in_real = real_path(in);
    if (!out_real.empty() && !in_real.empty() && in_real.compare(0, out_real.size() + 1, out_real + "/") == 0)
      throw InputError("input " + in + " lies inside the output " + output + ": refusing to replace it");
  }
}

bool remove_tree(const std::string& path) {
  return ::nftw(path.c_str(), remove_entry, 16, FTW_DEPTH | FTW_PHYS) == 0;
}

int remove_stale_temporary_folders(const std::string& folder) {
  DIR* d = ::opendir(folder.c_str());
  if (!d) return 0;
  std::vector<std::string> stale;
  const long me = static_cast<long>(getpid());
  while (const dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    const long pid = temporary_owner(name);
    if (pid < 0 || pid == me || name.compare(name.size() - 4, 4, ".tmp") != 0) continue;
    // A live process (or a new one that reused the PID) keeps its folder.
    if (::kill(static_cast<pid_t>(pid), 0) == 0 || errno == EPERM) continue;
    stale.push_back(folder + "/" + name);
  }
  ::closedir(d);
  int removed = 0;
  for (const std::string& path : stale) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) continue;  // a file: engine/output_file.cpp's to remove
    // The owner's flock, held while it lives, whichever host it runs on.
    if (::flock(fd, LOCK_EX | LOCK_NB) == 0 && remove_tree(path)) ++removed;
    ::close(fd);
  }
  return removed;
}

OutputFolder::OutputFolder(const std::string& final_path, FolderKind kind)
    : final_(without_trailing_slashes(final_path)), kind_(std::move(kind)) {
  check_output_folder(final_, kind_);
  remove_stale_temporary_folders(dir_of(final_));
  temp_ = temporary_name(final_, ".tmp");
  if (::mkdir(temp_.c_str(), 0755) != 0)
    throw InputError("cannot create " + temp_ + " (for " + final_ + "): " + std::strerror(errno));
  // An interrupt (Ctrl-C, SIGTERM) removes the folder at once; a kill -9
  // leaves it to the next run.
  slot_ = remove_on_signal(temp_);
  fd_ = ::open(temp_.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd_ >= 0) ::flock(fd_, LOCK_EX | LOCK_NB);  // tells later runs that the folder is in use
}

OutputFolder::~OutputFolder() {
  if (!committed_) remove_tree(temp_);
  if (fd_ >= 0) ::close(fd_);
  keep_on_signal(slot_);
}

void OutputFolder::commit() {
  // The path may have changed since the run began: check again just before
  // putting the folder there.
  const std::string why = not_replaceable(final_, kind_);
  if (!why.empty()) throw InputError("output path '" + final_ + "' " + why + ": refusing to replace it");
  struct stat st {};
  if (::lstat(final_.c_str(), &st) != 0) {
    // rename() would also replace an empty folder made meanwhile: harmless.
    if (std::rename(temp_.c_str(), final_.c_str()) != 0)
      throw InputError("cannot rename " + temp_ + " to " + final_ + ": " + std::strerror(errno));
    committed_ = true;
    return;
  }
  // An earlier store: exchanged with ours in one step, then deleted from
  // the temporary name (a kill meanwhile leaves a stale temporary, which the
  // next run removes).
  if (::renameat2(AT_FDCWD, temp_.c_str(), AT_FDCWD, final_.c_str(), RENAME_EXCHANGE) == 0) {
    committed_ = true;
    remove_tree(temp_);
    return;
  }
  if (errno != EINVAL && errno != ENOSYS)
    throw InputError("cannot rename " + temp_ + " to " + final_ + ": " + std::strerror(errno));
  // A file system without the exchange: the old store is moved aside first,
  // so for a moment the path holds nothing (never a partial store).
  const std::string old = temporary_name(final_, ".tmp");
  if (std::rename(final_.c_str(), old.c_str()) != 0)
    throw InputError("cannot move " + final_ + " aside to replace it: " + std::strerror(errno));
  if (std::rename(temp_.c_str(), final_.c_str()) != 0) {
    const int err = errno;
    std::rename(old.c_str(), final_.c_str());
    throw InputError("cannot rename " + temp_ + " to " + final_ + ": " + std::strerror(err));
  }
  committed_ = true;
  remove_tree(old);
}

}  // namespace tw
