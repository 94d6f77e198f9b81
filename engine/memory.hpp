#pragma once
#include <cstddef>
#include <string>

namespace tw {

// "1G", "512M", "64MiB", "300k", "1048576" -> bytes (binary multiples).
size_t parse_byte_size(const std::string& s);
std::string format_bytes(size_t n);  // "1.5 GiB"

// Peak resident set size of this process, in bytes (getrusage).
size_t peak_rss_bytes();
// Hands freed heap memory back to the system. Ops that free many buffers in
// scattered order (the wavefront's tile cache) call it before the next
// phase, whose budget would otherwise come on top of the freed pages.
void release_free_heap();

}  // namespace tw
