#pragma once
// The processes a batch runs on: one (no MPI, or not started by mpirun), or
// the ranks of MPI_COMM_WORLD when `tilewave batch` runs under mpirun.
// Ranks take slides from one shared counter (an MPI atomic fetch-and-add on
// rank 0's window), so a rank that finishes early simply takes the next one:
// dynamic load balancing without a coordinator that would idle a core.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace tw::cli {

class BatchWorld {
 public:
  virtual ~BatchWorld() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // This rank's index among the ranks on its host (picks its GPU).
  virtual int local_rank() const = 0;
  virtual std::string host() const = 0;
  // The next index of the shared counter (0, 1, 2, ... over all ranks).
  virtual int64_t next() = 0;
  // Rank 0 gets every rank's text, in rank order; other ranks get nothing.
  virtual std::vector<std::string> gather(const std::string& mine) = 0;
  // Whether any rank says true (all ranks call it).
  virtual bool any(bool mine) = 0;
};

// MPI when this build has it and the process was started by an MPI launcher;
// else a world of one process.
std::unique_ptr<BatchWorld> open_batch_world();
// Whether this build can run batches over MPI ranks.
bool batch_has_mpi();

}  // namespace tw::cli
