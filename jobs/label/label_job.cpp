#include "jobs/label/label_job.hpp"

#include <tbb/global_control.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <limits>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "engine/error.hpp"
#include "engine/memory.hpp"
#include "engine/scratch_store.hpp"
#include "jobs/label/paged_array.hpp"
#include "kernels/label/label.hpp"
#include "kernels/label/label_cuda.hpp"

namespace tw {
namespace {

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// A piece of a tile's labelling that touches a border shared with another
// tile: one union-find record. Records of tile t occupy slots
// t * slots_per_tile + j, j = the piece's rank among the tile's border
// pieces (ascending local label, which is raster order of first pixels).
struct Piece {
  uint64_t parent;  // union-find; after the merge: the root itself
  uint64_t first;   // at the root: the set's first pixel (linear index in the image)
  uint64_t area;    // the piece's pixels (with a filter); after the merge, at the root: the set's
  uint32_t label;   // the piece's label within its tile
  uint32_t local;   // its first pixel within the tile: y * w + x
  uint32_t final;   // at the root: the component's number, once given (0: dropped by the filter)
  uint32_t border;  // the piece has a pixel on the image's border; at the root: the set has
};

struct TileMeta {
  uint32_t pieces = 0;  // labels in the tile
  uint32_t border = 0;  // of them, border pieces
};

// Edges of a tile in the edge table: top, bottom, left, right, `tile` each:
// the border piece's j + 1 at each edge pixel, 0 for background.
enum Edge { kTop = 0, kBottom = 1, kLeft = 2, kRight = 3 };

// A few GPU labelers shared by the local pass's threads: each labels one
// tile at a time on its own stream, so one tile's copies overlap another's
// kernels and the threads' host work goes on meanwhile. A thread that finds
// none free labels its tile on the CPU (the labels are the same): the GPU's
// rate is bound by the copies (4 bytes a pixel down, about as fast as 16
// cores label), so the two together beat either alone.
constexpr int kGpuLabelers = 4;

class GpuLabelers {
 public:
  // device < 0: none (the CPU labels).
  GpuLabelers(int device, int64_t tile, int count) {
    if (device < 0) return;
    for (int i = 0; i < count; ++i) all_.push_back(label::make_cuda_tile_labeler(device, tile, tile));
    for (auto& l : all_) free_.push_back(l.get());
  }
  bool active() const { return !all_.empty(); }

  class Lease {
   public:
    Lease(GpuLabelers* pool, label::CudaTileLabeler* l) : pool_(pool), l_(l) {}
    ~Lease() {
      if (l_) pool_->release(l_);
    }
    explicit operator bool() const { return l_ != nullptr; }
    Lease(const Lease&) = delete;
    Lease& operator=(const Lease&) = delete;
    label::CudaTileLabeler* operator->() const { return l_; }

   private:
    GpuLabelers* pool_;
    label::CudaTileLabeler* l_;
  };
  // A free labeler, or an empty lease when all are busy.
  Lease try_acquire() {
    std::lock_guard<std::mutex> lk(m_);
    if (free_.empty()) return Lease(this, nullptr);
    label::CudaTileLabeler* l = free_.back();
    free_.pop_back();
    return Lease(this, l);
  }
  // Kernel and transfer seconds summed over the labelers.
  label::CudaLabelStats stats() const {
    label::CudaLabelStats sum;
    for (const auto& l : all_) {
      const label::CudaLabelStats g = l->stats();
      sum.kernel_seconds += g.kernel_seconds, sum.transfer_seconds += g.transfer_seconds, sum.tiles += g.tiles;
    }
    return sum;
  }

 private:
  void release(label::CudaTileLabeler* l) {
    std::lock_guard<std::mutex> lk(m_);
    free_.push_back(l);
  }
  std::vector<std::unique_ptr<label::CudaTileLabeler>> all_;
  std::vector<label::CudaTileLabeler*> free_;
  std::mutex m_;
};

class Labeler {
 public:
  // mask_out: the result is a u8 mask of the kept components (255), not
  // their labels; the tiles' labels are not stored between the passes but
  // computed again for the last one (the CPU's labelling: on CUDA it would
  // take the GPU's tiles' work to the CPU).
  Labeler(const TileSource& mask, int connectivity, const LabelFilter& filter, ExecContext& ctx, LabelStats& st,
          bool mask_out = false)
      : mask_(mask),
        conn_(connectivity),
        filter_(filter),
        filtering_(filter.active()),
        mask_out_(mask_out),
        ctx_(ctx),
        st_(st) {
    const LevelInfo& l0 = mask.level(0);
    W_ = l0.width, H_ = l0.height;
    cuda_ = ctx.backend.is_cuda() && !mask_out_;
    // The local pass runs on every thread on both backends (on CUDA they
    // share a few GPU labelers); each thread holds a tile's buffers.
    threads_ = static_cast<int>(tbb::global_control::active_value(tbb::global_control::max_allowed_parallelism));
    T_ = choose_tile();
    grid_ = TileGrid{W_, H_, T_, T_};
    cols_ = grid_.cols(), rows_ = grid_.rows();
    S_ = 4 * static_cast<uint64_t>(T_);
    plan_memory();
  }

  std::shared_ptr<ScratchStore> run() {
    const auto t0 = Clock::now();
    local_pass();
    st_.local_seconds = since(t0);
    const auto t1 = Clock::now();
    merge();
    st_.merge_seconds = since(t1);
    const auto t2 = Clock::now();
    relabel();
    st_.relabel_seconds = since(t2);
    st_.tiles = grid_.count(), st_.tile = T_;
    st_.tiles_spilled = store_->stats().spills;
    st_.table_pages_spilled = pieces_->spills() + edges_->spills() + starts_->spills();
    st_.found = interior_found_ + border_found_;
    st_.removed_small = removed_[0], st_.removed_large = removed_[1], st_.removed_border = removed_[2];
    return store_;
  }

 private:
  int64_t choose_tile() const {
    const int64_t t = ctx_.tile;
    if (t < 16 || t > 16384) throw InputError("--tile must be between 16 and 16384");
    if (!cuda_) return t;
    // The GPU is filled only by large tiles (2048² is 4 M pixels, over 0.1 ms
    // of kernels); no larger, so that a slide has hundreds of tiles for the
    // threads to share, and no larger than the image or than a quarter of
    // the budget for every thread's working buffers (plan_memory).
    int64_t g = 2048;
    const int64_t side = std::max(W_, H_);
    while (g / 2 >= side && g / 2 >= t) g /= 2;
    while (g > t &&
           static_cast<size_t>(g * g) * per_thread_bytes_per_pixel() * static_cast<size_t>(threads_) > ctx_.memory / 4)
      g /= 2;
    return std::max(g, t);
  }

  // Input, mask, provisional labels and their tables; with a filter, the
  // per-label areas, flags and renumbering (at most half a label a pixel).
  size_t per_thread_bytes_per_pixel() const {
    return mask_.info().fmt.bytes_per_pixel() + 1 + 4 + 4 + 4 + (filtering_ ? 8 : 1);
  }

  // Shares of the budget: per thread, a tile's working buffers; per band of
  // tiles, the tables of a full-width band; the paged tables up to a quarter,
  // an eighth and an eighth of the rest (no more than they can ever use);
  // the tile store all that is left, so that a result that fits the budget
  // is never spilled.
  void plan_memory() {
    const size_t tile_px = static_cast<size_t>(T_ * T_);
    const size_t per_thread = tile_px * per_thread_bytes_per_pixel();
    const size_t band = static_cast<size_t>(cols_ * T_) * (4 + 4 + 8 + 16) + static_cast<size_t>(cols_) * S_ * 48;
    const size_t M = ctx_.memory;
    // With CUDA, each GPU labeler's pinned buffers: the mask and the labels.
    const size_t labelers = cuda_ ? tile_px * 5 * static_cast<size_t>(std::min(threads_, kGpuLabelers)) : 0;
    const size_t fixed = per_thread * static_cast<size_t>(threads_) + band + labelers;
    const size_t rest = M > fixed + M / 4 ? M - fixed : M / 4;
    const size_t tile_bytes = tile_px * (mask_out_ ? 1 : 4);
    const uint64_t tiles = static_cast<uint64_t>(grid_.count());
    // The most a paged table can hold in memory: its records, plus a page
    // either end.
    auto need = [](uint64_t n, size_t elem) { return static_cast<size_t>(n) * elem + (size_t{2} << 16); };
    const size_t pieces_cache = std::min(rest / 4, need(tiles * S_, sizeof(Piece)));
    const size_t edges_cache = std::min(rest / 8, need(tiles * S_, 4));
    const size_t starts_cache = std::min(rest / 8, need(tiles * static_cast<uint64_t>(T_), 4));
    const size_t store_cache =
        std::max(rest - pieces_cache - edges_cache - starts_cache, tile_bytes * static_cast<size_t>(threads_ + 2));
    store_ = std::make_shared<ScratchStore>(PixelFormat{mask_out_ ? SampleType::kU8 : SampleType::kU32, 1}, W_, H_, T_,
                                            store_cache, ctx_.scratch_path(), mask_out_ ? "objects mask" : "labels");
    const std::string near = ctx_.scratch_path();
    pieces_ = std::make_unique<PagedArray<Piece>>(tiles * S_, pieces_cache, near);
    edges_ = std::make_unique<PagedArray<uint32_t>>(tiles * S_, edges_cache, near);
    starts_ = std::make_unique<PagedArray<uint32_t>>(tiles * static_cast<uint64_t>(T_), starts_cache, near);
    meta_.assign(static_cast<size_t>(tiles), TileMeta{});
  }

  // A tile's working vectors (thread-local in each pass).
  struct TileWork {
    std::vector<uint8_t> fg, flag;
    std::vector<uint32_t> first, remap;
    std::vector<uint64_t> area;
    label::TileScratch scratch;
  };

  // Tile t (rect r, its mask pixels read into `in`) labelled on its own:
  // labels 1..n into out in raster order of first pixels, w.first[k - 1]
  // each one's first pixel, w.flag[k] 1 on an edge shared with another tile
  // and 2 on the image's border, w.area[k] with a filter; the interior
  // components the filter drops are gone and the rest renumbered
  // (drop_interior; counted in the stats where `count`). The same pixels
  // give the same labels on the CPU and the GPU, so a mask's last pass
  // computes them again instead of storing them.
  uint32_t tile_labels(const Image& in, const Rect& r, uint32_t* out, size_t ostride, GpuLabelers* gpu, TileWork& w,
                       bool count) {
    const SampleType type = mask_.info().fmt.type;
    const int64_t tx = r.x / T_, ty = r.y / T_;
    w.fg.resize(static_cast<size_t>(r.area()));
    for (int64_t y = 0; y < r.h; ++y)
      label::foreground_row(in.row_bytes(r.y + y), type, r.w, w.fg.data() + static_cast<size_t>(y * r.w));
    uint32_t n;
    GpuLabelers::Lease l = gpu ? gpu->try_acquire() : GpuLabelers::Lease(nullptr, nullptr);
    if (l)
      n = l->label(w.fg.data(), static_cast<size_t>(r.w), r.w, r.h, conn_, out, ostride, w.first);
    else
      n = label::label_tile(w.fg.data(), static_cast<size_t>(r.w), r.w, r.h, conn_, out, ostride, w.first, w.scratch);
    auto at = [&](int64_t x, int64_t y) { return out[static_cast<size_t>(y) * ostride + static_cast<size_t>(x)]; };
    const bool has[4] = {ty > 0, ty + 1 < rows_, tx > 0, tx + 1 < cols_};
    // Per label: 1 on an edge shared with another tile (a border piece),
    // 2 on the image's border.
    std::vector<uint8_t>& flag = w.flag;
    {
      flag.assign(static_cast<size_t>(n) + 1, 0);
      const bool img[4] = {r.y == 0, r.y1() == H_, r.x == 0, r.x1() == W_};
      uint8_t bits[4];
      for (int e = 0; e < 4; ++e) bits[e] = static_cast<uint8_t>((has[e] ? 1 : 0) | (img[e] ? 2 : 0));
      if (bits[kTop])
        for (int64_t x = 0; x < r.w; ++x) flag[at(x, 0)] |= bits[kTop];
      if (bits[kBottom])
        for (int64_t x = 0; x < r.w; ++x) flag[at(x, r.h - 1)] |= bits[kBottom];
      if (bits[kLeft])
        for (int64_t y = 0; y < r.h; ++y) flag[at(0, y)] |= bits[kLeft];
      if (bits[kRight])
        for (int64_t y = 0; y < r.h; ++y) flag[at(r.w - 1, y)] |= bits[kRight];
    }
    if (filtering_) {
      // Counted by runs: an increment a pixel chains every background
      // pixel's through the same counter (with it, this pass was 8% of
      // the CPU of a 2-GP nuclei run's steps on the H200, 5% by runs).
      w.area.assign(static_cast<size_t>(n) + 1, 0);
      for (int64_t y = 0; y < r.h; ++y) {
        const uint32_t* row = out + static_cast<size_t>(y) * ostride;
        uint32_t cur = row[0];
        int64_t from = 0;
        for (int64_t x = 1; x < r.w; ++x)
          if (row[x] != cur) {
            w.area[cur] += static_cast<uint64_t>(x - from);
            cur = row[x], from = x;
          }
        w.area[cur] += static_cast<uint64_t>(r.w - from);
      }
    }
    const uint64_t interior = drop_interior(n, w.first, w.area, flag, w.remap, out, ostride, r, count);
    if (count) interior_found_ += interior;
    return n;
  }

  // Step 1: every tile labelled on its own.
  void local_pass() {
    GpuLabelers gpu(cuda_ ? ctx_.backend.device : -1, T_, std::min(threads_, kGpuLabelers));
    tbb::parallel_for(int64_t{0}, grid_.count(), [&](int64_t t) {
      const int64_t tx = t % cols_, ty = t / cols_;
      const Rect r = grid_.tile_rect(tx, ty);
      thread_local TileWork w;
      thread_local std::vector<uint32_t> slot_of, edge, own;
      thread_local std::vector<Piece> recs;
      // Read first: a read's parallel loops may run another tile's pass on
      // this thread meanwhile, resizing the thread-local vectors.
      const Image in = mask_.read(0, r);
      ScratchStore::Pin pin;
      uint32_t* out;
      size_t ostride;
      if (mask_out_) {
        own.resize(static_cast<size_t>(r.area()));
        out = own.data(), ostride = static_cast<size_t>(r.w);
      } else {
        pin = store_->acquire(tx, ty, true);
        out = pin.image().ptr<uint32_t>(r.x, r.y), ostride = pin.image().stride() / 4;
      }
      uint32_t n = tile_labels(in, r, out, ostride, &gpu, w, true);
      if (!mask_out_) pin.mark_dirty();
      auto at = [&](int64_t x, int64_t y) { return out[static_cast<size_t>(y) * ostride + static_cast<size_t>(x)]; };
      const bool has[4] = {ty > 0, ty + 1 < rows_, tx > 0, tx + 1 < cols_};
      const std::vector<uint32_t>& first = w.first;
      const std::vector<uint8_t>& flag = w.flag;
      const std::vector<uint64_t>& area = w.area;
      // Pieces starting on each row.
      edge.assign(static_cast<size_t>(T_), 0);
      for (uint32_t k = 0; k < n; ++k) ++edge[first[k] / static_cast<uint32_t>(r.w)];
      starts_->write(static_cast<uint64_t>(t) * static_cast<uint64_t>(T_), edge.data(), static_cast<uint64_t>(T_));
      // Border pieces: labels on the edges shared with another tile.
      slot_of.assign(static_cast<size_t>(n) + 1, 0);
      recs.clear();
      const uint64_t base = static_cast<uint64_t>(t) * S_;
      for (uint32_t k = 1; k <= n; ++k)
        if (flag[k] & 1) {
          slot_of[k] = static_cast<uint32_t>(recs.size()) + 1;
          recs.push_back(Piece{base + recs.size(), 0, filtering_ ? area[k] : 0, k, first[k - 1], 0,
                               static_cast<uint32_t>(flag[k] >> 1)});
        }
      if (!recs.empty()) pieces_->write(base, recs.data(), recs.size());
      edge.assign(S_, 0);
      const size_t T = static_cast<size_t>(T_);
      for (int64_t x = 0; x < r.w; ++x) {
        if (has[kTop]) edge[kTop * T + static_cast<size_t>(x)] = slot_of[at(x, 0)];
        if (has[kBottom]) edge[kBottom * T + static_cast<size_t>(x)] = slot_of[at(x, r.h - 1)];
      }
      for (int64_t y = 0; y < r.h; ++y) {
        if (has[kLeft]) edge[kLeft * T + static_cast<size_t>(y)] = slot_of[at(0, y)];
        if (has[kRight]) edge[kRight * T + static_cast<size_t>(y)] = slot_of[at(r.w - 1, y)];
      }
      if (!recs.empty()) edges_->write(base, edge.data(), S_);
      meta_[static_cast<size_t>(t)] = TileMeta{n, static_cast<uint32_t>(recs.size())};
    });
    if (gpu.active()) {
      const label::CudaLabelStats g = gpu.stats();
      st_.gpu = true;
      st_.gpu_kernel_seconds = g.kernel_seconds, st_.gpu_transfer_seconds = g.transfer_seconds;
      st_.gpu_tiles = g.tiles;
    }
    for (const TileMeta& m : meta_) st_.border_pieces += m.border;
  }

  // Counts a dropped component in the stats.
  void count_removed(uint64_t area, bool border) {
    if (filter_.exclude_border && border)
      ++removed_[2];
    else
      ++removed_[filter_.too_small(area) ? 0 : 1];
  }

  // With a filter: the components wholly inside the tile (no border piece)
  // that it drops become background now, and the tile's other labels are
  // renumbered 1..n in the same order (first, area and flag moved with them).
  // Returns how many interior components the tile had.
  uint64_t drop_interior(uint32_t& n, std::vector<uint32_t>& first, std::vector<uint64_t>& area,
                         std::vector<uint8_t>& flag, std::vector<uint32_t>& remap, uint32_t* out, size_t ostride,
                         const Rect& r, bool count) {
    uint64_t interior = 0;
    if (!filtering_) {
      for (uint32_t k = 1; k <= n; ++k) interior += !(flag[k] & 1);
      return interior;
    }
    remap.resize(static_cast<size_t>(n) + 1);
    remap[0] = 0;
    uint32_t m = 0;
    for (uint32_t k = 1; k <= n; ++k) {
      const bool piece = flag[k] & 1;
      interior += !piece;
      if (piece || filter_.keep(area[k], flag[k] & 2)) {
        remap[k] = ++m;
        first[m - 1] = first[k - 1], area[m] = area[k], flag[m] = flag[k];
      } else {
        remap[k] = 0;
        if (count) count_removed(area[k], flag[k] & 2);
      }
    }
    if (m < n) {
      for (int64_t y = 0; y < r.h; ++y) {
        uint32_t* row = out + static_cast<size_t>(y) * ostride;
        for (int64_t x = 0; x < r.w; ++x) row[x] = remap[row[x]];
      }
      n = m;
      first.resize(m);
    }
    return interior;
  }

  // Union-find on the piece records (one thread: the records are paged).
  uint64_t find(uint64_t a) {
    for (;;) {
      const uint64_t p = pieces_->cref(a).parent;
      if (p == a) return a;
      const uint64_t gp = pieces_->cref(p).parent;
      if (gp == p) return p;
      pieces_->ref(a).parent = gp;  // path halving
      a = gp;
    }
  }
  // The root of a set is its smallest slot.
  void unite(uint64_t a, uint64_t b) {
    a = find(a), b = find(b);
    if (a == b) return;
    if (a < b) std::swap(a, b);
    pieces_->ref(a).parent = b;
  }

  uint64_t linear_first(int64_t t, uint32_t local) const {
    const Rect r = grid_.tile_rect(t % cols_, t / cols_);
    const int64_t y = r.y + local / static_cast<uint32_t>(r.w), x = r.x + local % static_cast<uint32_t>(r.w);
    return static_cast<uint64_t>(y) * static_cast<uint64_t>(W_) + static_cast<uint64_t>(x);
  }

  // Reads one edge of tile t as slot + 1 per pixel (0: none) into dst.
  void edge_slots(int64_t t, Edge e, int64_t n, uint64_t* dst) {
    if (meta_[static_cast<size_t>(t)].border == 0) {
      std::fill(dst, dst + n, uint64_t{0});
      return;
    }
    thread_local std::vector<uint32_t> e32;
    e32.resize(static_cast<size_t>(n));
    edges_->read(static_cast<uint64_t>(t) * S_ + static_cast<uint64_t>(e) * static_cast<uint64_t>(T_), e32.data(),
                 static_cast<uint64_t>(n));
    const uint64_t base = static_cast<uint64_t>(t) * S_;
    for (int64_t i = 0; i < n; ++i) dst[i] = e32[static_cast<size_t>(i)] ? base + e32[static_cast<size_t>(i)] : 0;
  }

  // Step 2: pieces touching across tile borders joined, 4- or 8-connected.
  void merge() {
    const int reach = conn_ == 8 ? 1 : 0;
    std::vector<uint64_t> a(static_cast<size_t>(std::max(W_, T_))), b(a.size());
    uint64_t last_a = 0, last_b = 0;
    // Joins the pixels of row a with those of row b at offsets -reach..reach.
    auto join_rows = [&](int64_t n) {
      for (int64_t i = 0; i < n; ++i) {
        const uint64_t pa = a[static_cast<size_t>(i)];
        if (!pa) continue;
        for (int64_t k = std::max<int64_t>(0, i - reach); k <= std::min(n - 1, i + reach); ++k) {
          const uint64_t pb = b[static_cast<size_t>(k)];
          if (!pb || (pa == last_a && pb == last_b)) continue;
          last_a = pa, last_b = pb;
          unite(pa - 1, pb - 1);
        }
      }
    };
    for (int64_t ty = 0; ty < rows_; ++ty) {
      const int64_t h = grid_.tile_rect(0, ty).h;
      for (int64_t tx = 0; tx + 1 < cols_; ++tx) {
        const int64_t t = ty * cols_ + tx;
        edge_slots(t, kRight, h, a.data());
        edge_slots(t + 1, kLeft, h, b.data());
        join_rows(h);
      }
      if (ty + 1 == rows_) break;
      for (int64_t tx = 0; tx < cols_; ++tx) {
        const Rect r = grid_.tile_rect(tx, ty);
        edge_slots(ty * cols_ + tx, kBottom, r.w, a.data() + r.x);
        edge_slots((ty + 1) * cols_ + tx, kTop, r.w, b.data() + r.x);
      }
      join_rows(W_);
    }
    // Roots get their set's first pixel; every record points at its root.
    // A root is its set's smallest slot, so it is met before its members.
    for (int64_t t = 0; t < grid_.count(); ++t) {
      const uint64_t base = static_cast<uint64_t>(t) * S_;
      for (uint32_t j = 0; j < meta_[static_cast<size_t>(t)].border; ++j) {
        const uint64_t i = base + j;
        const Piece me = pieces_->cref(i);
        const uint64_t g = linear_first(t, me.local);
        const uint64_t r = find(i);
        if (r == i) {
          pieces_->ref(i).first = g;
        } else {
          pieces_->ref(i).parent = r;
          Piece& root = pieces_->ref(r);
          root.first = std::min(root.first, g);
          root.area += me.area;
          root.border |= me.border;
        }
      }
    }
  }

  // Step 3: numbers in raster order, band by band.
  void relabel() {
    const size_t T = static_cast<size_t>(T_);
    // all: pieces starting on each (tile column, row) before the rows
    // above are added up; owners: of them, those starting a component.
    std::vector<uint32_t> all(static_cast<size_t>(cols_) * T), owners(all.size());
    std::vector<uint64_t> offset(all.size());
    std::vector<std::vector<Piece>> recs(static_cast<size_t>(cols_));
    std::vector<std::vector<uint8_t>> owner(static_cast<size_t>(cols_));
    std::vector<std::vector<uint32_t>> fin(static_cast<size_t>(cols_));
    uint64_t done = 0;
    for (int64_t ty = 0; ty < rows_; ++ty) {
      const int64_t h = grid_.tile_rect(0, ty).h;
      // Pieces starting on each row of each tile; border pieces whose set
      // starts elsewhere start no component.
      for (int64_t c = 0; c < cols_; ++c) {
        const int64_t t = ty * cols_ + c;
        const size_t cs = static_cast<size_t>(c);
        starts_->read(static_cast<uint64_t>(t) * T, all.data() + cs * T, T);
        std::copy_n(all.data() + cs * T, T, owners.data() + cs * T);
        // From here on, all[] counts the pieces starting on the rows above.
        uint32_t sum = 0;
        for (size_t y = 0; y < T; ++y) sum += std::exchange(all[cs * T + y], sum);
        const uint32_t nb = meta_[static_cast<size_t>(t)].border;
        recs[cs].resize(nb);
        owner[cs].assign(nb, 0);
        fin[cs].assign(nb, 0);
        if (nb) pieces_->read(static_cast<uint64_t>(t) * S_, recs[cs].data(), nb);
        const int64_t w = grid_.tile_rect(c, ty).w;
        for (uint32_t j = 0; j < nb; ++j) {
          const Piece& p = recs[cs][j];
          const Piece& root = pieces_->cref(p.parent);
          // A piece starts its component at the set's first pixel; with a
          // filter, only a component it keeps.
          bool starts = linear_first(t, p.local) == root.first;
          if (starts) {
            ++border_found_;
            if (filtering_ && !filter_.keep(root.area, root.border)) {
              count_removed(root.area, root.border);
              starts = false;
            }
          }
          owner[cs][j] = starts;
          if (!owner[cs][j]) --owners[cs * T + p.local / static_cast<uint32_t>(w)];
        }
      }
      // Exclusive prefix in raster order: row by row, tile by tile.
      for (int64_t y = 0; y < h; ++y)
        for (int64_t c = 0; c < cols_; ++c) {
          const size_t k = static_cast<size_t>(c) * T + static_cast<size_t>(y);
          offset[k] = done;
          done += owners[k];
        }
      if (done > std::numeric_limits<uint32_t>::max())
        throw InputError(mask_.info().path + " has more than 4294967295 connected components; labels are 32-bit");
      // Numbers of the border pieces that start their component: the
      // pieces before them on their row, less those that start none.
      for (int64_t c = 0; c < cols_; ++c) {
        const size_t cs = static_cast<size_t>(c);
        const uint32_t w = static_cast<uint32_t>(grid_.tile_rect(c, ty).w);
        uint32_t row = UINT32_MAX, skipped = 0;
        for (uint32_t j = 0; j < recs[cs].size(); ++j) {
          const Piece& p = recs[cs][j];
          const uint32_t y = p.local / w;
          if (y != row) row = y, skipped = 0;
          const uint32_t before_row = all[cs * T + y];
          if (!owner[cs][j]) {
            ++skipped;
            continue;
          }
          const uint64_t rank = static_cast<uint64_t>(p.label) - 1 - before_row - skipped;
          fin[cs][j] = static_cast<uint32_t>(offset[cs * T + y] + rank + 1);
          pieces_->ref(p.parent).final = fin[cs][j];
        }
      }
      // The others take their component's number, given in this band or
      // an earlier one (a component starts at its topmost row).
      for (int64_t c = 0; c < cols_; ++c) {
        const size_t cs = static_cast<size_t>(c);
        for (uint32_t j = 0; j < recs[cs].size(); ++j)
          if (!owner[cs][j]) fin[cs][j] = pieces_->cref(recs[cs][j].parent).final;
      }
      tbb::parallel_for(int64_t{0}, cols_, [&](int64_t c) { relabel_tile(c, ty, recs, owner, fin, offset); });
    }
    st_.components = done;
  }

  void relabel_tile(int64_t c, int64_t ty, const std::vector<std::vector<Piece>>& recs,
                    const std::vector<std::vector<uint8_t>>& owner, const std::vector<std::vector<uint32_t>>& fin,
                    const std::vector<uint64_t>& offset) {
    const size_t cs = static_cast<size_t>(c), T = static_cast<size_t>(T_);
    const int64_t t = ty * cols_ + c;
    const uint32_t n = meta_[static_cast<size_t>(t)].pieces;
    if (n == 0) return;
    const Rect r = grid_.tile_rect(c, ty);
    if (mask_out_) return mask_tile(c, ty, r, n, recs[cs], fin[cs]);
    ScratchStore::Pin pin = store_->acquire(c, ty);
    const Image& img = pin.image();
    thread_local std::vector<uint32_t> map;
    map.resize(static_cast<size_t>(n) + 1);
    map[0] = 0;
    uint32_t next = 1, bj = 0;
    const std::vector<Piece>& rc = recs[cs];
    for (int64_t y = 0; y < r.h; ++y) {
      uint32_t* row = img.ptr<uint32_t>(r.x, r.y + y);
      uint64_t on_row = 0;  // components started so far on this row of the tile
      const uint64_t off = offset[cs * T + static_cast<size_t>(y)];
      for (int64_t x = 0; x < r.w; ++x) {
        const uint32_t k = row[x];
        if (k == next) {  // a piece's first pixel: labels first appear in order
          uint32_t v;
          if (bj < rc.size() && rc[bj].label == k) {
            v = fin[cs][bj];
            on_row += owner[cs][bj];
            ++bj;
          } else {
            v = static_cast<uint32_t>(off + on_row + 1);
            ++on_row;
          }
          map[k] = v;
          ++next;
        }
        row[x] = map[k];
      }
    }
    pin.mark_dirty();
  }

  // The mask's last pass: tile (c, ty)'s labels computed again (as the
  // local pass left them), 255 where their component is kept: every label
  // drop_interior left inside the tile, and a border piece where its
  // component has a number.
  void mask_tile(int64_t c, int64_t ty, const Rect& r, uint32_t n, const std::vector<Piece>& rc,
                 const std::vector<uint32_t>& fin) {
    const Image in = mask_.read(0, r);
    thread_local TileWork w;
    thread_local std::vector<uint32_t> lab;
    thread_local std::vector<uint8_t> keep;
    lab.resize(static_cast<size_t>(r.area()));
    // Only an input that changed between the passes (a file rewritten
    // meanwhile) labels differently.
    if (tile_labels(in, r, lab.data(), static_cast<size_t>(r.w), nullptr, w, false) != n)
      throw InputError(mask_.info().path + " changed while it was read: the tile at " + std::to_string(r.x) + "," +
                       std::to_string(r.y) + " has other objects the second time");
    keep.assign(static_cast<size_t>(n) + 1, 255);
    keep[0] = 0;
    for (size_t j = 0; j < rc.size(); ++j) keep[rc[j].label] = fin[j] ? 255 : 0;
    ScratchStore::Pin pin = store_->acquire(c, ty, true);
    for (int64_t y = 0; y < r.h; ++y) {
      uint8_t* d = pin.image().ptr<uint8_t>(r.x, r.y + y);
      const uint32_t* l = lab.data() + static_cast<size_t>(y * r.w);
      for (int64_t x = 0; x < r.w; ++x) d[x] = keep[l[x]];
    }
    pin.mark_dirty();
  }

  const TileSource& mask_;
  int conn_;
  LabelFilter filter_;
  bool filtering_ = false;
  bool mask_out_ = false;
  std::atomic<uint64_t> interior_found_{0}, removed_[3] = {};  // small, large, border
  uint64_t border_found_ = 0;
  ExecContext& ctx_;
  LabelStats& st_;
  bool cuda_ = false;
  int threads_ = 1;
  int64_t W_ = 0, H_ = 0, T_ = 256, cols_ = 0, rows_ = 0;
  uint64_t S_ = 0;  // record slots per tile (its perimeter bounds its border pieces)
  TileGrid grid_;
  std::shared_ptr<ScratchStore> store_;
  std::unique_ptr<PagedArray<Piece>> pieces_;
  std::unique_ptr<PagedArray<uint32_t>> edges_, starts_;
  std::vector<TileMeta> meta_;
};

}  // namespace

namespace {

std::shared_ptr<ScratchStore> run_labeler(const TileSource& mask, int connectivity, ExecContext& ctx, LabelStats* stats,
                                          const LabelFilter& filter, bool mask_out) {
  if (connectivity != 4 && connectivity != 8)
    throw InputError("connectivity must be 4 or 8, not " + std::to_string(connectivity));
  if (mask.info().fmt.channels != 1)
    throw InputError(mask.info().path + " is " + mask.info().fmt.str() +
                     "; label needs a one-channel image (pick one first: filter channel --index N)");
  const auto t0 = Clock::now();
  LabelStats st;
  std::shared_ptr<ScratchStore> store;
  {
    Labeler job(mask, connectivity, filter, ctx, st, mask_out);
    store = job.run();
  }
  // The tables are gone.
  release_free_heap();
  st.seconds = since(t0);
  if (stats) *stats = st;
  return store;
}

}  // namespace

std::shared_ptr<ScratchStore> label_to_store(const TileSource& mask, int connectivity, ExecContext& ctx,
                                             LabelStats* stats, const LabelFilter& filter) {
  return run_labeler(mask, connectivity, ctx, stats, filter, false);
}

std::shared_ptr<ScratchStore> kept_components_mask(const TileSource& mask, int connectivity, ExecContext& ctx,
                                                   LabelStats* stats, const LabelFilter& filter) {
  return run_labeler(mask, connectivity, ctx, stats, filter, true);
}

namespace {

// The labels, read from the tile store, named, with the input's resolution.
class LabelsResult final : public TileSource {
 public:
  LabelsResult(std::shared_ptr<ScratchStore> store, const SourceInfo& like, const std::string& name)
      : store_(std::move(store)) {
    info_ = store_->info();
    info_.path = name;
    info_.format = "computed";
    info_.mpp_x = like.mpp_x, info_.mpp_y = like.mpp_y;
  }
  const std::shared_ptr<ScratchStore>& store() const { return store_; }

 protected:
  void read_inside(int level, const ImageView& dst) const override { store_->read(level, dst); }

 private:
  std::shared_ptr<ScratchStore> store_;
};

}  // namespace

void keep_result_cached(ScratchStore& store, ExecContext& ctx) {
  const size_t cache = std::min(store.full_bytes(), ctx.memory / 2);
  store.set_cache_bytes(cache);
  ctx.take_memory(cache);
}

std::shared_ptr<ScratchStore> store_of_labels(const TileSource& labels) {
  const auto* r = dynamic_cast<const LabelsResult*>(&labels);
  return r ? r->store() : nullptr;
}

std::shared_ptr<const TileSource> labels_result(std::shared_ptr<ScratchStore> store, const SourceInfo& like,
                                                const std::string& name) {
  return std::make_shared<LabelsResult>(std::move(store), like, name);
}

std::shared_ptr<const TileSource> label_components(std::shared_ptr<const TileSource> mask, int connectivity,
                                                   ExecContext& ctx, LabelStats* stats, const LabelFilter& filter) {
  const auto t0 = Clock::now();
  LabelStats st;
  std::shared_ptr<ScratchStore> store = label_to_store(*mask, connectivity, ctx, &st, filter);
  keep_result_cached(*store, ctx);
  st.seconds = since(t0);
  if (stats) *stats = st;
  return labels_result(std::move(store), mask->info(), "label");
}

}  // namespace tw
