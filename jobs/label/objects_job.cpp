#include "jobs/label/objects_job.hpp"

#include <tbb/parallel_for.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "engine/error.hpp"
#include "engine/memory.hpp"
#include "engine/next_nonzero.hpp"
#include "engine/op_registry.hpp"
#include "engine/scratch_store.hpp"
#include "io/vendor_metadata.hpp"
#include "jobs/label/label_job.hpp"
#include "jobs/label/paged_array.hpp"

namespace tw {
namespace {

using Clock = std::chrono::steady_clock;
using SourceP = std::shared_ptr<const TileSource>;

// One record per label value (2^32 of them, paged: only those in use cost
// memory or disk).
struct Object {
  uint64_t area;    // pixels (after holes are filled)
  uint64_t first;   // linear index of the first pixel + 1 (0: not seen)
  uint32_t border;  // has a pixel on the image's border
  uint32_t number;  // the new label, once given (0: removed)
};

// One record per object of a tile, in raster order of its first pixel in
// the tile (the order a scan meets them). A tile's records are its only
// per-object state between the scan and the renumbering: no second scan
// finds where objects start, and the rewrite looks labels up among them.
struct TileObject {
  uint32_t label;
  uint32_t first;  // y * w + x of its first pixel in the tile, | kOnBorder
  uint32_t area;   // its pixels in the tile (tiles are at most 16384^2 = 2^28 pixels)
};
constexpr uint32_t kOnBorder = 0x80000000u;  // in first: a pixel on the image's border

// Where a tile's records are in the record table.
struct TileSpan {
  uint64_t offset = 0;
  uint32_t count = 0;
};

// Label value -> index among a tile's records: open addressing on a
// power-of-two table, emptied slot by slot between tiles (a tile holds a
// few dozen objects; clearing the whole table would cost more than the tile).
class LabelIndex {
 public:
  void reset() {
    for (const uint32_t s : used_) keys_[s] = 0;
    used_.clear();
    if (keys_.empty()) resize(1024);
  }
  // The index of v (non-zero); if absent, v is added with index `fresh`.
  uint32_t get_or_add(uint32_t v, uint32_t fresh, bool& added) {
    if (2 * (used_.size() + 1) > keys_.size()) resize(2 * keys_.size());
    size_t s = slot(v);
    while (keys_[s]) {
      if (keys_[s] == v) {
        added = false;
        return vals_[s];
      }
      s = (s + 1) & mask_;
    }
    keys_[s] = v, vals_[s] = fresh;
    used_.push_back(static_cast<uint32_t>(s));
    added = true;
    return fresh;
  }
  // The index of v, which is present.
  uint32_t at(uint32_t v) const {
    size_t s = slot(v);
    while (keys_[s] != v) s = (s + 1) & mask_;
    return vals_[s];
  }

 private:
  size_t slot(uint32_t v) const { return static_cast<size_t>((v * 0x9E3779B97F4A7C15ull) >> shift_); }
  void resize(size_t n) {
    std::vector<std::pair<uint32_t, uint32_t>> kept;
    for (const uint32_t s : used_) kept.emplace_back(keys_[s], vals_[s]);
    keys_.assign(n, 0), vals_.assign(n, 0), used_.clear();
    mask_ = n - 1;
    shift_ = 64;
    for (size_t k = n; k > 1; k >>= 1) --shift_;
    for (const auto& [k, v] : kept) {
      size_t s = slot(k);
      while (keys_[s]) s = (s + 1) & mask_;
      keys_[s] = k, vals_[s] = v;
      used_.push_back(static_cast<uint32_t>(s));
    }
  }
  std::vector<uint32_t> keys_, vals_, used_;
  size_t mask_ = 0;
  int shift_ = 64;
};

// A hole candidate: a background component (of the labelled background) and
// the one object around it, or kSeveral.
constexpr uint32_t kSeveral = 0xFFFFFFFFu;

// The background of a label store as a 0/1 mask, for labelling the holes.
class Background final : public TileSource {
 public:
  explicit Background(std::shared_ptr<ScratchStore> labels) : labels_(std::move(labels)) {
    info_ = labels_->info();
    info_.path = "background";
    info_.fmt = kGray8;
  }

 protected:
  void read_inside(int, const ImageView& dst) const override {
    const Image l = labels_->read(0, dst.rect);
    for (int64_t y = dst.rect.y; y < dst.rect.y1(); ++y) {
      const uint32_t* s = l.row<uint32_t>(y);
      uint8_t* d = dst.row<uint8_t>(y);
      for (int64_t x = 0; x < dst.rect.w; ++x) d[x] = s[x] == 0;
    }
  }

 private:
  std::shared_ptr<ScratchStore> labels_;
};

// The areas and border asked for, as the labelling's filter (both the mask
// path and the labels path filter with it); square microns from the image's
// pixel size.
LabelFilter filter_of(const ObjectsParams& p, const SourceInfo& i) {
  LabelFilter f;
  f.min_area = p.min_area, f.max_area = p.max_area, f.exclude_border = p.exclude_border;
  if (p.um2) {
    if (i.mpp_x <= 0 || i.mpp_y <= 0)
      throw InputError(no_pixel_size(i.path) + "; --units um2 needs one (or give areas in px)");
    f.px_area = i.mpp_x * i.mpp_y;
  }
  return f;
}

// Filters u32 labels (or a mask labelled first, for --fill-holes) in a tile
// store: one scan per tile records its objects (area, first pixel, border
// contact); per object, a record indexed by label value sums them; band by
// band the kept objects are numbered in raster order of their first pixels
// (from the tiles' records, without reading pixels) and the tiles are
// rewritten. Two passes over the pixels: the scan (copying u32 input into
// the store), and the rewrite.
class ObjectFilter {
 public:
  ObjectFilter(SourceP in, const ObjectsParams& p, ExecContext& ctx, ObjectsStats& st)
      : in_(std::move(in)), p_(p), ctx_(ctx), st_(st) {
    const LevelInfo& l0 = in_->level(0);
    W_ = l0.width, H_ = l0.height;
    set_tile(ctx.tile);
    if (T_ < 16 || T_ > 16384) throw InputError("--tile must be between 16 and 16384");
    M_ = ctx.memory;
    filter_ = filter_of(p_, in_->info());
  }

  // The store of the new labels; null where they are a view of the input
  // (take_map() then gives the table of the new numbers).
  std::shared_ptr<ScratchStore> run() {
    const bool copy = !p_.fill_holes;
    if (copy) {
      // u32 labels, nothing to fill: the scan copies them into the store,
      // which gets what the tables leave of the budget; or, for a view,
      // reads them without keeping them.
      TW_ASSERT(in_->info().fmt.type == SampleType::kU32);
      if (!p_.view_of_input) store_ = make_store(copy_store_cache());
    } else {
      load();
      fill_holes();
    }
    objects_ = std::make_unique<PagedArray<Object>>(uint64_t{1} << 32, M_ / 8, ctx_.scratch_path());
    scan(copy && store_ != nullptr);
    merge();
    if (!store_) {
      // The table of new numbers by old label: one u32 per value up to the
      // largest (a watershed's labels are its markers' numbers, 1..N); where
      // that is more than an eighth of the budget, a store after all, filled
      // from the input as the renumbering rewrites it.
      if ((static_cast<size_t>(max_label_) + 1) * 4 <= M_ / 8)
        map_.assign(static_cast<size_t>(max_label_) + 1, 0u);
      else
        store_ = make_store(copy_store_cache()), refill_ = true;
    }
    renumber();
    st_.tiles_spilled = store_ ? store_->stats().spills : 0;
    st_.table_pages_spilled = objects_->spills() + records_->spills();
    return store_;
  }

  std::vector<uint32_t> take_map() { return std::move(map_); }

 private:
  size_t copy_store_cache() const { return M_ - M_ / 8 - M_ / 16 - M_ / 16; }

  void set_tile(int64_t t) {
    T_ = t;
    grid_ = TileGrid{W_, H_, T_, T_};
    cols_ = grid_.cols(), rows_ = grid_.rows();
  }

  std::shared_ptr<ScratchStore> make_store(size_t cache) {
    return std::make_shared<ScratchStore>(PixelFormat{SampleType::kU32, 1}, W_, H_, T_,
                                          std::max(cache, static_cast<size_t>(T_ * T_) * 4 * 8), ctx_.scratch_path(),
                                          "objects");
  }

  void for_tiles(const std::function<void(int64_t tx, int64_t ty, const Rect& r)>& fn) {
    tbb::parallel_for(int64_t{0}, grid_.count(),
                      [&](int64_t t) { fn(t % cols_, t / cols_, grid_.tile_rect(t % cols_, t / cols_)); });
  }

  // For --fill-holes, the labels into a store of a third of the budget (the
  // holes' labelling takes another third): a mask is labelled straight into
  // it, u32 labels are copied.
  void load() {
    ExecContext sub = ctx_;
    sub.memory = M_ / 3;
    if (in_->info().fmt.type != SampleType::kU32) {
      store_ = label_to_store(*in_, p_.connectivity, sub);
      store_->set_cache_bytes(std::max(M_ / 3, store_->tile_bytes() * 8));
      set_tile(store_->grid().tile_w);
      return;
    }
    store_ = make_store(M_ / 3);
    for_tiles([&](int64_t tx, int64_t ty, const Rect& r) {
      ScratchStore::Pin pin = store_->acquire(tx, ty, true);
      in_->read(0, pin.image().view().sub(r));
      pin.mark_dirty();
    });
  }

  // Background components (of the other connectivity) that touch neither
  // the image's border nor two objects take the one object around them.
  void fill_holes() {
    const int bg_conn = p_.connectivity == 8 ? 4 : 8;
    ExecContext sub = ctx_;
    sub.memory = M_ / 3;
    LabelStats ls;
    const SourceP holes = label_components(std::make_shared<Background>(store_), bg_conn, sub, &ls);
    if (ls.components == 0) return;
    PagedArray<uint32_t> around(ls.components + 1, M_ / 16, ctx_.scratch_path());
    std::mutex mu;
    // Each background pixel's neighbours (its connectivity) that are objects.
    for_tiles([&](int64_t, int64_t, const Rect& r) {
      const Rect g = r.grown(1).intersect(grid_.bounds());
      const Image h = holes->read(0, r);
      const Image l = store_->read(0, g);
      std::unordered_map<uint32_t, uint32_t> seen;
      for (int64_t y = r.y; y < r.y1(); ++y)
        for (int64_t x = r.x; x < r.x1(); ++x) {
          const uint32_t k = *h.ptr<uint32_t>(x, y);
          if (!k) continue;
          auto it = seen.emplace(k, 0).first;
          uint32_t& o = it->second;
          if (o == kSeveral) continue;
          if (x == 0 || y == 0 || x == W_ - 1 || y == H_ - 1) {
            o = kSeveral;
            continue;
          }
          for (int dy = -1; dy <= 1; ++dy)
            for (int dx = -1; dx <= 1; ++dx) {
              if ((dx == 0 && dy == 0) || (bg_conn == 4 && dx != 0 && dy != 0)) continue;
              const uint32_t v = *l.ptr<uint32_t>(x + dx, y + dy);
              if (!v) continue;
              o = o == 0 || o == v ? v : kSeveral;
            }
        }
      std::lock_guard<std::mutex> lock(mu);
      for (const auto& [k, o] : seen) {
        uint32_t& a = around.ref(k);
        a = a == 0 ? o : (o == 0 || o == a ? a : kSeveral);
      }
    });
    // A component with no object beside it is the whole background of an
    // image with no objects touching it: it touches the border, or there
    // are no objects at all. Either way nothing to fill.
    std::atomic<uint64_t> filled{0};
    for_tiles([&](int64_t tx, int64_t ty, const Rect& r) {
      const Image h = holes->read(0, r);
      uint32_t last = 0, obj = 0;
      ScratchStore::Pin pin = store_->acquire(tx, ty);
      bool dirty = false;
      for (int64_t y = r.y; y < r.y1(); ++y) {
        uint32_t* row = pin.image().ptr<uint32_t>(r.x, y);
        const uint32_t* hr = h.ptr<uint32_t>(r.x, y);
        for (int64_t x = 0; x < r.w; ++x) {
          const uint32_t k = hr[x];
          if (!k) continue;
          if (k != last) {
            std::lock_guard<std::mutex> lock(mu);
            obj = around.get(k);
            last = k;
          }
          if (obj != 0 && obj != kSeveral) row[x] = obj, dirty = true;
        }
      }
      if (dirty) pin.mark_dirty();
    });
    for (uint64_t k = 1; k <= ls.components; ++k) {
      const uint32_t o = around.cref(k);
      filled += o != 0 && o != kSeveral;
    }
    st_.holes_filled = filled;
  }

  uint64_t linear(int64_t t, uint32_t local) const {
    const Rect r = grid_.tile_rect(t % cols_, t / cols_);
    local &= ~kOnBorder;
    const uint64_t y = static_cast<uint64_t>(r.y) + local / static_cast<uint32_t>(r.w);
    const uint64_t x = static_cast<uint64_t>(r.x) + local % static_cast<uint32_t>(r.w);
    return y * static_cast<uint64_t>(W_) + x;
  }

  // Every tile's objects, in the order the scan meets them, into the record
  // table (a tile's records are contiguous; at most one per pixel).
  void scan(bool copy) {
    spans_.assign(static_cast<size_t>(grid_.count()), TileSpan{});
    records_ = std::make_unique<PagedArray<TileObject>>(static_cast<uint64_t>(W_) * static_cast<uint64_t>(H_), M_ / 16,
                                                        ctx_.scratch_path());
    std::atomic<uint64_t> next{0};
    std::atomic<uint32_t> max_label{0};
    for_tiles([&](int64_t tx, int64_t ty, const Rect& r) {
      thread_local LabelIndex index;
      thread_local std::vector<TileObject> objs;
      thread_local Image buf;  // the input's tile, for a view (no store)
      ScratchStore::Pin pin;
      ImageView tile;
      if (store_) {
        pin = store_->acquire(tx, ty, copy);
        tile = pin.image().view();
        if (copy) {
          in_->read(0, tile.sub(r));
          pin.mark_dirty();
        }
      } else {
        const PixelFormat f{SampleType::kU32, 1};
        if (buf.can_hold(f, r))
          buf.reshape(f, r);
        else
          buf = Image(f, r);
        tile = buf.view();
        in_->read(0, tile);
      }
      index.reset();
      objs.clear();
      const bool top = r.y == 0, bottom = r.y1() == H_, left = r.x == 0, right = r.x1() == W_;
      for (int64_t y = 0; y < r.h; ++y) {
        const uint32_t* row = tile.ptr<uint32_t>(r.x, r.y + y);
        const bool edge_row = (top && y == 0) || (bottom && y == r.h - 1);
        for (int64_t x = next_nonzero(row, 0, r.w); x < r.w; x = next_nonzero(row, x, r.w)) {
          const uint32_t v = row[x];
          const int64_t x0 = x;
          while (++x < r.w && row[x] == v) {
          }
          bool added;
          const uint32_t i = index.get_or_add(v, static_cast<uint32_t>(objs.size()), added);
          if (added) objs.push_back(TileObject{v, static_cast<uint32_t>(y * r.w + x0), 0});
          TileObject& o = objs[i];
          o.area += static_cast<uint32_t>(x - x0);
          if (edge_row || (left && x0 == 0) || (right && x == r.w)) o.first |= kOnBorder;
        }
      }
      uint32_t top_label = 0;
      for (const TileObject& o : objs) top_label = std::max(top_label, o.label);
      for (uint32_t m = max_label.load(); top_label > m && !max_label.compare_exchange_weak(m, top_label);) {
      }
      TileSpan& sp = spans_[static_cast<size_t>(ty * cols_ + tx)];
      sp.count = static_cast<uint32_t>(objs.size());
      sp.offset = next.fetch_add(objs.size());
      if (!objs.empty()) records_->write(sp.offset, objs.data(), objs.size());
    });
    max_label_ = max_label.load();
  }

  // The objects' areas, first pixels and border contact, summed over their
  // tiles (one thread: the table is paged; a few records per tile).
  void merge() {
    std::vector<TileObject> objs;
    for (int64_t t = 0; t < grid_.count(); ++t) {
      const TileSpan& sp = spans_[static_cast<size_t>(t)];
      objs.resize(sp.count);
      if (sp.count) records_->read(sp.offset, objs.data(), sp.count);
      for (const TileObject& to : objs) {
        const uint64_t g = linear(t, to.first) + 1;
        Object& o = objects_->ref(to.label);
        o.first = o.area == 0 ? g : std::min(o.first, g);
        o.area += to.area;
        o.border |= (to.first & kOnBorder) != 0;
      }
    }
  }

  bool keep(const Object& o) const { return filter_.keep(o.area, o.border); }

  // Band by band: the kept objects starting in the band (at their first
  // pixel's record) are counted per (tile column, row), an exclusive prefix
  // in raster order numbers them, every record of the band takes its
  // object's number (given in this band or above: an object starts on its
  // topmost row), and the band's tiles are rewritten.
  void renumber() {
    const size_t T = static_cast<size_t>(T_);
    std::vector<uint32_t> counts(static_cast<size_t>(cols_) * T);
    std::vector<uint64_t> offset(counts.size());
    std::vector<std::vector<TileObject>> objs(static_cast<size_t>(cols_));
    std::vector<std::vector<uint32_t>> num(static_cast<size_t>(cols_));
    uint64_t done = 0;
    for (int64_t ty = 0; ty < rows_; ++ty) {
      const int64_t h = grid_.tile_rect(0, ty).h;
      std::fill(counts.begin(), counts.end(), 0u);
      for (int64_t c = 0; c < cols_; ++c) {
        const size_t cs = static_cast<size_t>(c);
        const int64_t t = ty * cols_ + c;
        const TileSpan& sp = spans_[static_cast<size_t>(t)];
        const uint32_t w = static_cast<uint32_t>(grid_.tile_rect(c, ty).w);
        objs[cs].resize(sp.count);
        num[cs].assign(sp.count, 0);
        if (sp.count) records_->read(sp.offset, objs[cs].data(), sp.count);
        for (uint32_t i = 0; i < sp.count; ++i) {
          const TileObject& to = objs[cs][i];
          const Object& o = objects_->cref(to.label);
          if (o.first != linear(t, to.first) + 1) continue;  // starts in another tile
          ++st_.objects;
          if (keep(o)) {
            ++st_.kept;
            num[cs][i] = 1;
            ++counts[cs * T + (to.first & ~kOnBorder) / w];
          } else if (p_.exclude_border && o.border) {
            ++st_.removed_border;
          } else {
            ++(filter_.too_small(o.area) ? st_.removed_small : st_.removed_large);
          }
        }
      }
      for (int64_t y = 0; y < h; ++y)
        for (int64_t c = 0; c < cols_; ++c) {
          const size_t k = static_cast<size_t>(c) * T + static_cast<size_t>(y);
          offset[k] = done;
          done += counts[k];
        }
      // Records are in raster order within their tile.
      for (int64_t c = 0; c < cols_; ++c) {
        const size_t cs = static_cast<size_t>(c);
        const uint32_t w = static_cast<uint32_t>(grid_.tile_rect(c, ty).w);
        uint32_t row = UINT32_MAX;
        uint64_t on_row = 0;
        for (size_t i = 0; i < objs[cs].size(); ++i) {
          if (!num[cs][i]) continue;
          const uint32_t y = (objs[cs][i].first & ~kOnBorder) / w;
          if (y != row) row = y, on_row = 0;
          num[cs][i] = static_cast<uint32_t>(offset[cs * T + y] + ++on_row);
          objects_->ref(objs[cs][i].label).number = num[cs][i];
        }
      }
      for (int64_t c = 0; c < cols_; ++c) {
        const size_t cs = static_cast<size_t>(c);
        for (size_t i = 0; i < objs[cs].size(); ++i)
          if (!num[cs][i]) num[cs][i] = objects_->cref(objs[cs][i].label).number;
      }
      if (!store_) {
        // A view: the new numbers go into the table, the tiles stay as they are.
        for (int64_t c = 0; c < cols_; ++c) {
          const size_t cs = static_cast<size_t>(c);
          for (size_t i = 0; i < objs[cs].size(); ++i) map_[objs[cs][i].label] = num[cs][i];
        }
        continue;
      }
      tbb::parallel_for(int64_t{0}, cols_, [&](int64_t c) {
        const size_t cs = static_cast<size_t>(c);
        if (objs[cs].empty()) return;
        thread_local LabelIndex index;
        index.reset();
        bool added;
        for (size_t i = 0; i < objs[cs].size(); ++i)
          index.get_or_add(objs[cs][i].label, static_cast<uint32_t>(i), added);
        const Rect r = grid_.tile_rect(c, ty);
        ScratchStore::Pin pin = store_->acquire(c, ty, refill_);
        if (refill_) in_->read(0, pin.image().view().sub(r));
        uint32_t last = 0, last_n = 0;
        for (int64_t y = r.y; y < r.y1(); ++y) {
          uint32_t* row = pin.image().ptr<uint32_t>(r.x, y);
          for (int64_t x = 0; x < r.w; ++x) {
            const uint32_t v = row[x];
            if (!v) continue;
            if (v != last) last = v, last_n = num[cs][index.at(v)];
            row[x] = last_n;
          }
        }
        pin.mark_dirty();
      });
    }
  }

  SourceP in_;
  ObjectsParams p_;
  ExecContext& ctx_;
  ObjectsStats& st_;
  size_t M_ = 0;  // the budget when the job started
  int64_t W_ = 0, H_ = 0, T_ = 256, cols_ = 0, rows_ = 0;
  LabelFilter filter_;  // the areas and border asked for (px_area with --units um2)
  TileGrid grid_;
  std::shared_ptr<ScratchStore> store_;
  std::unique_ptr<PagedArray<Object>> objects_;
  std::unique_ptr<PagedArray<TileObject>> records_;
  std::vector<TileSpan> spans_;
  uint32_t max_label_ = 0;     // the largest input label (after the scan)
  std::vector<uint32_t> map_;  // for a view: the new number of each input label (0: removed)
  bool refill_ = false;        // a view's table would not fit: the rewrite reads the input into the store
};

// Kept objects as a view of u32 labels: each read reads the labels and
// renumbers them through the table (labels beyond it read as 0, as do
// removed objects). What a pipeline's final `objects` on a watershed's
// result gives: no second image of u32 labels (256 MB for 8192²), and the
// watershed's own result holds only the mask's pixels.
class RenumberedLabels final : public TileSource {
 public:
  RenumberedLabels(SourceP labels, std::vector<uint32_t> map) : labels_(std::move(labels)), map_(std::move(map)) {
    info_ = labels_->info();
    info_.levels.resize(1);
    info_.path = "objects";
    info_.format = "computed";
  }

 protected:
  void read_inside(int, const ImageView& dst) const override {
    labels_->read(0, dst);
    const size_t n = map_.size();
    for (int64_t y = dst.rect.y; y < dst.rect.y1(); ++y) {
      uint32_t* row = dst.row<uint32_t>(y);
      uint32_t last = 0, last_n = 0;
      for (int64_t x = 0; x < dst.rect.w; ++x) {
        const uint32_t v = row[x];
        if (!v) continue;
        if (v != last) last = v, last_n = v < n ? map_[v] : 0;
        row[x] = last_n;
      }
    }
  }

 private:
  SourceP labels_;
  std::vector<uint32_t> map_;
};

// --mask: the kept objects as a u8 mask, 255 on them, in a store of a
// quarter of the labels' bytes, tile by tile from the labels' store (pinned
// in place: copied out, each 256 KB tile cost an allocation and its page
// faults); the labels' store then goes, and its share of the budget
// (labels_share) comes back. For steps that need only where the objects are
// (the nuclei pipeline holds its foreground through five steps: 200 MB less
// for an 8192² slide).
SourceP objects_mask(SourceP labels, size_t labels_share, ExecContext& ctx) {
  const SourceInfo& info = labels->info();
  const std::shared_ptr<ScratchStore> from = store_of_labels(*labels);
  if (!from) throw InternalError("objects --mask: the labels are not in a store");
  const TileGrid& grid = from->grid();
  const size_t tile_px = static_cast<size_t>(grid.tile_w * grid.tile_h);
  const size_t cache = ctx.take_memory(std::min(tile_px * static_cast<size_t>(grid.count()), ctx.memory / 2));
  auto store = std::make_shared<ScratchStore>(PixelFormat{SampleType::kU8, 1}, grid.width, grid.height, grid.tile_w,
                                              std::max(cache, tile_px * 8), ctx.scratch_path(), "objects mask");
  store->set_resolution(info.mpp_x, info.mpp_y);
  tbb::parallel_for(int64_t{0}, grid.count(), [&](int64_t t) {
    const int64_t tx = t % grid.cols(), ty = t / grid.cols();
    const ScratchStore::Pin in = from->acquire(tx, ty);
    ScratchStore::Pin out = store->acquire(tx, ty, true);
    const Rect r = grid.tile_full_rect(tx, ty);
    for (int64_t y = r.y; y < r.y1(); ++y) {
      const uint32_t* l = in.image().row<uint32_t>(y);
      uint8_t* m = out.image().row<uint8_t>(y);
      for (int64_t x = 0; x < r.w; ++x) m[x] = l[x] ? 255 : 0;
    }
    out.mark_dirty();
  });
  labels.reset();
  ctx.memory += labels_share;
  return store;
}

}  // namespace

std::shared_ptr<const TileSource> filter_objects(std::shared_ptr<const TileSource> labels, const ObjectsParams& p,
                                                 ExecContext& ctx, ObjectsStats* stats, bool* is_view) {
  const PixelFormat f = labels->info().fmt;
  if (f.channels != 1 || (f.type != SampleType::kU32 && f.type != SampleType::kU8 && f.type != SampleType::kU16))
    throw InputError(labels->info().path + " is " + f.str() +
                     "; objects needs u32 labels or a one-channel 8/16-bit mask");
  const auto t0 = Clock::now();
  ObjectsStats st;
  if (is_view) *is_view = false;
  if (f.type != SampleType::kU32 && !p.fill_holes) {
    // A mask's objects are its connected components: labelled and filtered
    // in one labelling, whose store is the result.
    LabelStats ls;
    SourceP out;
    if (p.mask_out) {
      std::shared_ptr<ScratchStore> mask =
          kept_components_mask(*labels, p.connectivity, ctx, &ls, filter_of(p, labels->info()));
      keep_result_cached(*mask, ctx);
      mask->set_resolution(labels->info().mpp_x, labels->info().mpp_y);
      out = mask;
    } else {
      out = label_components(labels, p.connectivity, ctx, &ls, filter_of(p, labels->info()));
    }
    st.objects = ls.found, st.kept = ls.components;
    st.removed_small = ls.removed_small, st.removed_large = ls.removed_large, st.removed_border = ls.removed_border;
    st.tiles_spilled = ls.tiles_spilled, st.table_pages_spilled = ls.table_pages_spilled;
    st.labelling = ls;
    st.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
    if (stats) *stats = st;
    return out;
  }
  std::shared_ptr<ScratchStore> store;
  std::vector<uint32_t> map;
  {
    ObjectFilter job(labels, p, ctx, st);
    store = job.run();
    if (!store) map = job.take_map();
  }
  release_free_heap();
  if (!store) {
    ctx.take_memory(map.size() * 4);
    st.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
    if (stats) *stats = st;
    if (is_view) *is_view = true;
    return std::make_shared<RenumberedLabels>(std::move(labels), std::move(map));
  }
  keep_result_cached(*store, ctx);
  st.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  if (stats) *stats = st;
  return labels_result(std::move(store), labels->info(), "objects");
}

void register_objects(OpRegistry& r) {
  OpDef op;
  op.name = "objects";
  op.command = {"objects"};
  op.category = OpCategory::kWholeImage;
  op.summary = "object filters: area, border, holes; kept objects renumbered 1..N in raster order";
  op.usage =
      "[--min-area A] [--max-area A] [--units px|um2] [--exclude-border] [--fill-holes] [--connectivity 4|8] "
      "[--mask]";
  op.help =
      "Filters the objects of a label image (an object is all pixels of one label; a\n"
      "u8/u16 mask is labelled first with --connectivity). --fill-holes first fills each\n"
      "object's holes: background regions (4-connected for 8-connected objects, 8 for 4)\n"
      "that touch neither the image border nor another object. Then objects with area\n"
      "below --min-area or above --max-area (pixels, or square microns with --units um2,\n"
      "from the image's mpp) are removed, and with --exclude-border those with a pixel\n"
      "on the image border. The kept objects are renumbered 1..N in raster order of\n"
      "their first pixels (skimage remove_small_objects, then a relabelling). With --mask\n"
      "the result is a u8 mask instead, 255 on the kept objects.";
  op.takes = "u32 labels, or a one-channel u8/u16 mask";
  op.params = {ParamSpec::real("min-area", "A", 0, 1e18, "0", "remove objects smaller than A"),
               ParamSpec::real("max-area", "A", 0, 1e18, "", "remove objects larger than A (default: no limit)"),
               ParamSpec::choice("units", "U", {"px", "um2"}, "px", "units of the areas: px (default) or um2"),
               ParamSpec::flag("exclude-border", "remove objects touching the image border"),
               ParamSpec::flag("fill-holes", "fill each object's holes (before the area filter)"),
               ParamSpec::choice("connectivity", "N", {"4", "8"}, "8",
                                 "of a mask's objects: 4 or 8 (default); holes take the other"),
               ParamSpec::flag("mask", "write a u8 mask (255 on the kept objects), not their labels")};
  // A range that keeps nothing is a mistake, not a filter (it ran and
  // removed every object without a word).
  op.validate = [](const OpParams& p) {
    if (p.has("max-area") && p.real("max-area") < p.real("min-area"))
      throw ParamError("objects: --max-area " + p.text("max-area") + " is below --min-area " + p.text("min-area") +
                       ": nothing could be kept");
  };
  op.output_format = [](const std::vector<ImageType>& in, const OpParams& p) {
    const PixelFormat f = in[0].fmt;
    if (f.channels != 1 || (f.type != SampleType::kU32 && f.type != SampleType::kU8 && f.type != SampleType::kU16))
      throw InputError(in[0].name + " is " + f.str() + "; objects needs u32 labels or a one-channel 8/16-bit mask");
    return PixelFormat{p.flag("mask") ? SampleType::kU8 : SampleType::kU32, 1};
  };
  op.run = [](const std::vector<SourceP>& in, const OpParams& p, ExecContext& ctx) {
    ObjectsParams op;
    op.min_area = p.real("min-area");
    if (p.has("max-area")) op.max_area = p.real("max-area");
    op.um2 = p.choice("units") == "um2";
    op.exclude_border = p.flag("exclude-border");
    op.fill_holes = p.flag("fill-holes");
    op.connectivity = p.choice("connectivity") == "4" ? 4 : 8;
    // In a pipeline, the kept objects of a result the run holds are a view
    // of it (not with --mask: that reads a store of labels).
    op.view_of_input = ctx.inputs_held && !p.flag("mask");
    // A mask's kept objects as a mask straight from the labelling, on the
    // CPU (on CUDA its tiles are labelled on the GPU; labelling them again
    // on the CPU would cost more than the u32 store, which fits there).
    op.mask_out = p.flag("mask") && !ctx.backend.is_cuda();
    ObjectsStats st;
    OpResult res;
    const size_t before = ctx.memory;
    res.image = filter_objects(in[0], op, ctx, &st, &res.reads_inputs);
    if (p.flag("mask") && res.image->info().fmt.type != SampleType::kU8)
      res.image = objects_mask(std::move(res.image), before - ctx.memory, ctx);
    res.description = "Tilewave objects";
    char what[240];
    std::snprintf(what, sizeof what, "%llu of %llu objects kept in %.2f s", static_cast<unsigned long long>(st.kept),
                  static_cast<unsigned long long>(st.objects), st.seconds);
    res.summary = what;
    res.messages.push_back("objects kept: " + std::to_string(st.kept) + " of " + std::to_string(st.objects));
    res.values = {{"objects", st.objects},
                  {"kept", st.kept},
                  {"removed_small", st.removed_small},
                  {"removed_large", st.removed_large},
                  {"removed_border", st.removed_border},
                  {"holes_filled", st.holes_filled},
                  {"objects_tiles_spilled", st.tiles_spilled},
                  {"objects_table_pages_spilled", st.table_pages_spilled},
                  {"objects_seconds", st.seconds},
                  {"objects_view", res.reads_inputs}};
    if (st.labelling.tiles) {
      const LabelStats& l = st.labelling;
      res.values["label_tile"] = l.tile;
      res.values["label_tile_seconds"] = l.local_seconds;
      res.values["label_merge_seconds"] = l.merge_seconds;
      res.values["label_relabel_seconds"] = l.relabel_seconds;
      res.values["label_tiles"] = l.tiles;
      res.values["label_gpu_tiles"] = l.gpu_tiles;
      res.values["gpu_kernel_seconds"] = l.gpu_kernel_seconds;
      res.values["gpu_transfer_seconds"] = l.gpu_transfer_seconds;
    }
    return res;
  };
  r.add(std::move(op));
}

}  // namespace tw
