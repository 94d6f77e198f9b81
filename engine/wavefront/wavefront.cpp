#include "engine/wavefront/wavefront.hpp"

#include <tbb/enumerable_thread_specific.h>
#include <tbb/parallel_for.h>
#include <tbb/parallel_for_each.h>
#include <tbb/task_arena.h>

#include <atomic>
#include <chrono>

#include "engine/ranks/ranks.hpp"
#include "engine/wavefront/ranked_wavefront.hpp"
#include "engine/wavefront/tile_borders.hpp"
#include "engine/wavefront/tile_states.hpp"

namespace tw {
namespace {

class Engine {
 public:
  Engine(ScratchStore& j, ScratchStore& i, const TilePropagator& rule, const WavefrontOptions& opt)
      : j_(j),
        i_(i),
        rule_(rule),
        grid_(j.grid()),
        borders_(grid_, j.info().fmt, opt.connectivity, rule),
        state_(grid_.count()) {}

  WavefrontStats run() {
    const auto t0 = std::chrono::steady_clock::now();
    const int64_t n = grid_.count();
    // Every tile starts queued, with its initial borders published.
    tbb::parallel_for(int64_t{0}, n, [&](int64_t t) {
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
    std::vector<int64_t> all(static_cast<size_t>(n));
    for (int64_t t = 0; t < n; ++t) all[static_cast<size_t>(t)] = t;
    tbb::parallel_for_each(all.begin(), all.end(), [&](int64_t t, tbb::feeder<int64_t>& feeder) { visit(t, feeder); });
    WavefrontStats st;
    st.tiles = n;
    st.tile_visits = visits_.load();
    st.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return st;
  }

 private:
  int64_t index(int64_t tx, int64_t ty) const { return borders_.index(tx, ty); }

  void enqueue(int64_t t, tbb::feeder<int64_t>& feeder) {
    if (state_.wake(t)) feeder.add(t);
  }

  void visit(int64_t t, tbb::feeder<int64_t>& feeder) {
    state_.run(t, [&] { process(t, feeder); });
  }

  void process(int64_t t, tbb::feeder<int64_t>& feeder) {
    ++visits_;
    borders_.step(j_, i_, t, halo_buf_.local(),
                  [&](const ImageView& hv, const Rect& core) { publish(t, hv, core, &feeder); });
  }

  // Records the tile's edges; with a feeder, queues each neighbour that a
  // changed edge can now reach.
  void publish(int64_t t, const ImageView& v, const Rect& core, tbb::feeder<int64_t>* feeder) {
    const int64_t tx = t % grid_.cols(), ty = t / grid_.cols();
    const EdgeRecord r = borders_.record(t, v, core, !feeder);
    if (!feeder) return;
    using S = TileBorders::Side;
    const TileEdges& e = r.edges;
    const bool up = ty > 0, down = ty + 1 < grid_.rows(), lft = tx > 0, rgt = tx + 1 < grid_.cols();
    const int64_t w = core.w;
    if (up && r.top && borders_.reaches(e.top, index(tx, ty - 1), S::kBottom)) enqueue(index(tx, ty - 1), *feeder);
    if (down && r.bottom && borders_.reaches(e.bottom, index(tx, ty + 1), S::kTop)) enqueue(index(tx, ty + 1), *feeder);
    if (lft && r.left && borders_.reaches(e.left, index(tx - 1, ty), S::kRight)) enqueue(index(tx - 1, ty), *feeder);
    if (rgt && r.right && borders_.reaches(e.right, index(tx + 1, ty), S::kLeft)) enqueue(index(tx + 1, ty), *feeder);
    if (borders_.eight()) {
      // A corner pixel touches one pixel of the diagonal neighbour: the end
      // of its facing edge line.
      auto corner_w = [&](int64_t nx, int64_t ny) { return grid_.tile_rect(nx, ny).w; };
      if (up && lft && r.top_left &&
          borders_.reaches(e.top, index(tx - 1, ty - 1), S::kBottom, 0, corner_w(tx - 1, ty - 1) - 1))
        enqueue(index(tx - 1, ty - 1), *feeder);
      if (up && rgt && r.top_right && borders_.reaches(e.top, index(tx + 1, ty - 1), S::kBottom, w - 1, 0))
        enqueue(index(tx + 1, ty - 1), *feeder);
      if (down && lft && r.bottom_left &&
          borders_.reaches(e.bottom, index(tx - 1, ty + 1), S::kTop, 0, corner_w(tx - 1, ty + 1) - 1))
        enqueue(index(tx - 1, ty + 1), *feeder);
      if (down && rgt && r.bottom_right && borders_.reaches(e.bottom, index(tx + 1, ty + 1), S::kTop, w - 1, 0))
        enqueue(index(tx + 1, ty + 1), *feeder);
    }
  }

  ScratchStore& j_;
  ScratchStore& i_;
  const TilePropagator& rule_;
  TileGrid grid_;
  TileBorders borders_;
  TileStates state_;
  std::atomic<int64_t> visits_{0};
  tbb::enumerable_thread_specific<Image> halo_buf_;
};

}  // namespace

WavefrontStats run_wavefront(ScratchStore& j, ScratchStore& i, const TilePropagator& rule,
                             const WavefrontOptions& opt) {
  TW_ASSERT(j.info().fmt == i.info().fmt && j.grid().width == i.grid().width && j.grid().height == i.grid().height &&
            j.grid().tile_w == i.grid().tile_w);
  if (opt.ranks && opt.ranks->size() > 1) return run_ranked_wavefront(j, i, rule, opt);
  Engine e(j, i, rule, opt);
  if (opt.max_concurrency <= 0) return e.run();
  tbb::task_arena arena(opt.max_concurrency);
  return arena.execute([&] { return e.run(); });
}

}  // namespace tw
