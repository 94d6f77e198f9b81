#include "engine/wavefront/wavefront.hpp"

#include <tbb/enumerable_thread_specific.h>
#include <tbb/parallel_for.h>
#include <tbb/parallel_for_each.h>
#include <tbb/task_arena.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <mutex>

#include "engine/ranks/ranks.hpp"
#include "engine/wavefront/ranked_wavefront.hpp"

namespace tw {
namespace {

// The overlap of two views; a GPU-sized tile (4096^2 or 8192^2) on all
// threads (one thread took ~15 ms for each copy of an 8192^2 tile).
void copy_tile(const ImageView& src, const ImageView& dst) {
  const Rect o = src.rect.intersect(dst.rect);
  if (o.w * o.h < (int64_t{1} << 20)) return copy_overlap(src, dst);
  const size_t n = static_cast<size_t>(o.w) * src.fmt.bytes_per_pixel();
  tbb::parallel_for(tbb::blocked_range<int64_t>(o.y, o.y1(), 64), [&](const tbb::blocked_range<int64_t>& r) {
    for (int64_t y = r.begin(); y < r.end(); ++y) std::memcpy(dst.ptr_bytes(o.x, y), src.ptr_bytes(o.x, y), n);
  });
}

enum : uint8_t { kIdle = 0, kQueued = 1, kRunning = 2, kRunningDirty = 3 };

// The last values each tile showed its neighbours: its four edge lines; and
// the mask on them (fixed), to tell whether a neighbour's edge can reach it.
struct Borders {
  std::mutex mu;
  std::vector<uint8_t> top, bottom, left, right;  // pixels, edge order left->right / top->bottom
  std::vector<uint8_t> mtop, mbottom, mleft, mright;
};

class Engine {
 public:
  Engine(ScratchStore& j, ScratchStore& i, const TilePropagator& rule, const WavefrontOptions& opt)
      : j_(j),
        i_(i),
        rule_(rule),
        grid_(j.grid()),
        bpp_(j.info().fmt.bytes_per_pixel()),
        eight_(opt.connectivity == 8),
        borders_(static_cast<size_t>(grid_.count())),
        state_(static_cast<size_t>(grid_.count())) {
    TW_ASSERT(opt.connectivity == 4 || opt.connectivity == 8);
    neutral_.resize(bpp_);
    rule_.neutral(neutral_.data());
  }

  WavefrontStats run() {
    const auto t0 = std::chrono::steady_clock::now();
    const int64_t n = grid_.count();
    // Every tile starts queued, with its initial borders published.
    tbb::parallel_for(int64_t{0}, n, [&](int64_t t) {
      const int64_t tx = t % grid_.cols(), ty = t / grid_.cols();
      const Rect core = grid_.tile_rect(tx, ty);
      {
        ScratchStore::Pin m = i_.acquire(tx, ty);
        Borders& b = borders_[static_cast<size_t>(t)];
        const ImageView v = m.image().view();
        b.mtop = line(v, core.x, core.y, 1, 0, core.w), b.mbottom = line(v, core.x, core.y1() - 1, 1, 0, core.w);
        b.mleft = line(v, core.x, core.y, 0, 1, core.h), b.mright = line(v, core.x1() - 1, core.y, 0, 1, core.h);
      }
      ScratchStore::Pin p = j_.acquire(tx, ty);
      publish(t, p.image().view(), core, nullptr);
      state_[static_cast<size_t>(t)].store(kQueued);
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
  int64_t index(int64_t tx, int64_t ty) const { return ty * grid_.cols() + tx; }

  void enqueue(int64_t t, tbb::feeder<int64_t>& feeder) {
    auto& s = state_[static_cast<size_t>(t)];
    for (;;) {
      uint8_t cur = s.load();
      if (cur == kQueued || cur == kRunningDirty) return;
      const uint8_t next = cur == kIdle ? kQueued : kRunningDirty;
      if (s.compare_exchange_weak(cur, next)) {
        if (next == kQueued) feeder.add(t);
        return;
      }
    }
  }

  void visit(int64_t t, tbb::feeder<int64_t>& feeder) {
    auto& s = state_[static_cast<size_t>(t)];
    s.store(kRunning);
    for (;;) {
      process(t, feeder);
      uint8_t cur = kRunning;
      if (s.compare_exchange_strong(cur, kIdle)) return;
      s.store(kRunning);  // was kRunningDirty: its halo changed meanwhile
    }
  }

  // Copies a neighbour's published edge pixels into the halo buffer.
  void halo_from(int64_t nt, int which, uint8_t* dst, size_t stride, int64_t count, int64_t offset) {
    Borders& b = borders_[static_cast<size_t>(nt)];
    std::lock_guard<std::mutex> l(b.mu);
    const std::vector<uint8_t>& e = which == 0 ? b.top : which == 1 ? b.bottom : which == 2 ? b.left : b.right;
    for (int64_t k = 0; k < count; ++k) std::memcpy(dst + k * stride, e.data() + (offset + k) * bpp_, bpp_);
  }

  void process(int64_t t, tbb::feeder<int64_t>& feeder) {
    ++visits_;
    const int64_t tx = t % grid_.cols(), ty = t / grid_.cols();
    const Rect core = grid_.tile_rect(tx, ty);
    ScratchStore::Pin jp = j_.acquire(tx, ty);
    ScratchStore::Pin ip = i_.acquire(tx, ty);
    Image& h = halo_buf_.local();
    const Rect hr = core.grown(1);
    if (h.empty() || !h.can_hold(j_.info().fmt, hr))
      h = Image(j_.info().fmt, hr);
    else
      h.reshape(j_.info().fmt, hr);
    const ImageView hv = h.view();
    copy_tile(jp.image().view(), hv.sub(core));
    // Halo: neighbours' published edges; neutral outside the image.
    for (int64_t x = hr.x; x < hr.x1(); ++x) std::memcpy(hv.ptr_bytes(x, hr.y), neutral_.data(), bpp_);
    for (int64_t x = hr.x; x < hr.x1(); ++x) std::memcpy(hv.ptr_bytes(x, hr.y1() - 1), neutral_.data(), bpp_);
    for (int64_t y = hr.y; y < hr.y1(); ++y) {
      std::memcpy(hv.ptr_bytes(hr.x, y), neutral_.data(), bpp_);
      std::memcpy(hv.ptr_bytes(hr.x1() - 1, y), neutral_.data(), bpp_);
    }
    const bool up = ty > 0, down = ty + 1 < grid_.rows(), left = tx > 0, right = tx + 1 < grid_.cols();
    const size_t row_step = bpp_;
    if (up) halo_from(index(tx, ty - 1), 1, hv.ptr_bytes(core.x, hr.y), row_step, core.w, 0);
    if (down) halo_from(index(tx, ty + 1), 0, hv.ptr_bytes(core.x, hr.y1() - 1), row_step, core.w, 0);
    if (left) halo_from(index(tx - 1, ty), 3, hv.ptr_bytes(hr.x, core.y), hv.stride, core.h, 0);
    if (right) halo_from(index(tx + 1, ty), 2, hv.ptr_bytes(hr.x1() - 1, core.y), hv.stride, core.h, 0);
    if (eight_) {
      // Corners: the nearest pixel of each diagonal neighbour.
      auto corner = [&](int64_t nx, int64_t ny, int which, int64_t at, int64_t hx, int64_t hy) {
        halo_from(index(nx, ny), which, hv.ptr_bytes(hx, hy), 0, 1, at);
      };
      if (up && left) corner(tx - 1, ty - 1, 1, grid_.tile_rect(tx - 1, ty - 1).w - 1, hr.x, hr.y);
      if (up && right) corner(tx + 1, ty - 1, 1, 0, hr.x1() - 1, hr.y);
      if (down && left) corner(tx - 1, ty + 1, 0, grid_.tile_rect(tx - 1, ty + 1).w - 1, hr.x, hr.y1() - 1);
      if (down && right) corner(tx + 1, ty + 1, 0, 0, hr.x1() - 1, hr.y1() - 1);
    }
    const bool changed = rule_.propagate(hv, ip.image().view().sub(core), core);
    if (!changed) return;
    copy_tile(hv.sub(core), jp.image().view());
    jp.mark_dirty();
    publish(t, hv, core, &feeder);
  }

  std::vector<uint8_t> line(const ImageView& v, int64_t x0, int64_t y0, int64_t dx, int64_t dy, int64_t n) const {
    std::vector<uint8_t> e(static_cast<size_t>(n) * bpp_);
    for (int64_t k = 0; k < n; ++k) std::memcpy(e.data() + k * bpp_, v.ptr_bytes(x0 + k * dx, y0 + k * dy), bpp_);
    return e;
  }

  // Whether pixels of `mine` (an edge) can change the neighbour's facing edge
  // (its published values and mask): pixel k touches the neighbour's k, and
  // with 8-connectivity k-1 and k+1. `only` >= 0 tests one pixel of mine
  // against one of theirs (diagonal neighbours' corners).
  bool reaches(const std::vector<uint8_t>& mine, int64_t nt, int which, int64_t only_mine = -1,
               int64_t only_theirs = -1) {
    Borders& b = borders_[static_cast<size_t>(nt)];
    std::lock_guard<std::mutex> l(b.mu);
    const std::vector<uint8_t>& j = which == 0 ? b.top : which == 1 ? b.bottom : which == 2 ? b.left : b.right;
    const std::vector<uint8_t>& m = which == 0 ? b.mtop : which == 1 ? b.mbottom : which == 2 ? b.mleft : b.mright;
    if (j.empty()) return true;
    if (only_mine >= 0)
      return rule_.can_propagate(mine.data() + only_mine * bpp_, j.data() + only_theirs * bpp_,
                                 m.data() + only_theirs * bpp_);
    const int64_t n = static_cast<int64_t>(mine.size() / bpp_);
    for (int64_t k = 0; k < n; ++k)
      for (int64_t d = eight_ ? -1 : 0; d <= (eight_ ? 1 : 0); ++d) {
        const int64_t q = k + d;
        if (q < 0 || q >= n) continue;
        if (rule_.can_propagate(mine.data() + k * bpp_, j.data() + q * bpp_, m.data() + q * bpp_)) return true;
      }
    return false;
  }

  // Records the tile's edges; with a feeder, queues each neighbour that a
  // changed edge can now reach.
  void publish(int64_t t, const ImageView& v, const Rect& core, tbb::feeder<int64_t>* feeder) {
    const int64_t tx = t % grid_.cols(), ty = t / grid_.cols();
    Borders& b = borders_[static_cast<size_t>(t)];
    std::vector<uint8_t> top = line(v, core.x, core.y, 1, 0, core.w),
                         bottom = line(v, core.x, core.y1() - 1, 1, 0, core.w);
    std::vector<uint8_t> left = line(v, core.x, core.y, 0, 1, core.h),
                         right = line(v, core.x1() - 1, core.y, 0, 1, core.h);
    bool c_top, c_bottom, c_left, c_right, c_tl, c_tr, c_bl, c_br;
    {
      std::lock_guard<std::mutex> l(b.mu);
      auto differs = [&](const std::vector<uint8_t>& a, const std::vector<uint8_t>& o) { return a != o; };
      auto px_differs = [&](const std::vector<uint8_t>& a, const std::vector<uint8_t>& o, int64_t k) {
        return o.empty() || std::memcmp(a.data() + k * bpp_, o.data() + k * bpp_, bpp_) != 0;
      };
      c_top = differs(top, b.top), c_bottom = differs(bottom, b.bottom);
      c_left = differs(left, b.left), c_right = differs(right, b.right);
      c_tl = px_differs(top, b.top, 0), c_tr = px_differs(top, b.top, core.w - 1);
      c_bl = px_differs(bottom, b.bottom, 0), c_br = px_differs(bottom, b.bottom, core.w - 1);
      b.top = top, b.bottom = bottom, b.left = left, b.right = right;
    }
    if (!feeder) return;
    const bool up = ty > 0, down = ty + 1 < grid_.rows(), lft = tx > 0, rgt = tx + 1 < grid_.cols();
    const int64_t w = core.w, h = core.h;
    if (up && c_top && reaches(top, index(tx, ty - 1), 1)) enqueue(index(tx, ty - 1), *feeder);
    if (down && c_bottom && reaches(bottom, index(tx, ty + 1), 0)) enqueue(index(tx, ty + 1), *feeder);
    if (lft && c_left && reaches(left, index(tx - 1, ty), 3)) enqueue(index(tx - 1, ty), *feeder);
    if (rgt && c_right && reaches(right, index(tx + 1, ty), 2)) enqueue(index(tx + 1, ty), *feeder);
    if (eight_) {
      // A corner pixel touches one pixel of the diagonal neighbour: the end
      // of its facing edge line.
      auto corner_w = [&](int64_t nx, int64_t ny) { return grid_.tile_rect(nx, ny).w; };
      if (up && lft && c_tl && reaches(top, index(tx - 1, ty - 1), 1, 0, corner_w(tx - 1, ty - 1) - 1))
        enqueue(index(tx - 1, ty - 1), *feeder);
      if (up && rgt && c_tr && reaches(top, index(tx + 1, ty - 1), 1, w - 1, 0))
        enqueue(index(tx + 1, ty - 1), *feeder);
      if (down && lft && c_bl && reaches(bottom, index(tx - 1, ty + 1), 0, 0, corner_w(tx - 1, ty + 1) - 1))
        enqueue(index(tx - 1, ty + 1), *feeder);
      if (down && rgt && c_br && reaches(bottom, index(tx + 1, ty + 1), 0, w - 1, 0))
        enqueue(index(tx + 1, ty + 1), *feeder);
    }
    (void)h;
  }

  ScratchStore& j_;
  ScratchStore& i_;
  const TilePropagator& rule_;
  TileGrid grid_;
  size_t bpp_;
  bool eight_;
  std::vector<uint8_t> neutral_;
  std::vector<Borders> borders_;
  std::vector<std::atomic<uint8_t>> state_;
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
