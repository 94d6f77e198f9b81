// A build without MPI: every process does the whole slide.
#include <memory>

#include "engine/ranks/ranks.hpp"

namespace tw::cli {

std::unique_ptr<Ranks> open_mpi_slide_ranks() {
  return nullptr;
}

}  // namespace tw::cli
