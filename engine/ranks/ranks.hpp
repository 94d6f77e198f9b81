#pragma once
// The processes one job is split over: the ranks of an MPI launch
// (tools/tilewave/mpi_ranks.cpp), or workers in one process (local_ranks.hpp:
// several GPUs of one host, and the tests). Jobs that split a slide (the
// banded pyramid, the ranked wavefront) talk through this and nothing else,
// so one algorithm serves both and is tested without mpirun.
//
// Point-to-point messages are tagged byte strings; send and recv are
// thread-safe and may be called from any thread. Collectives (barrier,
// allreduce) are called by every rank in the same order, from one thread of
// each. Messages between one pair of ranks with one tag arrive in the order
// they were sent (MPI's non-overtaking rule).
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace tw {

struct RankMessage {
  int from = -1;
  int tag = 0;
  std::vector<uint8_t> bytes;
};

class Ranks {
 public:
  static constexpr int kAny = -1;
  virtual ~Ranks() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // This rank's index among the ranks on its host (picks its GPU).
  virtual int local_rank() const { return rank(); }
  // Returns once `data` may be reused (it may wait for the receiver).
  virtual void send(int to, int tag, const void* data, size_t n) = 0;
  // The next message with this tag from `from` (kAny: any rank); waits.
  virtual RankMessage recv(int from, int tag) = 0;
  // A message if one is waiting, else none.
  virtual std::optional<RankMessage> try_recv(int from, int tag) = 0;
  virtual void barrier() = 0;
  virtual int64_t allreduce_sum(int64_t v) = 0;
  virtual int64_t allreduce_max(int64_t v) = 0;
  // This rank failed where others may be waiting on it: ends the whole job
  // (MPI_Abort; in one process, every rank's waits throw). Does not return.
  [[noreturn]] virtual void abort(const std::string& why) = 0;

  void send(int to, int tag, const std::vector<uint8_t>& bytes) { send(to, tag, bytes.data(), bytes.size()); }
};

// Message tags, one range per job, so that two jobs' messages never mix.
namespace rank_tags {
// Banded pyramid: tiles, rows and "done" to rank 0, on one tag so that they
// arrive in the order sent.
constexpr int kPyramid = 100;
constexpr int kWavefront = 200;  // ranked wavefront: 200..299
}  // namespace rank_tags

}  // namespace tw
