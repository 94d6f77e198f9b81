#pragma once
// What the two users of MPI in the CLI share (batch_world_mpi.cpp: whole
// slides per rank; mpi_ranks.cpp: one slide split over ranks).
#include <mpi.h>

#include <string>

#include "engine/error.hpp"

namespace tw::cli {

// MPI's errors come back as codes (MPI_ERRORS_RETURN): thrown with MPI's text.
inline void mpi_check(int rc, const char* what) {
  if (rc != MPI_SUCCESS) {
    char msg[MPI_MAX_ERROR_STRING] = {};
    int n = 0;
    MPI_Error_string(rc, msg, &n);
    throw InternalError(std::string("MPI: ") + what + " failed: " + msg);
  }
}

// This rank's index among the ranks on its host (picks its GPU).
inline int mpi_local_rank(int rank) {
  MPI_Comm node;
  mpi_check(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node), "split by host");
  int local = 0;
  MPI_Comm_rank(node, &local);
  MPI_Comm_free(&node);
  return local;
}

}  // namespace tw::cli
