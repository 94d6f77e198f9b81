#include "engine/wavefront/wavefront.hpp"

#include <tbb/parallel_for.h>
#include <tbb/parallel_for_each.h>
#include <tbb/task_arena.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <vector>

#include "engine/ranks/ranks.hpp"
#include "engine/wavefront/ranked_wavefront.hpp"
#include "engine/wavefront/tile_borders.hpp"
#include "engine/wavefront/tile_states.hpp"

namespace tw {
namespace {

// Halo buffers, one per tile in work, reused: taken from a pool rather than
// kept per thread, because a tile's step may run on a thread of another
// arena (Engine::process) that could be inside a step of its own.
class HaloBuffers {
 public:
  Image take() {
    std::lock_guard<std::mutex> l(mu_);
    if (free_.empty()) return Image();
    Image b = std::move(free_.back());
    free_.pop_back();
    return b;
  }
  void give(Image b) {
    std::lock_guard<std::mutex> l(mu_);
    free_.push_back(std::move(b));
  }

 private:
  std::mutex mu_;
  std::vector<Image> free_;
};

class Engine {
 public:
  // work: where each tile's data work runs (copies, the rule's packing) when
  // the tiles themselves run in a smaller arena; null: where they run.
  Engine(ScratchStore& j, ScratchStore& i, const TilePropagator& rule, const WavefrontOptions& opt,
         tbb::task_arena* work)
      : j_(j),
        i_(i),
        grid_(j.grid()),
        borders_(grid_, j.info().fmt, opt.connectivity, rule),
        state_(grid_.count()),
        work_(work) {}

  // Every tile starts queued, with its initial borders published.
  void publish_initial() {
    tbb::parallel_for(int64_t{0}, grid_.count(), [&](int64_t t) {
      const int64_t tx = t % grid_.cols(), ty = t / grid_.cols();
      const Rect core = grid_.tile_rect(tx, ty);
      {
        ScratchStore::Pin m = i_.acquire(tx, ty);
        borders_.record_mask(t, m.image().view(), core);
      }
      ScratchStore::Pin p = j_.acquire(tx, ty);
      publish(t, p.image().view(), core, nullptr);
      state_.set_queued(t);
    });
  }

  WavefrontStats propagate(double seconds_before) {
    const auto t0 = std::chrono::steady_clock::now();
    const int64_t n = grid_.count();
    std::vector<int64_t> all(static_cast<size_t>(n));
    for (int64_t t = 0; t < n; ++t) all[static_cast<size_t>(t)] = t;
    tbb::parallel_for_each(all.begin(), all.end(), [&](int64_t t, tbb::feeder<int64_t>& feeder) { visit(t, feeder); });
    WavefrontStats st;
    st.tiles = n;
    st.tile_visits = visits_.load();
    st.seconds = seconds_before + std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return st;
  }

 private:
  int64_t index(int64_t tx, int64_t ty) const { return borders_.index(tx, ty); }

  void enqueue(int64_t t, std::vector<int64_t>& woken) {
    if (state_.wake(t)) woken.push_back(t);
  }

  void visit(int64_t t, tbb::feeder<int64_t>& feeder) {
    state_.run(t, [&] { process(t, feeder); });
  }

  void process(int64_t t, tbb::feeder<int64_t>& feeder) {
    ++visits_;
    std::vector<int64_t> woken;
    auto step = [&] {
      Image buf = bufs_.take();
      borders_.step(j_, i_, t, buf, [&](const ImageView& hv, const Rect& core) { publish(t, hv, core, &woken); });
      bufs_.give(std::move(buf));
    };
    // With CUDA two tiles are in work at once, but each tile's copies and
    // bit packing (8192^2 pixels) want every core: limited to the tiles'
    // arena of two threads they took 2.5 s of a 2-GP fill-holes whose
    // kernels took 0.03 s. The neighbours are queued here, in the tiles'
    // arena, whatever thread ran the step. Isolated: a thread waiting for
    // its step's parallel loops (inside the GPU rule's lock) must not take
    // up the other tile's step meanwhile, which would wait for that lock.
    if (work_)
      work_->execute([&] { tbb::this_task_arena::isolate(step); });
    else
      step();
    for (int64_t nt : woken) feeder.add(nt);
  }

  // Records the tile's edges; with `woken`, wakes each neighbour that a
  // changed edge can now reach (those to queue are added to it).
  void publish(int64_t t, const ImageView& v, const Rect& core, std::vector<int64_t>* woken) {
    const int64_t tx = t % grid_.cols(), ty = t / grid_.cols();
    const EdgeRecord r = borders_.record(t, v, core, !woken);
    if (!woken) return;
    using S = TileBorders::Side;
    const TileEdges& e = r.edges;
    const bool up = ty > 0, down = ty + 1 < grid_.rows(), lft = tx > 0, rgt = tx + 1 < grid_.cols();
    const int64_t w = core.w;
    if (up && r.top && borders_.reaches(e.top, index(tx, ty - 1), S::kBottom)) enqueue(index(tx, ty - 1), *woken);
    if (down && r.bottom && borders_.reaches(e.bottom, index(tx, ty + 1), S::kTop)) enqueue(index(tx, ty + 1), *woken);
    if (lft && r.left && borders_.reaches(e.left, index(tx - 1, ty), S::kRight)) enqueue(index(tx - 1, ty), *woken);
    if (rgt && r.right && borders_.reaches(e.right, index(tx + 1, ty), S::kLeft)) enqueue(index(tx + 1, ty), *woken);
    if (borders_.eight()) {
      // A corner pixel touches one pixel of the diagonal neighbour: the end
      // of its facing edge line.
      auto corner_w = [&](int64_t nx, int64_t ny) { return grid_.tile_rect(nx, ny).w; };
      if (up && lft && r.top_left &&
          borders_.reaches(e.top, index(tx - 1, ty - 1), S::kBottom, 0, corner_w(tx - 1, ty - 1) - 1))
        enqueue(index(tx - 1, ty - 1), *woken);
      if (up && rgt && r.top_right && borders_.reaches(e.top, index(tx + 1, ty - 1), S::kBottom, w - 1, 0))
        enqueue(index(tx + 1, ty - 1), *woken);
      if (down && lft && r.bottom_left &&
          borders_.reaches(e.bottom, index(tx - 1, ty + 1), S::kTop, 0, corner_w(tx - 1, ty + 1) - 1))
        enqueue(index(tx - 1, ty + 1), *woken);
      if (down && rgt && r.bottom_right && borders_.reaches(e.bottom, index(tx + 1, ty + 1), S::kTop, w - 1, 0))
        enqueue(index(tx + 1, ty + 1), *woken);
    }
  }

  ScratchStore& j_;
  ScratchStore& i_;
  TileGrid grid_;
  TileBorders borders_;
  TileStates state_;
  tbb::task_arena* work_;
  std::atomic<int64_t> visits_{0};
  HaloBuffers bufs_;
};

}  // namespace

WavefrontStats run_wavefront(ScratchStore& j, ScratchStore& i, const TilePropagator& rule,
                             const WavefrontOptions& opt) {
  TW_ASSERT(j.info().fmt == i.info().fmt && j.grid().width == i.grid().width && j.grid().height == i.grid().height &&
            j.grid().tile_w == i.grid().tile_w);
  if (opt.ranks && opt.ranks->size() > 1) return run_ranked_wavefront(j, i, rule, opt);
  const auto t0 = std::chrono::steady_clock::now();
  if (opt.max_concurrency <= 0) {
    Engine e(j, i, rule, opt, nullptr);
    e.publish_initial();
    return e.propagate(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  // Tiles in work limited by an arena of their own; their data work in the
  // caller's.
  tbb::task_arena caller(tbb::task_arena::attach{});
  Engine e(j, i, rule, opt, &caller);
  e.publish_initial();
  const double before = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  tbb::task_arena tiles(opt.max_concurrency);
  return tiles.execute([&] { return e.propagate(before); });
}

}  // namespace tw
