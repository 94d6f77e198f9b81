#pragma once
#include <condition_variable>
#include <cstddef>
#include <mutex>
#include <string>

namespace tw {

// "1G", "512M", "64MiB", "300k", "1048576" -> bytes (binary multiples).
size_t parse_byte_size(const std::string& s);
std::string format_bytes(size_t n);  // "1.5 GiB"
// The --memory to advise when a share of --memory `given` came to `had`
// and the work needs `needed`: the shares scale with --memory, so `given`
// scaled by needed / had, rounded up to a whole MiB (what the message shows).
size_t memory_to_give(size_t given, size_t needed, size_t had);

// Peak resident set size of this process, in bytes (getrusage).
size_t peak_rss_bytes();
// Hands freed heap memory back to the system. Ops that free many buffers in
// scattered order (the wavefront's tile cache) call it before the next
// phase, whose budget would otherwise come on top of the freed pages. Only
// while the RSS is over set_rss_target's target, where one is set.
void release_free_heap();
// The same, at most every 50 ms (from any thread), for loops that allocate
// and free buffers of many sizes on many threads while long-lived ones build
// up between them (scratch stores filling from a chain of ops).
// Only while the process's RSS is over the target that set_rss_target gave
// (front ends: --memory plus the fixed overhead; 0, the default: never).
void release_free_heap_now_and_then();
void set_rss_target(size_t bytes);
// For a process whose --memory is `memory`: under small budgets, freed big
// blocks go back to the system at once (a fixed glibc mmap threshold of
// 2 MB); above kSmallBudget the heap keeps blocks up to 32 MB and an eighth
// of the budget of free top (glibc's thresholds fixed there).
constexpr size_t kSmallBudget = size_t{256} << 20;
void hand_big_blocks_back_under(size_t memory);

// The most a GPU op reads in one piece (its input with the halo): each of a
// device's lanes keeps pinned host buffers of a piece in and out, and those
// count against --memory like any buffer. set_gpu_piece_budget(memory) sets
// it from a run's budget (a 32nd of it, 256 KB to 16 MB: four lanes' in and
// out within a quarter); until then, 16 MB.
void set_gpu_piece_budget(size_t memory);
size_t gpu_read_piece_bytes();

// Buffers this large (a band of a wide level: tens of MB) go on 2 MB pages
// where the kernel offers them (THP "madvise", the Debian and Ubuntu
// default). With 4 KB pages each page costs a fault when first written, a
// page-table entry to tear down when freed and, when pinned for the GPU, a
// page to lock and map: freeing 270 MB of pinned bands took 45 ms on the
// H100 machine, 4 ms on 2 MB pages; pinning 173 MB, 81-118 ms against 37-64.
constexpr size_t kHugePageBytes = size_t{2} << 20;
constexpr bool wants_huge_pages(size_t bytes) {
  return bytes >= 4 * kHugePageBytes;
}
// The size a huge-page buffer really takes (whole 2 MB pages).
constexpr size_t huge_rounded(size_t bytes) {
  return (bytes + kHugePageBytes - 1) & ~(kHugePageBytes - 1);
}
// huge_rounded(bytes) bytes aligned to 2 MB, advised as huge pages; std::free
// releases them. Throws std::bad_alloc.
void* allocate_huge(size_t bytes);

// Big buffers kept for reuse. Bands across a wide image (the EDT's row pass:
// 4 MB each for 32768 columns) and big tiles come and go by the thousand; a
// freed one went back to the system and the next cost a page fault per 4 KB
// page written, which a paravirtualised guest pays dearly (a quarter of a
// 2-core pipeline's time went to faults and page clearing at --memory 16G).
// A buffer of kBigBufferBytes or more that is given back is kept for the next
// take of the same size, up to the limit set_big_buffer_budget(memory) sets
// from a run's budget (a 16th of it, at most 256 MB; 0 before it is called:
// nothing kept). release_free_heap() drops them all.
constexpr size_t kBigBufferBytes = size_t{2} << 20;
// bytes rounded up (to 64 KB; to 2 MB pages, advised huge, from 8 MB), a
// kept buffer of that size if there is one. Throws std::bad_alloc.
void* take_big_buffer(size_t bytes);
// p from take_big_buffer(bytes): kept, or freed if the limit is reached.
void give_big_buffer(void* p, size_t bytes);
void set_big_buffer_budget(size_t memory);
size_t big_buffers_kept_bytes();

// A counting semaphore in bytes: buffers whose size a file's header sets
// (a decoded tile or strip) are taken only when they fit beside those other
// threads hold, so N threads decoding huge tiles stay within one budget.
class ByteBudget {
 public:
  explicit ByteBudget(size_t capacity) : capacity_(capacity) {}
  size_t capacity() const;
  void set_capacity(size_t bytes);

  class Hold {
   public:
    Hold() = default;
    Hold(Hold&& o) noexcept : budget_(o.budget_), bytes_(o.bytes_) { o.budget_ = nullptr; }
    Hold(const Hold&) = delete;
    Hold& operator=(const Hold&) = delete;
    Hold& operator=(Hold&&) = delete;
    ~Hold();

   private:
    friend class ByteBudget;
    Hold(ByteBudget* b, size_t n) : budget_(b), bytes_(n) {}
    ByteBudget* budget_ = nullptr;
    size_t bytes_ = 0;
  };
  // Waits until n bytes fit. The caller checks n <= capacity() first (one
  // request larger than the whole budget would wait for ever: it is held
  // alone instead, so a shrinking budget cannot deadlock).
  Hold acquire(size_t n);

 private:
  mutable std::mutex mu_;
  std::condition_variable cv_;
  size_t capacity_, used_ = 0;
};

}  // namespace tw
