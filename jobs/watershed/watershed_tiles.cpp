#include "jobs/watershed/watershed_tiles.hpp"

#include <tbb/enumerable_thread_specific.h>
#include <tbb/global_control.h>
#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstring>
#include <exception>
#include <mutex>
#include <queue>
#include <thread>
#include <vector>

#include "engine/error.hpp"
#include "engine/sample_dispatch.hpp"
#include "jobs/watershed/tile_blobs.hpp"
#include "kernels/watershed/watershed.hpp"

namespace tw {
namespace {

bool same(const WsCost& a, const WsCost& b) {
  return a.m == b.m && a.d == b.d && a.label == b.label;
}

// Whether a path of cost v, extended to an edge pixel (key, current cost c),
// is one of its cheapest offers or cheaper: then it may decide the pixel.
bool offers(const WsCost& v, uint32_t key, const WsCost& c) {
  return v.m != kWsUnreached && !ws_cheaper(c, ws_extend(v, key));
}

constexpr int kDx[8] = {1, -1, 0, 0, 1, 1, -1, -1};
constexpr int kDy[8] = {0, 0, 1, -1, 1, -1, 1, -1};

// A tile's halo ring (top row with its corners, bottom row likewise, left
// column, right column) and its own edge pixels (top row, bottom row, left
// column, right column; corners in two of them), as flat arrays.
struct Shape {
  int64_t w, h;
  size_t ring_size() const { return static_cast<size_t>(2 * (w + 2) + 2 * h); }
  size_t edge_size() const { return static_cast<size_t>(2 * w + 2 * h); }
  void ring_pos(int64_t k, int64_t& x, int64_t& y) const {
    if (k < w + 2)
      x = k - 1, y = -1;
    else if (k < 2 * (w + 2))
      x = k - (w + 2) - 1, y = h;
    else if (k < 2 * (w + 2) + h)
      x = -1, y = k - 2 * (w + 2);
    else
      x = w, y = k - 2 * (w + 2) - h;
  }
  int64_t edge_of(int64_t x, int64_t y) const {
    return y == 0 ? x : y == h - 1 ? w + x : x == 0 ? 2 * w + y : 2 * w + h + y;
  }
  void edge_pos(int64_t e, int64_t& x, int64_t& y) const {
    if (e < w)
      x = e, y = 0;
    else if (e < 2 * w)
      x = e - w, y = h - 1;
    else if (e < 2 * w + h)
      x = 0, y = e - 2 * w;
    else
      x = w - 1, y = e - 2 * w - h;
  }
};

// A live tile's edge state, a blob of its own in the store beside the
// tile's pixels (29 bytes an edge pixel, 0.45 a pixel of the image with
// 256-px tiles: 0.9 GB for a 2-GP slide, so it is spilled with the tiles,
// not kept): the edge pixels' costs, the halo last flooded against, and the
// edge pixels' inputs packed (the key, and kEdgeInside | kEdgeSeed: 5 bytes,
// not a WsInput's 12). Costs start unreached (kWsNeutral).
struct EdgeBlob {
  WsCost* edges = nullptr;  // edge_size; neighbours read them under the tile's mutex
  WsCost* halo = nullptr;   // ring_size
  uint32_t* key = nullptr;  // edge_size
  uint8_t* flags = nullptr;

  static size_t bytes_for(const Shape& sh) {
    return (sh.edge_size() + sh.ring_size()) * sizeof(WsCost) + sh.edge_size() * (sizeof(uint32_t) + 1);
  }
  static EdgeBlob over(uint8_t* p, const Shape& sh) {
    EdgeBlob b;
    b.edges = reinterpret_cast<WsCost*>(p);
    b.halo = b.edges + sh.edge_size();
    b.key = reinterpret_cast<uint32_t*>(b.halo + sh.ring_size());
    b.flags = reinterpret_cast<uint8_t*>(b.key + sh.edge_size());
    return b;
  }
};

struct TileState {
  std::mutex mu;  // guards the edge blob's `edges`: neighbours read them while the tile publishes
  // Written by the tile's own loading and visits only (never two at once).
  bool live = false;     // has a mask pixel
  bool flooded = false;  // the core is the fixed point against the halo
  // Some edge cost may be reached: neighbours read them (before, all are
  // unreached and neither the blob nor the lock is needed).
  std::atomic<bool> published{false};
};

enum : uint8_t { kIdle = 0, kQueued = 1, kRunning = 2, kRunningDirty = 3 };
enum : uint8_t { kEdgeInside = 1, kEdgeSeed = 2 };

// Per-thread buffers, reused.
struct Work {
  Image jb, ib;                    // WsCost over the core grown by one; WsInput over the core
  std::vector<uint8_t> in_region;  // w * h, all zero between uses
  std::vector<int32_t> pos;        // w * h: index in the blob, -1 outside the mask (between uses too)
  std::vector<uint32_t> region, starts, stack;
  std::vector<WsCost> ring, edges, old;
};

std::string nan_in(const float* s, int64_t x0, int64_t y, int64_t n, const std::string& name) {
  for (int64_t x = 0; x < n; ++x)
    if (std::isnan(s[x]))
      return "the image " + name + " has NaN at (" + std::to_string(x0 + x) + ", " + std::to_string(y) +
             "); watershed needs ordered altitudes (replace NaN first, e.g. filter convert)";
  return "";
}

// One row of the fixed raster in one pass: the altitude's key, whether the
// pixel is inside the mask (M = void: no mask, all inside), and its marker
// (dropped outside the mask, as scikit-image does). Returns the seeds.
template <class T, class M>
int64_t inputs_of(const uint8_t* img, const uint8_t* mask, const uint32_t* markers, WsInput* in, int64_t n) {
  const T* s = reinterpret_cast<const T*>(img);
  int64_t seeds = 0;
  for (int64_t x = 0; x < n; ++x) {
    uint32_t inside = 1;
    if constexpr (!std::is_void_v<M>) inside = reinterpret_cast<const M*>(mask)[x] != M(0);
    const uint32_t seed = inside ? markers[x] : 0;
    in[x] = WsInput{ws_key(s[x]), seed, inside};
    seeds += seed != 0;
  }
  return seeds;
}

void ensure(Image& img, PixelFormat fmt, const Rect& r) {
  if (img.empty() || !img.can_hold(fmt, r))
    img = Image(fmt, r);
  else
    img.reshape(fmt, r);
}

size_t ws_blob_budget(const WsTilesOptions& opt) {
  return opt.memory / 8 * 7;
}

class Engine {
 public:
  Engine(const TileSource& image, const TileSource& markers, const TileSource* mask, const WsTilesOptions& opt,
         int key_bytes, const TileGrid& grid, BlobStore& blobs)
      : image_(image),
        markers_(markers),
        mask_(mask),
        opt_(opt),
        kb_(key_bytes),
        blobs_(blobs),
        grid_(grid),
        eight_(opt.connectivity == 8),
        tiles_(static_cast<size_t>(grid_.count())),
        state_(static_cast<size_t>(grid_.count()), kIdle),
        pending_(static_cast<size_t>(grid_.count()), 0) {}

  std::vector<TileState>& tiles() { return tiles_; }

  void load_all(WsTilesStats& st) {
    tbb::parallel_for(int64_t{0}, grid_.count(), [&](int64_t t) {
      if (!failed_) load(t);
    });
    if (failed_) throw InputError(error_);
    st.seed_pixels = seeds_.load();
    st.edge_state_bytes = edge_bytes_.load();
    st.loaded_pixels = loaded_px_.load();
  }

  // Tiles wait in one queue ordered by the cheapest edge cost that changed
  // next to them, and `threads` workers take the cheapest: floods then cross
  // tile borders roughly in cost order, as inside a tile, so a tile is
  // rarely flooded before the cheaper paths into it have arrived (a FIFO
  // order re-flooded tiles several times as better paths came in).
  void run(WsTilesStats& st, int threads) {
    int64_t live = 0;
    for (int64_t t = 0; t < grid_.count(); ++t) {
      TileState& ts = tile(t);
      if (!ts.live) continue;
      ++live;
      if (!ts.flooded) enqueue(t, 0);
      if (ts.published) {
        const Rect core = grid_.tile_rect(t % grid_.cols(), t / grid_.cols());
        const BlobStore::Pin p = blobs_.acquire(edge_blob(t));
        announce(t, core, nullptr, EdgeBlob::over(p.data(), Shape{core.w, core.h}).edges);
      }
    }
    std::vector<std::thread> pool;
    for (int k = 0; k < std::max(threads, 1); ++k) pool.emplace_back([this] { worker(); });
    for (std::thread& th : pool) th.join();
    if (failed_) std::rethrow_exception(exception_);
    for (int64_t t = 0; t < grid_.count(); ++t)
      if (tile(t).live) blobs_.drop(edge_blob(t));  // only the labels are read after
    st.live_tiles = live;
    st.visits = visits_.load();
    st.floods = floods_.load();
    st.flooded_pixels = flooded_px_.load();
  }

 private:
  int64_t index(int64_t tx, int64_t ty) const { return ty * grid_.cols() + tx; }
  int64_t edge_blob(int64_t t) const { return grid_.count() + t; }  // the store's entry for t's edge state
  TileState& tile(int64_t t) { return tiles_[static_cast<size_t>(t)]; }

  void fail(const std::string& e) {
    std::lock_guard<std::mutex> l(mu_);
    if (error_.empty()) error_ = e;
    failed_ = true;
  }

  // Points pos at the blob's pixels (set) or back at -1.
  static void map(const TileBlob& b, int64_t w, int64_t h, std::vector<int32_t>& pos, bool set) {
    for (int64_t y = 0; y < h; ++y)
      for (uint32_t r = b.row_run[y]; r < b.row_run[y + 1]; ++r)
        for (uint32_t i = 0; i < b.run_len[r]; ++i)
          pos[static_cast<size_t>(y * w + b.run_x[r] + i)] = set ? static_cast<int32_t>(b.run_px[r] + i) : -1;
  }

  // Reads the tile of every input once: packs it (tiles with a mask pixel
  // only), stores the seeds' labels and, on the CPU, floods the tile from
  // its own seeds against an unreached halo.
  void load(int64_t t) {
    const int64_t tx = t % grid_.cols(), ty = t / grid_.cols();
    const Rect core = grid_.tile_rect(tx, ty);
    const Shape sh{core.w, core.h};
    // The inputs are read first, the thread's Work taken after: a read's
    // own parallel loops may run another tile's load on this thread while
    // it waits, which takes (and reshapes) the same Work.
    const Image img = image_.read(0, core);
    Image ms;
    if (mask_) ms = mask_->read(0, core);
    int64_t n_inside = core.w * core.h;
    if (mask_) {
      n_inside = 0;
      with_sample_type(ms.fmt().type, [&](auto s) {
        using T = decltype(s);
        for (int64_t y = core.y; y < core.y1(); ++y) {
          const T* m = ms.row<T>(y);
          for (int64_t x = 0; x < core.w; ++x) n_inside += m[x] != T(0);
        }
      });
    }
    TileState& st = tile(t);
    const std::string& name = image_.info().path;
    if (n_inside == 0) {  // never stored, never visited: reads as 0
      // NaN is refused wherever it is, as in a tile that is loaded.
      if (img.fmt().type == SampleType::kF32)
        for (int64_t y = core.y; y < core.y1(); ++y) {
          const std::string e = nan_in(img.row<float>(y), core.x, y, core.w, name);
          if (!e.empty()) return fail(e);
        }
      return;
    }
    const Image mk = markers_.read(0, core);
    Work& wk = work_.local();
    ensure(wk.ib, kWsFormat, core);
    const ImageView ib = wk.ib.view();
    int64_t n_seeds = 0;
    if (img.fmt().type == SampleType::kF32)
      for (int64_t y = core.y; y < core.y1(); ++y) {
        const std::string e = nan_in(img.row<float>(y), core.x, y, core.w, name);
        if (!e.empty()) return fail(e);
      }
    auto rows = [&](auto t, auto m) {
      using T = decltype(t);
      using M = typename decltype(m)::type;
      for (int64_t y = core.y; y < core.y1(); ++y)
        n_seeds += inputs_of<T, M>(img.row_bytes(y), mask_ ? ms.row_bytes(y) : nullptr, mk.row<uint32_t>(y),
                                   ib.row<WsInput>(y), core.w);
    };
    auto with_image = [&](auto m) {
      switch (img.fmt().type) {
        case SampleType::kU8:
          return rows(uint8_t{}, m);
        case SampleType::kU16:
          return rows(uint16_t{}, m);
        default:
          return rows(float{}, m);
      }
    };
    if (mask_)
      with_sample_type(ms.fmt().type, [&](auto s) { with_image(std::common_type<decltype(s)>{}); });
    else
      with_image(std::common_type<void>{});
    st.live = true;
    seeds_ += n_seeds;
    std::vector<uint8_t> edge_bytes(EdgeBlob::bytes_for(sh));
    edge_bytes_ += edge_bytes.size();
    const EdgeBlob eb = EdgeBlob::over(edge_bytes.data(), sh);
    std::fill(eb.edges, eb.edges + sh.edge_size(), kWsNeutral);
    std::fill(eb.halo, eb.halo + sh.ring_size(), kWsNeutral);
    for (int64_t e = 0; e < static_cast<int64_t>(sh.edge_size()); ++e) {
      int64_t x, y;
      sh.edge_pos(e, x, y);
      const WsInput& in = *ib.ptr<WsInput>(core.x + x, core.y + y);
      eb.key[e] = in.key;
      eb.flags[e] = static_cast<uint8_t>((in.inside ? kEdgeInside : 0) | (in.seed ? kEdgeSeed : 0));
    }
    // On the CPU the tile's flood from its own seeds, against an unreached
    // halo; with CUDA the first visit's. Without a seed nothing is reached:
    // the unreached tile is the fixed point against an unreached halo.
    st.flooded = n_seeds == 0 || !opt_.gpu;
    const bool flood = n_seeds > 0 && !opt_.gpu;
    wk.in_region.resize(static_cast<size_t>(core.w * core.h));
    wk.region.clear();
    // The mask's pixels, and its runs row by row (for the blob below).
    size_t n_runs = 0;
    for (int64_t y = 0; y < core.h; ++y) {
      const WsInput* in = ib.row<WsInput>(core.y + y);
      uint32_t before = 0;
      for (int64_t x = 0; x < core.w; ++x) {
        const uint32_t inside = in[x].inside;
        n_runs += inside && !before;
        before = inside;
        if (inside) {
          const uint32_t k = static_cast<uint32_t>(y * core.w + x);
          wk.region.push_back(k);
          wk.in_region[k] = 1;
        }
      }
    }
    ensure(wk.jb, kWsFormat, core.grown(1));
    const ImageView jb = wk.jb.view();
    if (flood) {
      for (int64_t k = 0; k < static_cast<int64_t>(sh.ring_size()); ++k) {
        int64_t x, y;
        sh.ring_pos(k, x, y);
        *jb.ptr<WsCost>(core.x + x, core.y + y) = kWsNeutral;
      }
      // The region is every mask pixel, and ib is whole: no region map.
      watershed_flood_region(jb, ib, core, opt_.connectivity, wk.region, nullptr);
      loaded_px_ += static_cast<int64_t>(wk.region.size());
      for (int64_t e = 0; e < static_cast<int64_t>(sh.edge_size()); ++e) {
        int64_t x, y;
        sh.edge_pos(e, x, y);
        if (wk.in_region[static_cast<size_t>(y * core.w + x)]) eb.edges[e] = *jb.ptr<WsCost>(core.x + x, core.y + y);
      }
      st.published = true;
    }
    blobs_.put(edge_blob(t), std::move(edge_bytes));
    for (const uint32_t k : wk.region) wk.in_region[k] = 0;
    // The blob: the mask's runs row by row, and their pixels.
    const size_t n_px = wk.region.size();
    std::vector<uint8_t> bytes(TileBlob::bytes_for(core.h, n_runs, n_px, kb_));
    TileBlob b =
        TileBlob::over(bytes.data(), core.h, kb_, true, static_cast<uint32_t>(n_runs), static_cast<uint32_t>(n_px));
    uint32_t r = 0, i = 0;
    for (int64_t y = 0; y < core.h; ++y) {
      b.row_run[y] = r;
      const WsInput* in = ib.row<WsInput>(core.y + y);
      const WsCost* c = jb.ptr<WsCost>(core.x, core.y + y);
      for (int64_t x = 0; x < core.w; ++x) {
        if (!in[x].inside) continue;
        if (x == 0 || !in[x - 1].inside) b.run_x[r] = static_cast<uint16_t>(x), b.run_len[r] = 0, b.run_px[r] = i, ++r;
        ++b.run_len[r - 1];
        b.set_key(i, in[x].key);
        b.seed[i] = in[x].seed ? 1 : 0;
        b.labels[i] = flood ? c[x].label : in[x].seed;  // the seeds' labels wait for the GPU's flood
        ++i;
      }
    }
    b.row_run[core.h] = r;
    blobs_.put(t, std::move(bytes));
  }

  // Queues tile t for a change of cost `key` ((m, d) as one number) next to
  // it; a tile being processed runs again after.
  void enqueue(int64_t t, uint64_t key) {
    std::lock_guard<std::mutex> l(qmu_);
    uint8_t& s = state_[static_cast<size_t>(t)];
    uint64_t& p = pending_[static_cast<size_t>(t)];
    if (s == kIdle) {
      s = kQueued, p = key;
      queue_.push({key, t});
      qcv_.notify_one();
    } else if (s == kQueued) {
      if (key < p) p = key, queue_.push({key, t});  // the older entry is skipped when popped
    } else {
      p = s == kRunningDirty ? std::min(p, key) : key;
      s = kRunningDirty;
    }
  }

  void worker() {
    std::unique_lock<std::mutex> l(qmu_);
    for (;;) {
      while (queue_.empty() && running_ > 0 && !failed_) qcv_.wait(l);
      if (queue_.empty() || failed_) {
        qcv_.notify_all();
        return;
      }
      const auto [key, t] = queue_.top();
      queue_.pop();
      uint8_t& s = state_[static_cast<size_t>(t)];
      if (s != kQueued || key != pending_[static_cast<size_t>(t)]) continue;  // a stale entry
      s = kRunning;
      ++running_;
      l.unlock();
      try {
        process(t);
      } catch (...) {
        l.lock();
        if (!failed_) exception_ = std::current_exception();
        failed_ = true;
        --running_;
        continue;
      }
      l.lock();
      --running_;
      if (s == kRunningDirty) {
        s = kQueued;
        queue_.push({pending_[static_cast<size_t>(t)], t});
      } else {
        s = kIdle;
      }
      qcv_.notify_all();
    }
  }

  // The halo now: the neighbours' published edges, unreached where there is
  // no neighbour, no mask or nothing published.
  void assemble(int64_t tx, int64_t ty, const Shape& sh, std::vector<WsCost>& ring) {
    ring.assign(sh.ring_size(), kWsNeutral);
    const int64_t w = sh.w, h = sh.h;
    // A neighbour that published nothing shows unreached edges; one that
    // publishes after this look queues the tile again (announce).
    auto take = [&](int64_t nx, int64_t ny, auto&& fn) {
      if (nx < 0 || ny < 0 || nx >= grid_.cols() || ny >= grid_.rows()) return;
      const int64_t n = index(nx, ny);
      TileState& ns = tile(n);
      if (!ns.live || !ns.published) return;
      const Rect r = grid_.tile_rect(nx, ny);
      const BlobStore::Pin p = blobs_.acquire(edge_blob(n));
      std::lock_guard<std::mutex> l(ns.mu);
      fn(EdgeBlob::over(p.data(), Shape{r.w, r.h}).edges, r.w, r.h);
    };
    take(tx, ty - 1, [&](const WsCost* e, int64_t nw, int64_t) {
      for (int64_t x = 0; x < w; ++x) ring[static_cast<size_t>(1 + x)] = e[nw + x];
    });
    take(tx, ty + 1, [&](const WsCost* e, int64_t, int64_t) {
      for (int64_t x = 0; x < w; ++x) ring[static_cast<size_t>(w + 3 + x)] = e[x];
    });
    take(tx - 1, ty, [&](const WsCost* e, int64_t nw, int64_t nh) {
      for (int64_t y = 0; y < h; ++y) ring[static_cast<size_t>(2 * (w + 2) + y)] = e[2 * nw + nh + y];
    });
    take(tx + 1, ty, [&](const WsCost* e, int64_t nw, int64_t) {
      for (int64_t y = 0; y < h; ++y) ring[static_cast<size_t>(2 * (w + 2) + h + y)] = e[2 * nw + y];
    });
    if (!eight_) return;  // corners touch no core pixel 4-connected
    take(tx - 1, ty - 1, [&](const WsCost* e, int64_t nw, int64_t) {
      ring[0] = e[2 * nw - 1];  // its bottom-right
    });
    take(tx + 1, ty - 1, [&](const WsCost* e, int64_t nw, int64_t) {
      ring[static_cast<size_t>(w + 1)] = e[nw];  // its bottom-left
    });
    take(tx - 1, ty + 1, [&](const WsCost* e, int64_t nw, int64_t) {
      ring[static_cast<size_t>(w + 2)] = e[nw - 1];  // its top-right
    });
    take(tx + 1, ty + 1, [&](const WsCost* e, int64_t, int64_t) {
      ring[static_cast<size_t>(2 * w + 3)] = e[0];  // its top-left
    });
  }

  // The edge pixels (as indices y * w + x) that a change of the halo can
  // decide: a changed halo pixel whose old or new offer to one of its core
  // neighbours (inside, not a seed) is at most that neighbour's cost.
  // Offers dearer than a pixel's cost take no part in its rule, so where
  // none is left the core is still the fixed point.
  void relevant(const EdgeBlob& eb, const Shape& sh, const std::vector<WsCost>& ring, std::vector<uint32_t>& out) {
    out.clear();
    const int n = eight_ ? 8 : 4;
    for (int64_t k = 0; k < static_cast<int64_t>(ring.size()); ++k) {
      const WsCost& now = ring[static_cast<size_t>(k)];
      const WsCost& was = eb.halo[k];
      if (same(now, was)) continue;
      int64_t hx, hy;
      sh.ring_pos(k, hx, hy);
      for (int d = 0; d < n; ++d) {
        const int64_t x = hx + kDx[d], y = hy + kDy[d];
        if (x < 0 || y < 0 || x >= sh.w || y >= sh.h) continue;
        const int64_t e = sh.edge_of(x, y);
        if (eb.flags[e] != kEdgeInside) continue;  // outside, or a seed
        const uint32_t key = eb.key[e];
        const WsCost& c = eb.edges[e];
        if (offers(now, key, c) || offers(was, key, c)) out.push_back(static_cast<uint32_t>(y * sh.w + x));
      }
    }
  }

  void process(int64_t t) {
    ++visits_;
    const int64_t tx = t % grid_.cols(), ty = t / grid_.cols();
    const Rect core = grid_.tile_rect(tx, ty);
    const Shape sh{core.w, core.h};
    TileState& st = tile(t);
    Work& wk = work_.local();
    BlobStore::Pin ep = blobs_.acquire(edge_blob(t));
    const EdgeBlob eb = EdgeBlob::over(ep.data(), sh);
    assemble(tx, ty, sh, wk.ring);
    if (st.flooded) {
      relevant(eb, sh, wk.ring, wk.starts);
      if (wk.starts.empty()) {
        // The fixed point stands against the new halo too.
        keep_halo(eb, wk.ring, ep);
        return;
      }
    }
    flood(t, core, sh, st, eb, wk);
    keep_halo(eb, wk.ring, ep);
    st.flooded = true;
    publish(t, core, st, eb, sh, ep, wk);
  }

  static void keep_halo(const EdgeBlob& eb, const std::vector<WsCost>& ring, BlobStore::Pin& pin) {
    if (std::memcmp(eb.halo, ring.data(), ring.size() * sizeof(WsCost)) == 0) return;
    std::copy(ring.begin(), ring.end(), eb.halo);
    pin.mark_dirty();
  }

  // Floods what the halo's change can reach (the whole tile on its first
  // flood or on the GPU), writes the labels back and leaves the new edge
  // costs in wk.edges.
  void flood(int64_t t, const Rect& core, const Shape& sh, const TileState& st, const EdgeBlob& eb, Work& wk) {
    ++floods_;
    const int64_t w = core.w, h = core.h;
    BlobStore::Pin pin = blobs_.acquire(t);
    const TileBlob b = TileBlob::over(pin.data(), h, kb_);
    ensure(wk.jb, kWsFormat, core.grown(1));
    ensure(wk.ib, kWsFormat, core);
    const ImageView jb = wk.jb.view(), ib = wk.ib.view();
    for (int64_t k = 0; k < static_cast<int64_t>(sh.ring_size()); ++k) {
      int64_t x, y;
      sh.ring_pos(k, x, y);
      *jb.ptr<WsCost>(core.x + x, core.y + y) = wk.ring[static_cast<size_t>(k)];
    }
    if (wk.pos.size() < static_cast<size_t>(w * h)) wk.pos.resize(static_cast<size_t>(w * h), -1);
    map(b, w, h, wk.pos, true);
    wk.in_region.resize(static_cast<size_t>(w * h));
    auto unpack = [&](uint32_t k) {
      const uint32_t i = static_cast<uint32_t>(wk.pos[k]);
      *ib.ptr<WsInput>(core.x + k % w, core.y + k / w) = WsInput{b.key(i), b.seed[i] ? b.labels[i] : 0u, 1u};
    };
    // The parts of the mask to flood again: all of it (the first flood, or
    // on the GPU), or those that an edge pixel that matters belongs to.
    wk.region.clear();
    if (opt_.gpu || !st.flooded) {
      for (int64_t y = 0; y < h; ++y)
        for (uint32_t r = b.row_run[y]; r < b.row_run[y + 1]; ++r)
          for (uint32_t i = 0; i < b.run_len[r]; ++i) {
            const uint32_t k = static_cast<uint32_t>(y * w + b.run_x[r] + i);
            wk.region.push_back(k), wk.in_region[k] = 1;
          }
    } else {
      const int n = eight_ ? 8 : 4;
      wk.stack.clear();
      for (const uint32_t k : wk.starts)
        if (!wk.in_region[k]) wk.in_region[k] = 1, wk.region.push_back(k), wk.stack.push_back(k);
      while (!wk.stack.empty()) {
        const uint32_t k = wk.stack.back();
        wk.stack.pop_back();
        const int64_t x = k % w, y = k / w;
        for (int d = 0; d < n; ++d) {
          const int64_t nx = x + kDx[d], ny = y + kDy[d];
          if (nx < 0 || ny < 0 || nx >= w || ny >= h) continue;
          const uint32_t q = static_cast<uint32_t>(ny * w + nx);
          if (wk.in_region[q] || wk.pos[q] < 0) continue;
          wk.in_region[q] = 1, wk.region.push_back(q), wk.stack.push_back(q);
        }
      }
    }
    if (opt_.gpu) {
      // The whole tile, its core unreached: outside the mask nothing.
      for (int64_t y = 0; y < h; ++y)
        for (int64_t x = 0; x < w; ++x) {
          *ib.ptr<WsInput>(core.x + x, core.y + y) = WsInput{0, 0, 0};
          *jb.ptr<WsCost>(core.x + x, core.y + y) = kWsNeutral;
        }
      for (const uint32_t k : wk.region) unpack(k);
      opt_.gpu->propagate(jb, ib, core);
      flooded_px_ += w * h;
    } else {
      for (const uint32_t k : wk.region) unpack(k);
      watershed_flood_region(jb, ib, core, opt_.connectivity, wk.region, wk.in_region.data());
      flooded_px_ += static_cast<int64_t>(wk.region.size());
    }
    // Labels back (unreached: 0), and the new edge costs.
    bool changed = false;
    for (const uint32_t k : wk.region) {
      uint32_t& l = b.labels[wk.pos[k]];
      const uint32_t v = jb.ptr<WsCost>(core.x + k % w, core.y + k / w)->label;
      if (l != v) l = v, changed = true;
    }
    if (changed) pin.mark_dirty();
    wk.edges.assign(eb.edges, eb.edges + sh.edge_size());
    for (int64_t e = 0; e < static_cast<int64_t>(sh.edge_size()); ++e) {
      int64_t x, y;
      sh.edge_pos(e, x, y);
      if (wk.in_region[static_cast<size_t>(y * w + x)])
        wk.edges[static_cast<size_t>(e)] = *jb.ptr<WsCost>(core.x + x, core.y + y);
    }
    for (const uint32_t k : wk.region) wk.in_region[k] = 0;
    map(b, w, h, wk.pos, false);
  }

  // Records the tile's new edge costs and queues the neighbours that see
  // one that changed.
  void publish(int64_t t, const Rect& core, TileState& st, const EdgeBlob& eb, const Shape& sh, BlobStore::Pin& pin,
               Work& wk) {
    if (std::equal(wk.edges.begin(), wk.edges.end(), eb.edges, same)) return;  // nothing for the neighbours
    wk.old.assign(eb.edges, eb.edges + sh.edge_size());
    {
      std::lock_guard<std::mutex> l(st.mu);
      std::copy(wk.edges.begin(), wk.edges.end(), eb.edges);
    }
    st.published = true;
    pin.mark_dirty();
    announce(t, core, wk.old.data(), wk.edges.data());
  }

  // Queues each live neighbour that sees an edge pixel of tile t whose cost
  // went from `old` (null: unreached) to `now`, keyed by the cheapest such
  // cost it sees.
  void announce(int64_t t, const Rect& core, const WsCost* old, const WsCost* now) {
    const int64_t w = core.w, h = core.h;
    constexpr uint64_t kNone = ~uint64_t{0};
    auto key = [&](int64_t e) -> uint64_t {
      const WsCost& was = old ? old[e] : kWsNeutral;
      const WsCost& c = now[e];
      return same(was, c) ? kNone : (uint64_t{c.m} << 32 | c.d);
    };
    auto span = [&](int64_t from, int64_t n) {
      uint64_t k = kNone;
      for (int64_t e = from; e < from + n; ++e) k = std::min(k, key(e));
      return k;
    };
    const int64_t tx = t % grid_.cols(), ty = t / grid_.cols();
    auto wake = [&](uint64_t k, int64_t nx, int64_t ny) {
      if (k == kNone || nx < 0 || ny < 0 || nx >= grid_.cols() || ny >= grid_.rows()) return;
      const int64_t n = index(nx, ny);
      if (tile(n).live) enqueue(n, k);
    };
    wake(span(0, w), tx, ty - 1), wake(span(w, w), tx, ty + 1);
    wake(span(2 * w, h), tx - 1, ty), wake(span(2 * w + h, h), tx + 1, ty);
    if (eight_) {
      wake(key(0), tx - 1, ty - 1), wake(key(w - 1), tx + 1, ty - 1);
      wake(key(w), tx - 1, ty + 1), wake(key(2 * w - 1), tx + 1, ty + 1);
    }
  }

  const TileSource& image_;
  const TileSource& markers_;
  const TileSource* mask_;
  const WsTilesOptions& opt_;
  int kb_;
  BlobStore& blobs_;
  TileGrid grid_;
  bool eight_;
  std::vector<TileState> tiles_;
  tbb::enumerable_thread_specific<Work> work_;
  std::atomic<int64_t> visits_{0}, floods_{0}, flooded_px_{0}, loaded_px_{0}, seeds_{0};
  std::atomic<bool> failed_{false};
  std::atomic<size_t> edge_bytes_{0};
  // The queue; qmu_ guards it, state_, pending_ and running_.
  std::mutex qmu_;
  std::condition_variable qcv_;
  std::priority_queue<std::pair<uint64_t, int64_t>, std::vector<std::pair<uint64_t, int64_t>>, std::greater<>> queue_;
  std::vector<uint8_t> state_;
  std::vector<uint64_t> pending_;
  int running_ = 0;
  std::exception_ptr exception_;
  std::mutex mu_;
  std::string error_;
};

// The labels: each tile's mask pixels from its blob, the rest 0.
class LabelSource : public TileSource {
 public:
  LabelSource(std::shared_ptr<BlobStore> blobs, const TileGrid& grid, int key_bytes, const SourceInfo& like)
      : blobs_(std::move(blobs)), grid_(grid), kb_(key_bytes) {
    info_.path = "watershed labels";
    info_.format = "computed";
    info_.fmt = PixelFormat{SampleType::kU32, 1};
    LevelInfo l;
    l.width = grid.width, l.height = grid.height, l.tile_w = grid.tile_w, l.tile_h = grid.tile_h;
    info_.levels = {l};
    info_.mpp_x = like.mpp_x, info_.mpp_y = like.mpp_y;
  }

 protected:
  void read_inside(int, const ImageView& dst) const override {
    const int64_t tx0 = dst.rect.x / grid_.tile_w, tx1 = (dst.rect.x1() - 1) / grid_.tile_w;
    const int64_t ty0 = dst.rect.y / grid_.tile_h, ty1 = (dst.rect.y1() - 1) / grid_.tile_h;
    for (int64_t ty = ty0; ty <= ty1; ++ty)
      for (int64_t tx = tx0; tx <= tx1; ++tx) {
        const Rect core = grid_.tile_rect(tx, ty), o = core.intersect(dst.rect);
        for (int64_t y = o.y; y < o.y1(); ++y) std::memset(dst.ptr_bytes(o.x, y), 0, static_cast<size_t>(o.w) * 4);
        const int64_t t = ty * grid_.cols() + tx;
        if (!blobs_->has(t)) continue;
        BlobStore::Pin p = blobs_->acquire(t);
        const TileBlob b = TileBlob::over(p.data(), core.h, kb_);
        for (int64_t y = o.y; y < o.y1(); ++y) {
          uint32_t* row = dst.row<uint32_t>(y) - dst.rect.x;  // indexed by image x
          const int64_t ly = y - core.y;
          for (uint32_t r = b.row_run[ly]; r < b.row_run[ly + 1]; ++r) {
            const int64_t x0 = std::max(o.x, core.x + b.run_x[r]),
                          x1 = std::min(o.x1(), core.x + b.run_x[r] + b.run_len[r]);
            for (int64_t x = x0; x < x1; ++x) row[x] = b.labels[b.run_px[r] + (x - core.x - b.run_x[r])];
          }
        }
      }
  }

 private:
  std::shared_ptr<BlobStore> blobs_;
  TileGrid grid_;
  int kb_;
};

}  // namespace

WsTilesResult watershed_tiles(const TileSource& image, const TileSource& markers, const TileSource* mask,
                              const WsTilesOptions& opt) {
  const int64_t W = image.level(0).width, H = image.level(0).height, tile = opt.tile;
  if (tile > kWsTileMax) throw InputError("--tile must be at most " + std::to_string(kWsTileMax) + " for watershed");
  const SampleType type = image.info().fmt.type;
  const int kb = type == SampleType::kU8 ? 1 : type == SampleType::kU16 ? 2 : 4;
  const TileGrid grid{W, H, tile, tile};
  // Seven eighths of the budget for the tiles' blobs, the pixels' and the
  // edge states' (entries count + t) in one LRU, spilled to a scratch file
  // beyond it; the threads' pinned blobs may go over it.
  const int threads =
      opt.gpu ? 2 : static_cast<int>(tbb::global_control::active_value(tbb::global_control::max_allowed_parallelism));
  auto blobs = std::make_shared<BlobStore>(2 * grid.count(), ws_blob_budget(opt), opt.scratch_near);
  WsTilesResult res;
  WsTilesStats& st = res.stats;
  {
    Engine e(image, markers, mask, opt, kb, grid, *blobs);
    const auto t0 = std::chrono::steady_clock::now();
    e.load_all(st);
    const auto t1 = std::chrono::steady_clock::now();
    // With CUDA, one tile on the device and one being prepared.
    e.run(st, threads);
    st.load_seconds = std::chrono::duration<double>(t1 - t0).count();
    st.wavefront_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t1).count();
    st.tiles = grid.count();
  }
  st.store = blobs->stats();
  res.store = blobs;
  res.labels = std::make_shared<LabelSource>(blobs, grid, kb, image.info());
  return res;
}

}  // namespace tw
