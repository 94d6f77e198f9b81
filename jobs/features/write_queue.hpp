#pragma once
// The features' output files are written on a thread of their own, so that
// the scan goes on while a batch of records is copied to the files: the
// text is formatted in parallel, and writing it (hundreds of MB for a whole
// slide's GeoJSON) would otherwise be the longest serial step. Batches are
// written in the order pushed; at most `max_pending` wait, which bounds the
// text held (docs/features.md).
#include <condition_variable>
#include <deque>
#include <exception>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "engine/trace.hpp"
#include "jobs/features/table_writers.hpp"

namespace tw::features {

class WriteQueue {
 public:
  WriteQueue(std::vector<TableWriter*> writers, size_t max_pending)
      : writers_(std::move(writers)), max_pending_(max_pending), thread_([this] { loop(); }) {}
  ~WriteQueue() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  WriteQueue(const WriteQueue&) = delete;
  WriteQueue& operator=(const WriteQueue&) = delete;

  // texts[g * writers + w]: the text of group g of the batch for writer w.
  // Waits while max_pending batches wait; rethrows the writing thread's
  // error (a full disk).
  void push(std::vector<std::string> texts) {
    TraceSpan span("features-push-wait", 0);
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return error_ || queue_.size() < max_pending_; });
    if (error_) std::rethrow_exception(error_);
    queue_.push_back(std::move(texts));
    cv_.notify_all();
  }

  // Waits until every batch pushed is written; rethrows its error.
  void drain() {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return error_ || (queue_.empty() && !busy_); });
    if (error_) std::rethrow_exception(error_);
  }

 private:
  void loop() {
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
      cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
      if (queue_.empty() || error_) return;  // stopped
      std::vector<std::string> texts = std::move(queue_.front());
      queue_.pop_front();
      busy_ = true;
      cv_.notify_all();
      lock.unlock();
      std::exception_ptr error;
      try {
        TraceSpan span("features-write", static_cast<int64_t>(texts.size()));
        const size_t W = writers_.size();
        for (size_t i = 0; i < texts.size(); ++i) writers_[i % W]->write(texts[i]);
      } catch (...) {
        error = std::current_exception();
      }
      texts.clear();
      lock.lock();
      busy_ = false;
      if (error) error_ = error;
      cv_.notify_all();
    }
  }

  std::vector<TableWriter*> writers_;
  size_t max_pending_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::vector<std::string>> queue_;
  bool busy_ = false, stop_ = false;
  std::exception_ptr error_;
  std::thread thread_;  // last: starts once the rest is made
};

}  // namespace tw::features
