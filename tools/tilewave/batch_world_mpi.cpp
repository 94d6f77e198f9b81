// The batch world over MPI ranks (built where CMake finds MPI). MPI starts
// only when an MPI launcher started this process (its environment says so):
// every other command, and `batch` run by hand, never initialise MPI.
#include <mpi.h>

#include <cstdlib>

#include "engine/error.hpp"
#include "tools/tilewave/batch_world.hpp"
#include "tools/tilewave/mpi_util.hpp"

namespace tw::cli {

std::unique_ptr<BatchWorld> open_local_batch_world();  // batch_world_local.cpp

namespace {

bool started_by_launcher() {
  for (const char* v : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK", "PMI_SIZE", "MPI_LOCALNRANKS"})
    if (std::getenv(v)) return true;
  return false;
}

class MpiWorld : public BatchWorld {
 public:
  MpiWorld() {
    int provided = 0;
    mpi_check(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided), "MPI_Init_thread");
    // Errors come back as codes (mpi_check() turns them into exceptions) rather
    // than aborting every rank from inside MPI.
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
    local_ = mpi_local_rank(rank_);
    char name[MPI_MAX_PROCESSOR_NAME] = {};
    int n = 0;
    MPI_Get_processor_name(name, &n);
    host_.assign(name, static_cast<size_t>(n));
    // The counter lives on rank 0; the others reach it by one-sided atomics.
    mpi_check(MPI_Win_allocate(rank_ == 0 ? sizeof(int64_t) : 0, sizeof(int64_t), MPI_INFO_NULL, MPI_COMM_WORLD, &base_,
                               &win_),
              "MPI_Win_allocate");
    if (rank_ == 0) {
      MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, win_);
      *base_ = 0;
      MPI_Win_unlock(0, win_);
    }
    MPI_Barrier(MPI_COMM_WORLD);
  }
  ~MpiWorld() override {
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_free(&win_);
    MPI_Finalize();
  }
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  int local_rank() const override { return local_; }
  std::string host() const override { return host_; }

  int64_t next() override {
    const int64_t one = 1;
    int64_t got = 0;
    mpi_check(MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win_), "MPI_Win_lock");
    mpi_check(MPI_Fetch_and_op(&one, &got, MPI_INT64_T, 0, 0, MPI_SUM, win_), "MPI_Fetch_and_op");
    mpi_check(MPI_Win_unlock(0, win_), "MPI_Win_unlock");
    return got;
  }

  std::vector<std::string> gather(const std::string& mine) override {
    const int len = static_cast<int>(mine.size());
    std::vector<int> lens(static_cast<size_t>(size_)), offs(static_cast<size_t>(size_));
    mpi_check(MPI_Gather(&len, 1, MPI_INT, lens.data(), 1, MPI_INT, 0, MPI_COMM_WORLD), "MPI_Gather");
    std::string all;
    if (rank_ == 0) {
      int total = 0;
      for (int r = 0; r < size_; ++r) offs[static_cast<size_t>(r)] = total, total += lens[static_cast<size_t>(r)];
      all.resize(static_cast<size_t>(total));
    }
    mpi_check(
        MPI_Gatherv(mine.data(), len, MPI_CHAR, all.data(), lens.data(), offs.data(), MPI_CHAR, 0, MPI_COMM_WORLD),
        "MPI_Gatherv");
    std::vector<std::string> out;
    if (rank_ == 0)
      for (int r = 0; r < size_; ++r)
        out.push_back(all.substr(static_cast<size_t>(offs[static_cast<size_t>(r)]),
                                 static_cast<size_t>(lens[static_cast<size_t>(r)])));
    return out;
  }

  bool any(bool mine) override {
    int in = mine ? 1 : 0, out = 0;
    mpi_check(MPI_Allreduce(&in, &out, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD), "MPI_Allreduce");
    return out != 0;
  }

 private:
  int rank_ = 0, size_ = 1, local_ = 0;
  std::string host_;
  int64_t* base_ = nullptr;
  MPI_Win win_ = MPI_WIN_NULL;
};

}  // namespace

std::unique_ptr<BatchWorld> open_batch_world() {
  if (!started_by_launcher()) return open_local_batch_world();
  return std::make_unique<MpiWorld>();
}

bool batch_has_mpi() {
  return true;
}

}  // namespace tw::cli
