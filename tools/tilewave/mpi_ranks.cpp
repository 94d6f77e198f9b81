// Ranks over MPI_COMM_WORLD for a command that splits one slide (built where
// CMake finds MPI). MPI starts only when a launcher started this process
// with more than one rank; every other run never initialises it.
//
// Jobs send from several threads at once (a pass's stages, a receiving
// thread on rank 0), so MPI runs at MPI_THREAD_MULTIPLE, with matched probes
// (MPI_Mprobe/MPI_Mrecv) so that two threads receiving the same tag cannot
// take each other's message. A library without that level is refused with
// a clear error rather than risking a deadlock.
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdlib>
#include <memory>
#include <thread>

#include "engine/error.hpp"
#include "engine/ranks/ranks.hpp"
#include "tools/tilewave/mpi_util.hpp"

namespace tw::cli {
namespace {

int launcher_size() {
  for (const char* v : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "MPI_LOCALNRANKS"})
    if (const char* s = std::getenv(v)) return std::atoi(s);
  return 1;
}

class Backoff {
 public:
  void operator()() {
    std::this_thread::sleep_for(std::chrono::microseconds(us_));
    us_ = std::min(us_ * 2, 100);
  }

 private:
  int us_ = 5;
};

class MpiRanks : public Ranks {
 public:
  MpiRanks() {
    int provided = 0;
    mpi_check(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided), "MPI_Init_thread");
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    if (provided < MPI_THREAD_MULTIPLE) {
      MPI_Finalize();
      throw InputError(
          "this MPI library does not allow calls from several threads (MPI_THREAD_MULTIPLE), which splitting a "
          "slide over ranks needs; run the command on one rank");
    }
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
    local_ = mpi_local_rank(rank_);
  }
  ~MpiRanks() override {
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Finalize();
  }
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  int local_rank() const override { return local_; }

  // Sends block in MPI (they last as long as the transfer, and MPI moves
  // the data only while one of its calls runs). Receives poll with a short
  // sleep instead: a rank's receiving thread waits for most of the job, and
  // Open MPI's blocking calls spin a core at 100% meanwhile, taking it from
  // the rank's own compute threads (measured on 2 cores: a split pyramid
  // 1.5x slower). The sleep grows to 100 us.
  void send(int to, int tag, const void* data, size_t n) override {
    if (n > static_cast<size_t>(INT_MAX)) throw InternalError("MPI: a message over 2 GiB");
    mpi_check(MPI_Send(data, static_cast<int>(n), MPI_BYTE, to, tag, MPI_COMM_WORLD), "MPI_Send");
  }

  RankMessage recv(int from, int tag) override {
    Backoff wait;
    for (;;) {
      if (std::optional<RankMessage> m = try_recv(from, tag)) return std::move(*m);
      wait();
    }
  }

  std::optional<RankMessage> try_recv(int from, int tag) override {
    int flag = 0;
    MPI_Message msg;
    MPI_Status st;
    mpi_check(MPI_Improbe(from == kAny ? MPI_ANY_SOURCE : from, tag, MPI_COMM_WORLD, &flag, &msg, &st), "MPI_Improbe");
    if (!flag) return std::nullopt;
    return take(msg, st);
  }

  void barrier() override { mpi_check(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier"); }
  int64_t allreduce_sum(int64_t v) override { return allreduce(v, MPI_SUM); }
  int64_t allreduce_max(int64_t v) override { return allreduce(v, MPI_MAX); }
  [[noreturn]] void abort(const std::string&) override {
    MPI_Abort(MPI_COMM_WORLD, 1);
    std::abort();
  }

 private:
  RankMessage take(MPI_Message& msg, const MPI_Status& st) {
    int n = 0;
    mpi_check(MPI_Get_count(&st, MPI_BYTE, &n), "MPI_Get_count");
    RankMessage m;
    m.from = st.MPI_SOURCE;
    m.tag = st.MPI_TAG;
    m.bytes.resize(static_cast<size_t>(n));
    mpi_check(MPI_Mrecv(m.bytes.data(), n, MPI_BYTE, &msg, MPI_STATUS_IGNORE), "MPI_Mrecv");
    return m;
  }
  int64_t allreduce(int64_t v, MPI_Op op) {
    int64_t out = 0;
    mpi_check(MPI_Allreduce(&v, &out, 1, MPI_INT64_T, op, MPI_COMM_WORLD), "MPI_Allreduce");
    return out;
  }
  int rank_ = 0, size_ = 1, local_ = 0;
};

}  // namespace

std::unique_ptr<Ranks> open_mpi_slide_ranks() {
  if (launcher_size() < 2) return nullptr;
  return std::make_unique<MpiRanks>();
}

}  // namespace tw::cli
