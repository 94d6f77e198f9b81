#include "engine/byte_counters.hpp"

#include <atomic>

namespace tw {
namespace {

thread_local ByteCounts t_counts;
std::atomic<uint64_t> g_spilled{0}, g_uploaded{0}, g_downloaded{0};

}  // namespace

void count_spilled(size_t bytes) {
  t_counts.spilled += bytes;
  g_spilled.fetch_add(bytes, std::memory_order_relaxed);
}
void count_uploaded(size_t bytes) {
  t_counts.uploaded += bytes;
  g_uploaded.fetch_add(bytes, std::memory_order_relaxed);
}
void count_downloaded(size_t bytes) {
  t_counts.downloaded += bytes;
  g_downloaded.fetch_add(bytes, std::memory_order_relaxed);
}

ByteCounts thread_byte_counts() {
  return t_counts;
}
ByteCounts take_thread_counts_since(const ByteCounts& before) {
  const ByteCounts moved = t_counts - before;
  t_counts = before;
  return moved;
}
void add_thread_counts(const ByteCounts& moved) {
  t_counts += moved;
}

ByteCounts process_byte_counts() {
  return {g_spilled.load(std::memory_order_relaxed), g_uploaded.load(std::memory_order_relaxed),
          g_downloaded.load(std::memory_order_relaxed)};
}

}  // namespace tw
