#include "engine/memory.hpp"

#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <deque>
#include <utility>
#if __has_include(<malloc.h>)
#include <malloc.h>
#endif

#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <new>
#include <vector>

#include "engine/error.hpp"

namespace tw {

size_t parse_byte_size(const std::string& s) {
  const std::string bad = "invalid size '" + s + "' (expected e.g. 512M, 1G, 65536)";
  size_t i = 0;
  while (i < s.size() && (std::isdigit(static_cast<unsigned char>(s[i])) || s[i] == '.')) ++i;
  if (i == 0) throw InputError(bad);
  double value = 0;
  try {
    value = std::stod(s.substr(0, i));
  } catch (...) {
    throw InputError(bad);
  }
  std::string unit = s.substr(i);
  for (auto& c : unit) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  if (unit.size() >= 2 && unit.substr(unit.size() - 2) == "IB")
    unit = unit.substr(0, unit.size() - 2);
  else if (unit.size() == 2 && unit[1] == 'B')
    unit = unit.substr(0, 1);
  double mult = 1;
  if (unit.empty() || unit == "B")
    mult = 1;
  else if (unit == "K")
    mult = 1024.0;
  else if (unit == "M")
    mult = 1024.0 * 1024;
  else if (unit == "G")
    mult = 1024.0 * 1024 * 1024;
  else if (unit == "T")
    mult = 1024.0 * 1024 * 1024 * 1024;
  else
    throw InputError(bad);
  const double bytes = value * mult;
  if (!std::isfinite(bytes) || bytes < 1 || bytes > 1e18) throw InputError(bad);
  return static_cast<size_t>(bytes);
}

size_t memory_to_give(size_t given, size_t needed, size_t had) {
  const size_t mib = size_t{1} << 20;
  const double scaled = static_cast<double>(given) * static_cast<double>(needed) / static_cast<double>(had ? had : 1);
  return (static_cast<size_t>(scaled) + mib - 1) / mib * mib;
}

std::string format_bytes(size_t n) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(n);
  int u = 0;
  while (v >= 1024 && u < 4) v /= 1024, ++u;
  char buf[32];
  std::snprintf(buf, sizeof buf, u == 0 ? "%.0f %s" : "%.1f %s", v, units[u]);
  return buf;
}

size_t peak_rss_bytes() {
  struct rusage ru {};
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<size_t>(ru.ru_maxrss) * 1024;
}

void drop_big_buffers();

namespace {
std::atomic<size_t> g_rss_target{0};

size_t current_rss_bytes() {
  FILE* f = std::fopen("/proc/self/statm", "r");
  if (!f) return 0;
  unsigned long pages = 0, resident = 0;
  const int n = std::fscanf(f, "%lu %lu", &pages, &resident);
  std::fclose(f);
  return n == 2 ? static_cast<size_t>(resident) * static_cast<size_t>(sysconf(_SC_PAGESIZE)) : 0;
}
}  // namespace

void release_free_heap() {
  // Under the process's target the freed pages stay: malloc hands them to
  // the next phase's buffers, where pages handed back would each fault in
  // again (11 us a page on our 2-core virtual machine: docs/PERFORMANCE.md).
  // Without a target (library use), always.
  const size_t target = g_rss_target.load(std::memory_order_relaxed);
  if (target != 0 && current_rss_bytes() <= target) return;
  drop_big_buffers();
#ifdef __GLIBC__
  malloc_trim(0);
#endif
}

void set_rss_target(size_t bytes) {
  g_rss_target = bytes;
}

// glibc raises its mmap threshold to the largest block freed (up to 32 MB),
// after which freed bands and tiles stay in its heaps as resident pages:
// `overlay` of a 5800² image under --memory 16M peaked at 63-66 MB for a
// live heap of 15 MB. A fixed threshold turns the adjustment off: 38 MB. It
// costs page faults on every big block (a 2-core pyramid 4% slower), which
// under a small budget is the price of keeping to it.
// Above that, the heap keeps blocks up to 32 MB and up to an eighth of the
// budget of free top: glibc's own thresholds started at 128 KB and its heap
// shrank and grew by brk thousands of times a run (2,400 in `tilewave
// nuclei` of a 67-MP slide), each page handed back faulting in again. The
// RSS target (set_rss_target) still hands everything back near the budget.
void hand_big_blocks_back_under(size_t memory) {
  if (memory <= kSmallBudget) {
    mallopt(M_MMAP_THRESHOLD, static_cast<int>(kBigBufferBytes));
  } else {
    mallopt(M_MMAP_THRESHOLD, 32 << 20);
    mallopt(M_TRIM_THRESHOLD, static_cast<int>(std::min<size_t>(memory / 8, size_t{1} << 30)));
  }
}

void release_free_heap_now_and_then() {
  const size_t target = g_rss_target.load(std::memory_order_relaxed);
  if (target == 0) return;
  using Clock = std::chrono::steady_clock;
  static std::atomic<int64_t> next{0};
  const int64_t now = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now().time_since_epoch()).count();
  int64_t due = next.load(std::memory_order_relaxed);
  if (now < due || !next.compare_exchange_strong(due, now + 50)) return;
  // malloc_trim locks every arena while it walks them: on 16 threads with
  // gigabytes of heap that stalled every allocation (a run 60% slower), so
  // it runs only when the process is near its budget.
  if (current_rss_bytes() > target) release_free_heap();
}

void* allocate_huge(size_t bytes) {
  const size_t n = huge_rounded(bytes);
  void* p = std::aligned_alloc(kHugePageBytes, n);
  if (!p) throw std::bad_alloc();
#ifdef MADV_HUGEPAGE
  madvise(p, n, MADV_HUGEPAGE);  // advice only: 4 KB pages if refused
#endif
  return p;
}

namespace {
size_t big_rounded(size_t bytes) {
  return wants_huge_pages(bytes) ? huge_rounded(bytes) : (bytes + 0xffff) & ~size_t{0xffff};
}

// Kept buffers, oldest first; a take reuses the newest of its size.
struct BigBuffers {
  std::mutex mu;
  std::deque<std::pair<size_t, void*>> kept;
  size_t kept_bytes = 0, limit = 0;
};
BigBuffers& big_buffers() {
  static BigBuffers& b = *new BigBuffers;  // never destroyed: threads may free at exit
  return b;
}
}  // namespace

void* take_big_buffer(size_t bytes) {
  const size_t n = big_rounded(bytes);
  BigBuffers& b = big_buffers();
  {
    std::lock_guard<std::mutex> l(b.mu);
    for (auto it = b.kept.rbegin(); it != b.kept.rend(); ++it)
      if (it->first == n) {
        void* p = it->second;
        b.kept_bytes -= n;
        b.kept.erase(std::next(it).base());
        return p;
      }
  }
  if (wants_huge_pages(n)) return allocate_huge(n);
  void* p = std::aligned_alloc(64, n);
  if (!p) throw std::bad_alloc();
  return p;
}

void give_big_buffer(void* p, size_t bytes) {
  const size_t n = big_rounded(bytes);
  BigBuffers& b = big_buffers();
  std::vector<void*> out;
  {
    std::lock_guard<std::mutex> l(b.mu);
    if (n > b.limit) {
      out.push_back(p);
    } else {
      // Room for it: the oldest go (a size no longer taken ages out).
      while (b.kept_bytes + n > b.limit) {
        out.push_back(b.kept.front().second);
        b.kept_bytes -= b.kept.front().first;
        b.kept.pop_front();
      }
      b.kept.emplace_back(n, p);
      b.kept_bytes += n;
    }
  }
  for (void* q : out) std::free(q);
}

void drop_big_buffers() {
  BigBuffers& b = big_buffers();
  std::deque<std::pair<size_t, void*>> out;
  {
    std::lock_guard<std::mutex> l(b.mu);
    out.swap(b.kept);
    b.kept_bytes = 0;
  }
  for (auto& e : out) std::free(e.second);
}

void set_big_buffer_budget(size_t memory) {
  BigBuffers& b = big_buffers();
  {
    std::lock_guard<std::mutex> l(b.mu);
    b.limit = std::min(memory / 16, size_t{256} << 20);
  }
  drop_big_buffers();
}

size_t big_buffers_kept_bytes() {
  BigBuffers& b = big_buffers();
  std::lock_guard<std::mutex> l(b.mu);
  return b.kept_bytes;
}

size_t ByteBudget::capacity() const {
  std::lock_guard<std::mutex> l(mu_);
  return capacity_;
}

void ByteBudget::set_capacity(size_t bytes) {
  {
    std::lock_guard<std::mutex> l(mu_);
    capacity_ = bytes;
  }
  cv_.notify_all();
}

ByteBudget::Hold ByteBudget::acquire(size_t n) {
  std::unique_lock<std::mutex> l(mu_);
  cv_.wait(l, [&] { return used_ == 0 || used_ + n <= capacity_; });
  used_ += n;
  return Hold(this, n);
}

ByteBudget::Hold::~Hold() {
  if (!budget_) return;
  {
    std::lock_guard<std::mutex> l(budget_->mu_);
    budget_->used_ -= bytes_;
  }
  budget_->cv_.notify_all();
}

namespace {
std::atomic<size_t> g_gpu_piece_bytes{size_t{16} << 20};
}  // namespace

void set_gpu_piece_budget(size_t memory) {
  g_gpu_piece_bytes.store(std::clamp(memory / 32, size_t{256} << 10, size_t{16} << 20));
}

size_t gpu_read_piece_bytes() {
  return g_gpu_piece_bytes.load();
}

}  // namespace tw
