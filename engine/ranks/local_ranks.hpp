#pragma once
// Ranks inside one process: N workers (threads) with a mailbox each. Used
// for several GPUs of one host (one worker per device) and by the tests of
// the split-slide jobs, which then run without mpirun. Messages are copied
// into the receiver's mailbox (unbounded: a sender never waits).
#include <functional>
#include <memory>

#include "engine/ranks/ranks.hpp"

namespace tw {

class LocalRankHub;

class LocalRanks : public Ranks {
 public:
  LocalRanks(std::shared_ptr<LocalRankHub> hub, int rank);
  int rank() const override { return rank_; }
  int size() const override;
  void send(int to, int tag, const void* data, size_t n) override;
  RankMessage recv(int from, int tag) override;
  std::optional<RankMessage> try_recv(int from, int tag) override;
  void barrier() override;
  int64_t allreduce_sum(int64_t v) override;
  int64_t allreduce_max(int64_t v) override;
  [[noreturn]] void abort(const std::string& why) override;

 private:
  std::shared_ptr<LocalRankHub> hub_;
  int rank_;
};

// Runs fn on `n` ranks, each on its own thread, and waits for all. The first
// exception (or abort) of any rank is rethrown here after every rank has
// stopped; ranks waiting on a failed one are woken and stop too.
void run_local_ranks(int n, const std::function<void(Ranks&)>& fn);

}  // namespace tw
