#pragma once
// The ranks a command splits one slide over: those of MPI_COMM_WORLD when
// an MPI launcher started this process with several ranks (`mpirun -np 4
// tilewave pyramid IN OUT`), else none. `tilewave batch` turns it off: its
// ranks take whole slides (tools/tilewave/batch_world.hpp).
#include "engine/ranks/ranks.hpp"

namespace tw::cli {

// Null: this process does the whole slide. MPI starts on the first call.
Ranks* slide_ranks();
void disable_slide_ranks();
// Whether this process prints results and writes reports (rank 0, or the
// only process).
bool is_lead_rank();
// After this process's error line: ends every rank of the split (MPI_Abort),
// for ranks may be waiting on this one. Rank 0 ends them at once; the others
// give rank 0 a moment to say the error first (a failure in a job's
// protocol reaches every rank, and rank 0 names the failing one).
void end_slide_ranks_after_error();

}  // namespace tw::cli
