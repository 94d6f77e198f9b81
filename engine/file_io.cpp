#include "engine/file_io.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "engine/byte_counters.hpp"
#include "engine/error.hpp"

namespace tw {

void pwrite_all(int fd, const uint8_t* p, size_t n, uint64_t off, const std::string& path) {
  count_spilled(n);
  while (n > 0) {
    const ssize_t w = ::pwrite(fd, p, n, static_cast<off_t>(off));
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) throw InputError("cannot write " + path + ": " + std::strerror(errno));
    p += w, n -= static_cast<size_t>(w), off += static_cast<uint64_t>(w);
  }
}

void pread_all(int fd, uint8_t* p, size_t n, uint64_t off, const std::string& path) {
  while (n > 0) {
    const ssize_t r = ::pread(fd, p, n, static_cast<off_t>(off));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) throw InputError("cannot read " + path + ": " + (r < 0 ? std::strerror(errno) : "short file"));
    p += r, n -= static_cast<size_t>(r), off += static_cast<uint64_t>(r);
  }
}

}  // namespace tw
