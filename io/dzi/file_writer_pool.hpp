#pragma once
// Writes many small files (Deep Zoom tiles) on threads of its own, so that
// the file system never holds up the TBB threads that compute and encode:
// creating a file takes 20-130 us of kernel CPU on ext4, up to 1 ms right
// after many deletions (for vips dzsave's files as for ours), and thousands
// of tiles created inside the encoding tasks stalled the pass. The queue is
// bounded: submit() waits while it is full, which only happens when the
// disk is the bottleneck anyway.
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace tw {

class FileWriterPool {
 public:
  FileWriterPool(int threads, size_t max_queued);
  ~FileWriterPool();  // drops what waits, joins the threads
  FileWriterPool(const FileWriterPool&) = delete;
  FileWriterPool& operator=(const FileWriterPool&) = delete;

  // Queues a new file (created with O_EXCL): from any thread.
  void submit(std::string path, std::vector<uint8_t> bytes);
  // Waits until every queued file is written; rethrows the first error.
  void drain();
  // The first error so far (InputError naming the file), rethrown; or nothing.
  void rethrow_error();

 private:
  void run();
  static void write_file(const std::string& path, const std::vector<uint8_t>& bytes);

  std::mutex mutex_;
  std::condition_variable has_work_, has_room_, idle_;
  std::deque<std::pair<std::string, std::vector<uint8_t>>> queue_;
  size_t max_queued_;
  int busy_ = 0;
  bool stop_ = false;
  std::exception_ptr error_;
  std::vector<std::thread> threads_;
};

}  // namespace tw
