// A batch world of one process: builds without MPI.
#include <unistd.h>

#include "tools/tilewave/batch_world.hpp"

namespace tw::cli {
namespace {

class LocalWorld : public BatchWorld {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  int local_rank() const override { return 0; }
  std::string host() const override {
    char name[256] = {};
    ::gethostname(name, sizeof name - 1);
    return name;
  }
  int64_t next() override { return next_++; }
  std::vector<std::string> gather(const std::string& mine) override { return {mine}; }
  bool any(bool mine) override { return mine; }

 private:
  int64_t next_ = 0;
};

}  // namespace

std::unique_ptr<BatchWorld> open_local_batch_world() {
  return std::make_unique<LocalWorld>();
}

#ifndef TW_HAVE_MPI
std::unique_ptr<BatchWorld> open_batch_world() {
  return open_local_batch_world();
}
bool batch_has_mpi() {
  return false;
}
#endif

}  // namespace tw::cli
