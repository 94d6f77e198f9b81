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
#include "engine/op_registry.hpp"
#include "engine/scratch_store.hpp"
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

class ObjectFilter {
 public:
  ObjectFilter(SourceP in, const ObjectsParams& p, ExecContext& ctx, ObjectsStats& st)
      : in_(std::move(in)), p_(p), ctx_(ctx), st_(st) {
    const LevelInfo& l0 = in_->level(0);
    W_ = l0.width, H_ = l0.height;
    T_ = ctx.tile;
    if (T_ < 16 || T_ > 16384) throw InputError("--tile must be between 16 and 16384");
    grid_ = TileGrid{W_, H_, T_, T_};
    cols_ = grid_.cols(), rows_ = grid_.rows();
    const size_t M = ctx.memory;
    store_ = std::make_shared<ScratchStore>(PixelFormat{SampleType::kU32, 1}, W_, H_, T_,
                                            std::max(M / 3, static_cast<size_t>(T_ * T_) * 4 * 8), ctx.scratch_path(),
                                            "objects");
    objects_ = std::make_unique<PagedArray<Object>>(uint64_t{1} << 32, M / 8, ctx.scratch_path());
    starts_ = std::make_unique<PagedArray<uint32_t>>(static_cast<uint64_t>(grid_.count()) * static_cast<uint64_t>(T_),
                                                     M / 16, ctx.scratch_path());
    if (p_.um2) {
      const SourceInfo& i = in_->info();
      if (i.mpp_x <= 0 || i.mpp_y <= 0)
        throw InputError(i.path + " has no pixel size (mpp); --units um2 needs one (or give areas in px)");
      px_area_ = i.mpp_x * i.mpp_y;
    }
  }

  std::shared_ptr<ScratchStore> run() {
    load();
    if (p_.fill_holes) fill_holes();
    measure();
    count_starts();
    renumber();
    return store_;
  }

 private:
  void for_tiles(const std::function<void(int64_t tx, int64_t ty, const Rect& r)>& fn) {
    tbb::parallel_for(int64_t{0}, grid_.count(),
                      [&](int64_t t) { fn(t % cols_, t / cols_, grid_.tile_rect(t % cols_, t / cols_)); });
  }

  // The labels into the store (a binary mask labelled first).
  void load() {
    SourceP src = in_;
    const PixelFormat f = in_->info().fmt;
    if (f.type != SampleType::kU32) {
      ExecContext sub = ctx_;
      sub.memory = ctx_.memory / 3;
      src = label_components(in_, p_.connectivity, sub);
    }
    for_tiles([&](int64_t tx, int64_t ty, const Rect& r) {
      ScratchStore::Pin pin = store_->acquire(tx, ty, true);
      src->read(0, pin.image().view().sub(r));
      pin.mark_dirty();
    });
  }

  // Background components (of the other connectivity) that touch neither
  // the image's border nor two objects take the one object around them.
  void fill_holes() {
    const int bg_conn = p_.connectivity == 8 ? 4 : 8;
    ExecContext sub = ctx_;
    sub.memory = ctx_.memory / 3;
    LabelStats ls;
    const SourceP holes = label_components(std::make_shared<Background>(store_), bg_conn, sub, &ls);
    if (ls.components == 0) return;
    PagedArray<uint32_t> around(ls.components + 1, ctx_.memory / 16, ctx_.scratch_path());
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

  // Area, first pixel and border contact of every object.
  void measure() {
    std::mutex mu;
    for_tiles([&](int64_t tx, int64_t ty, const Rect& r) {
      struct Acc {
        uint64_t area = 0, first = 0;
        uint32_t border = 0;
      };
      std::unordered_map<uint32_t, Acc> acc;
      {
        ScratchStore::Pin pin = store_->acquire(tx, ty);
        uint32_t last = 0;
        Acc* a = nullptr;
        for (int64_t y = r.y; y < r.y1(); ++y) {
          const uint32_t* row = pin.image().ptr<uint32_t>(r.x, y);
          for (int64_t x = 0; x < r.w; ++x) {
            const uint32_t v = row[x];
            if (!v) continue;
            if (v != last || !a) {
              a = &acc[v];
              last = v;
            }
            if (a->area++ == 0) a->first = static_cast<uint64_t>(y) * static_cast<uint64_t>(W_) + r.x + x + 1;
            a->border |= (y == 0 || y == H_ - 1 || r.x + x == 0 || r.x + x == W_ - 1);
          }
        }
      }
      std::lock_guard<std::mutex> lock(mu);
      for (const auto& [v, a] : acc) {
        Object& o = objects_->ref(v);
        o.first = o.area == 0 ? a.first : std::min(o.first, a.first);
        o.area += a.area;
        o.border |= a.border;
      }
    });
  }

  bool keep(const Object& o) {
    const double area = px_area_ > 0 ? static_cast<double>(o.area) * px_area_ : static_cast<double>(o.area);
    return area >= p_.min_area && area <= p_.max_area && !(p_.exclude_border && o.border);
  }

  // The first pixels of a tile's objects: label -> linear index + 1, for
  // the objects whose first pixel lies in the tile.
  std::vector<std::pair<uint64_t, uint32_t>> starts_of(int64_t tx, int64_t ty, const Rect& r, std::mutex& mu) {
    std::unordered_map<uint32_t, uint64_t> seen;
    {
      ScratchStore::Pin pin = store_->acquire(tx, ty);
      for (int64_t y = r.y; y < r.y1(); ++y) {
        const uint32_t* row = pin.image().ptr<uint32_t>(r.x, y);
        uint32_t last = 0;
        for (int64_t x = 0; x < r.w; ++x) {
          const uint32_t v = row[x];
          if (!v || v == last) continue;
          last = v;
          seen.emplace(v, static_cast<uint64_t>(y) * static_cast<uint64_t>(W_) + r.x + x + 1);
        }
      }
    }
    std::vector<std::pair<uint64_t, uint32_t>> out;
    std::lock_guard<std::mutex> lock(mu);
    for (const auto& [v, pos] : seen) {
      const Object& o = objects_->cref(v);
      if (o.first == pos) out.emplace_back(pos, v);
    }
    std::sort(out.begin(), out.end());
    return out;
  }

  // Kept objects starting on each row of each tile.
  void count_starts() {
    std::mutex mu;
    for_tiles([&](int64_t tx, int64_t ty, const Rect& r) {
      const auto s = starts_of(tx, ty, r, mu);
      std::vector<uint32_t> rows(static_cast<size_t>(T_), 0);
      ObjectsStats local;
      {
        std::lock_guard<std::mutex> lock(mu);
        for (const auto& [pos, v] : s) {
          const Object& o = objects_->cref(v);
          ++local.objects;
          if (keep(o)) {
            ++rows[static_cast<size_t>((pos - 1) / static_cast<uint64_t>(W_) - static_cast<uint64_t>(r.y))];
            ++local.kept;
          } else if (p_.exclude_border && o.border) {
            ++local.removed_border;
          } else {
            const double area = px_area_ > 0 ? static_cast<double>(o.area) * px_area_ : static_cast<double>(o.area);
            ++(area < p_.min_area ? local.removed_small : local.removed_large);
          }
        }
        st_.objects += local.objects, st_.kept += local.kept, st_.removed_border += local.removed_border;
        st_.removed_small += local.removed_small, st_.removed_large += local.removed_large;
      }
      starts_->write(static_cast<uint64_t>(ty * cols_ + tx) * static_cast<uint64_t>(T_), rows.data(),
                     static_cast<uint64_t>(T_));
    });
  }

  // Band by band: the kept objects starting in the band are numbered (an
  // exclusive prefix over rows, then tiles), then the band's tiles are
  // rewritten with the new numbers.
  void renumber() {
    const size_t T = static_cast<size_t>(T_);
    std::vector<uint32_t> counts(static_cast<size_t>(cols_) * T);
    std::vector<uint64_t> offset(counts.size());
    uint64_t done = 0;
    std::mutex mu;
    for (int64_t ty = 0; ty < rows_; ++ty) {
      const int64_t h = grid_.tile_rect(0, ty).h;
      for (int64_t c = 0; c < cols_; ++c)
        starts_->read(static_cast<uint64_t>(ty * cols_ + c) * T, counts.data() + static_cast<size_t>(c) * T, T);
      for (int64_t y = 0; y < h; ++y)
        for (int64_t c = 0; c < cols_; ++c) {
          const size_t k = static_cast<size_t>(c) * T + static_cast<size_t>(y);
          offset[k] = done;
          done += counts[k];
        }
      tbb::parallel_for(int64_t{0}, cols_, [&](int64_t c) {
        const Rect r = grid_.tile_rect(c, ty);
        const auto s = starts_of(c, ty, r, mu);
        std::lock_guard<std::mutex> lock(mu);
        int64_t row = -1;
        uint64_t on_row = 0;
        for (const auto& [pos, v] : s) {
          Object& o = objects_->ref(v);
          if (!keep(o)) continue;
          const int64_t y = static_cast<int64_t>((pos - 1) / static_cast<uint64_t>(W_)) - r.y;
          if (y != row) row = y, on_row = 0;
          o.number = static_cast<uint32_t>(offset[static_cast<size_t>(c) * T + static_cast<size_t>(y)] + ++on_row);
        }
      });
      tbb::parallel_for(int64_t{0}, cols_, [&](int64_t c) {
        const Rect r = grid_.tile_rect(c, ty);
        ScratchStore::Pin pin = store_->acquire(c, ty);
        std::unordered_map<uint32_t, uint32_t> number;
        uint32_t last = 0, last_n = 0;
        for (int64_t y = r.y; y < r.y1(); ++y) {
          uint32_t* row = pin.image().ptr<uint32_t>(r.x, y);
          for (int64_t x = 0; x < r.w; ++x) {
            const uint32_t v = row[x];
            if (!v) continue;
            if (v != last) {
              auto it = number.find(v);
              if (it == number.end()) {
                std::lock_guard<std::mutex> lock(mu);
                it = number.emplace(v, objects_->cref(v).number).first;
              }
              last = v, last_n = it->second;
            }
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
  int64_t W_ = 0, H_ = 0, T_ = 256, cols_ = 0, rows_ = 0;
  double px_area_ = 0;  // square microns per pixel with --units um2
  TileGrid grid_;
  std::shared_ptr<ScratchStore> store_;
  std::unique_ptr<PagedArray<Object>> objects_;
  std::unique_ptr<PagedArray<uint32_t>> starts_;
};

// The labels, read from the store, with the input's resolution.
class ObjectsImage final : public TileSource {
 public:
  ObjectsImage(std::shared_ptr<ScratchStore> store, const SourceInfo& in) : store_(std::move(store)) {
    info_ = store_->info();
    info_.path = "objects";
    info_.format = "computed";
    info_.mpp_x = in.mpp_x, info_.mpp_y = in.mpp_y;
  }

 protected:
  void read_inside(int level, const ImageView& dst) const override { store_->read(level, dst); }

 private:
  std::shared_ptr<ScratchStore> store_;
};

}  // namespace

std::shared_ptr<const TileSource> filter_objects(std::shared_ptr<const TileSource> labels, const ObjectsParams& p,
                                                 ExecContext& ctx, ObjectsStats* stats) {
  const PixelFormat f = labels->info().fmt;
  if (f.channels != 1 || (f.type != SampleType::kU32 && f.type != SampleType::kU8 && f.type != SampleType::kU16))
    throw InputError(labels->info().path + " is " + f.str() +
                     "; objects needs u32 labels or a one-channel 8/16-bit mask");
  const auto t0 = Clock::now();
  ObjectsStats st;
  std::shared_ptr<ScratchStore> store;
  {
    ObjectFilter job(labels, p, ctx, st);
    store = job.run();
  }
  release_free_heap();
  const size_t cache = ctx.memory / 4;
  store->set_cache_bytes(cache);
  ctx.take_memory(cache);
  st.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  if (stats) *stats = st;
  return std::make_shared<ObjectsImage>(std::move(store), labels->info());
}

void register_objects(OpRegistry& r) {
  OpDef op;
  op.name = "objects";
  op.command = {"objects"};
  op.category = OpCategory::kWholeImage;
  op.summary = "object filters: area, border, holes; kept objects renumbered 1..N in raster order";
  op.usage = "[--min-area A] [--max-area A] [--units px|um2] [--exclude-border] [--fill-holes] [--connectivity 4|8]";
  op.help =
      "Filters the objects of a label image (an object is all pixels of one label; a\n"
      "u8/u16 mask is labelled first with --connectivity). --fill-holes first fills each\n"
      "object's holes: background regions (4-connected for 8-connected objects, 8 for 4)\n"
      "that touch neither the image border nor another object. Then objects with area\n"
      "below --min-area or above --max-area (pixels, or square microns with --units um2,\n"
      "from the image's mpp) are removed, and with --exclude-border those with a pixel\n"
      "on the image border. The kept objects are renumbered 1..N in raster order of\n"
      "their first pixels (skimage remove_small_objects, then a relabelling).";
  op.takes = "u32 labels, or a one-channel u8/u16 mask";
  op.params = {ParamSpec::real("min-area", "A", 0, 1e18, "0", "remove objects smaller than A"),
               ParamSpec::real("max-area", "A", 0, 1e18, "", "remove objects larger than A (default: no limit)"),
               ParamSpec::choice("units", "U", {"px", "um2"}, "px", "units of the areas: px (default) or um2"),
               ParamSpec::flag("exclude-border", "remove objects touching the image border"),
               ParamSpec::flag("fill-holes", "fill each object's holes (before the area filter)"),
               ParamSpec::choice("connectivity", "N", {"4", "8"}, "8",
                                 "of a mask's objects: 4 or 8 (default); holes take the other")};
  op.output_format = [](const std::vector<ImageType>& in, const OpParams&) {
    const PixelFormat f = in[0].fmt;
    if (f.channels != 1 || (f.type != SampleType::kU32 && f.type != SampleType::kU8 && f.type != SampleType::kU16))
      throw InputError(in[0].name + " is " + f.str() + "; objects needs u32 labels or a one-channel 8/16-bit mask");
    return PixelFormat{SampleType::kU32, 1};
  };
  op.run = [](const std::vector<SourceP>& in, const OpParams& p, ExecContext& ctx) {
    ObjectsParams op;
    op.min_area = p.real("min-area");
    if (p.has("max-area")) op.max_area = p.real("max-area");
    op.um2 = p.choice("units") == "um2";
    op.exclude_border = p.flag("exclude-border");
    op.fill_holes = p.flag("fill-holes");
    op.connectivity = p.choice("connectivity") == "4" ? 4 : 8;
    ObjectsStats st;
    OpResult res;
    res.image = filter_objects(in[0], op, ctx, &st);
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
                  {"objects_seconds", st.seconds}};
    return res;
  };
  r.add(std::move(op));
}

}  // namespace tw
