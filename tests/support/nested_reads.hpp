#pragma once
// Inputs whose reads run parallel loops of their own, as an op chain's do,
// and a run on 16 TBB threads whatever the cores: a thread waiting in such
// a loop may take up other work of the same job meanwhile (TBB's work
// stealing), which must not reuse what the interrupted work still holds
// (thread-local buffers, locks). A job that does so gave wrong pixels or a
// heap corruption on 16 cores, and does here on 2.

#include <tbb/global_control.h>
#include <tbb/parallel_for.h>
#include <tbb/partitioner.h>
#include <tbb/task_arena.h>

#include <chrono>
#include <memory>
#include <thread>
#include <utility>

#include "engine/tile_source.hpp"

namespace tw::test {

class NestedLoopSource final : public TileSource {
 public:
  explicit NestedLoopSource(std::shared_ptr<const TileSource> in) : in_(std::move(in)) { info_ = in_->info(); }

 protected:
  void read_inside(int level, const ImageView& dst) const override {
    // Short sleeps: other threads take some of the loop's iterations, so
    // this one waits for them, and steals meanwhile.
    tbb::parallel_for(
        0, 8, [](int) { std::this_thread::sleep_for(std::chrono::microseconds(500)); }, tbb::simple_partitioner());
    in_->read(level, dst);
  }

 private:
  std::shared_ptr<const TileSource> in_;
};

inline std::shared_ptr<const TileSource> nested_loop_reads(std::shared_ptr<const TileSource> in) {
  return std::make_shared<NestedLoopSource>(std::move(in));
}

// f() on 16 threads (an arena of 16 gets them on 2 cores only with TBB's
// limit raised).
template <class F>
void on_sixteen_threads(F&& f) {
  tbb::global_control limit(tbb::global_control::max_allowed_parallelism, 16);
  tbb::task_arena arena(16);
  arena.execute(std::forward<F>(f));
}

}  // namespace tw::test
