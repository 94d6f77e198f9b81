#include "engine/ranks/local_ranks.hpp"

#include <condition_variable>
#include <cstring>
#include <deque>
#include <exception>
#include <mutex>
#include <thread>

#include "engine/error.hpp"

namespace tw {

// Thrown in ranks woken because another rank failed.
struct LocalRanksAborted : std::runtime_error {
  LocalRanksAborted() : std::runtime_error("another rank failed") {}
};

class LocalRankHub {
 public:
  explicit LocalRankHub(int n) : n_(n), inbox_(static_cast<size_t>(n)) {}
  int size() const { return n_; }

  void send(int to, RankMessage m) {
    TW_ASSERT(to >= 0 && to < n_);
    std::lock_guard<std::mutex> l(mu_);
    inbox_[static_cast<size_t>(to)].push_back(std::move(m));
    cv_.notify_all();
  }

  std::optional<RankMessage> take(int me, int from, int tag, bool wait) {
    std::unique_lock<std::mutex> l(mu_);
    auto& box = inbox_[static_cast<size_t>(me)];
    for (;;) {
      if (failed_) throw LocalRanksAborted();
      for (auto it = box.begin(); it != box.end(); ++it)
        if (it->tag == tag && (from == Ranks::kAny || it->from == from)) {
          RankMessage m = std::move(*it);
          box.erase(it);
          return m;
        }
      if (!wait) return std::nullopt;
      cv_.wait(l);
    }
  }

  // A barrier that also combines one value (sum and max).
  std::pair<int64_t, int64_t> gather(int64_t v) {
    std::unique_lock<std::mutex> l(mu_);
    if (failed_) throw LocalRanksAborted();
    const uint64_t gen = generation_;
    acc_sum_ += v;
    acc_max_ = arrived_ == 0 ? v : std::max(acc_max_, v);
    if (++arrived_ == n_) {
      result_ = {acc_sum_, acc_max_};
      arrived_ = 0, acc_sum_ = 0, acc_max_ = 0;
      ++generation_;
      cv_.notify_all();
      return result_;
    }
    cv_.wait(l, [&] { return generation_ != gen || failed_; });
    if (generation_ == gen) throw LocalRanksAborted();
    return result_;
  }

  void fail() {
    std::lock_guard<std::mutex> l(mu_);
    failed_ = true;
    cv_.notify_all();
  }

 private:
  const int n_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::deque<RankMessage>> inbox_;
  bool failed_ = false;
  int arrived_ = 0;
  uint64_t generation_ = 0;
  int64_t acc_sum_ = 0, acc_max_ = 0;
  std::pair<int64_t, int64_t> result_;
};

LocalRanks::LocalRanks(std::shared_ptr<LocalRankHub> hub, int rank) : hub_(std::move(hub)), rank_(rank) {}

int LocalRanks::size() const {
  return hub_->size();
}

void LocalRanks::send(int to, int tag, const void* data, size_t n) {
  RankMessage m;
  m.from = rank_;
  m.tag = tag;
  m.bytes.resize(n);
  if (n) std::memcpy(m.bytes.data(), data, n);
  hub_->send(to, std::move(m));
}

RankMessage LocalRanks::recv(int from, int tag) {
  return *hub_->take(rank_, from, tag, true);
}

std::optional<RankMessage> LocalRanks::try_recv(int from, int tag) {
  return hub_->take(rank_, from, tag, false);
}

void LocalRanks::barrier() {
  hub_->gather(0);
}

int64_t LocalRanks::allreduce_sum(int64_t v) {
  return hub_->gather(v).first;
}

int64_t LocalRanks::allreduce_max(int64_t v) {
  return hub_->gather(v).second;
}

void LocalRanks::abort(const std::string& why) {
  hub_->fail();
  throw InternalError("rank " + std::to_string(rank_) + " aborted the job: " + why);
}

void run_local_ranks(int n, const std::function<void(Ranks&)>& fn) {
  TW_ASSERT(n >= 1);
  auto hub = std::make_shared<LocalRankHub>(n);
  std::vector<std::exception_ptr> errors(static_cast<size_t>(n));
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r)
    threads.emplace_back([&, r] {
      LocalRanks ranks(hub, r);
      try {
        fn(ranks);
      } catch (const LocalRanksAborted&) {
        // Woken because another rank failed: its error is the one to report.
      } catch (...) {
        errors[static_cast<size_t>(r)] = std::current_exception();
        hub->fail();
      }
    });
  for (auto& t : threads) t.join();
  for (auto& e : errors)
    if (e) std::rethrow_exception(e);
}

}  // namespace tw
