#include "io/dzi/file_writer_pool.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "engine/error.hpp"

namespace tw {

FileWriterPool::FileWriterPool(int threads, size_t max_queued) : max_queued_(std::max<size_t>(1, max_queued)) {
  for (int i = 0; i < std::max(1, threads); ++i) threads_.emplace_back([this] { run(); });
}

FileWriterPool::~FileWriterPool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
    queue_.clear();
  }
  has_work_.notify_all();
  has_room_.notify_all();
  for (std::thread& t : threads_) t.join();
}

void FileWriterPool::submit(std::string path, std::vector<uint8_t> bytes) {
  std::unique_lock<std::mutex> lock(mutex_);
  has_room_.wait(lock, [this] { return queue_.size() < max_queued_ || stop_ || error_; });
  if (error_ || stop_) return;  // reported by drain() / rethrow_error()
  queue_.emplace_back(std::move(path), std::move(bytes));
  lock.unlock();
  has_work_.notify_one();
}

void FileWriterPool::drain() {
  std::unique_lock<std::mutex> lock(mutex_);
  idle_.wait(lock, [this] { return (queue_.empty() && busy_ == 0) || error_; });
  if (error_) std::rethrow_exception(error_);
}

void FileWriterPool::rethrow_error() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (error_) std::rethrow_exception(error_);
}

void FileWriterPool::run() {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    has_work_.wait(lock, [this] { return !queue_.empty() || stop_; });
    if (stop_) return;
    auto item = std::move(queue_.front());
    queue_.pop_front();
    ++busy_;
    lock.unlock();
    has_room_.notify_one();
    std::exception_ptr err;
    try {
      write_file(item.first, item.second);
    } catch (...) {
      err = std::current_exception();
    }
    lock.lock();
    --busy_;
    if (err && !error_) {
      error_ = err;
      queue_.clear();
      has_room_.notify_all();
    }
    if ((queue_.empty() && busy_ == 0) || error_) idle_.notify_all();
  }
}

void FileWriterPool::write_file(const std::string& path, const std::vector<uint8_t>& bytes) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644);
  if (fd < 0) throw InputError("cannot create " + path + ": " + std::strerror(errno));
  const uint8_t* p = bytes.data();
  size_t n = bytes.size();
  while (n > 0) {
    const ssize_t k = ::write(fd, p, n);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) {
      const int err = errno;
      ::close(fd);
      throw InputError("cannot write " + path + ": " + std::strerror(err));
    }
    p += k, n -= static_cast<size_t>(k);
  }
  if (::close(fd) != 0) throw InputError("cannot write " + path + ": " + std::strerror(errno));
}

}  // namespace tw
