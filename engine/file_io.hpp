#pragma once
// Whole transfers at an offset of a scratch file: short writes and reads and
// EINTR retried, failures an InputError naming the file. Spill traffic is
// counted (engine/byte_counters.hpp) on the writes.
#include <cstddef>
#include <cstdint>
#include <string>

namespace tw {

void pwrite_all(int fd, const uint8_t* p, size_t n, uint64_t off, const std::string& path);
void pread_all(int fd, uint8_t* p, size_t n, uint64_t off, const std::string& path);

}  // namespace tw
