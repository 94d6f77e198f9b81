#include "jobs/edt/edt_job.hpp"

#include <tbb/collaborative_call_once.h>
#include <tbb/enumerable_thread_specific.h>
#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <mutex>
#include <type_traits>
#include <vector>

#include "engine/error.hpp"
#include "engine/memory.hpp"
#include "engine/memory_source.hpp"
#include "jobs/edt/edt_columns.hpp"
#include "jobs/edt/edt_support.hpp"
#include "kernels/edt/edt_row.hpp"

namespace tw {

namespace {

// The EDT's result, computed when read: the row pass (kernels/edt/edt_row.hpp)
// over rows of the column distances min(up, down). A row needs the whole
// width, so rows are made in bands of kBand that a few reads share (the
// writer reads a band of tiles across the image): a small cache of bands,
// each made once by whichever reader needs it first.
//
// Readers that want more bands at once than the cache holds (threads each
// reading tiles of a different tile row of a wide image) would make each
// band again for every tile: W / tile width times the row pass (8192² at
// --memory 256M took 7.7 s instead of 0.37 s; whole slides at the default
// 1G are wider still). Bands made again soon after they were made tell it:
// the result is then stored once, band after band, in memory where it fits
// the cache's share, else in a scratch file, and read from there.
class RowPassSource final : public TileSource {
 public:
  static constexpr int64_t kBand = kEdtBand;
  RowPassSource(std::shared_ptr<const ColumnDistances> col, int64_t inf, size_t cache_bytes, std::string scratch_near)
      : col_(std::move(col)), inf_(inf), cache_bytes_(cache_bytes), near_(std::move(scratch_near)) {
    W_ = col_->width(), H_ = col_->height();
    info_.path = "edt";
    info_.format = "computed";
    info_.fmt = PixelFormat{SampleType::kF32, 1};
    LevelInfo li;
    li.width = W_, li.height = H_;
    li.compression = "none (computed)";
    info_.levels.push_back(li);
    inf2_ = W_ * W_ + H_ * H_ + 1;
    const size_t band_bytes = static_cast<size_t>(W_ * kBand) * 4;
    budget_bands_ = std::max<size_t>(2, cache_bytes / std::max<size_t>(band_bytes, 1));
    n_bands_ = ceil_div(H_, kBand);
    last_made_.assign(static_cast<size_t>(n_bands_), -1);
  }

  int64_t bands_made() const { return made_.load(); }
  bool stored() const { return std::atomic_load(&stored_) != nullptr; }

 protected:
  void read_inside(int, const ImageView& dst) const override {
    const Rect r = dst.rect;
    if (thrashing_.load(std::memory_order_acquire)) store_once();
    if (const std::shared_ptr<Spillable> s = std::atomic_load(&stored_)) {
      Image tmp;
      copy_overlap(s->peek(r, tmp), dst);
      return;
    }
    const size_t n = static_cast<size_t>((r.y1() - 1) / kBand - r.y / kBand + 1);
    size_t seen = read_bands_.load(std::memory_order_relaxed);
    while (n > seen && !read_bands_.compare_exchange_weak(seen, n)) {
    }
    for (int64_t b = r.y / kBand; b <= (r.y1() - 1) / kBand; ++b) {
      const std::shared_ptr<const Image> band = get(b);
      copy_overlap(band->view(), dst);
    }
  }

 private:
  struct Slot {
    std::once_flag made;
    Image img;
  };

  std::shared_ptr<const Image> get(int64_t b) const {
    std::shared_ptr<Slot> slot;
    {
      std::lock_guard<std::mutex> l(mu_);
      auto it = bands_.find(b);
      if (it == bands_.end()) {
        // Let go of the least recent band nobody reads now.
        const size_t max_bands = kept_bands();
        while (bands_.size() >= max_bands) {
          auto victim = bands_.end();
          for (auto k = bands_.begin(); k != bands_.end(); ++k)
            if (k->second.second.use_count() == 1 && (victim == bands_.end() || k->second.first < victim->second.first))
              victim = k;
          if (victim == bands_.end()) break;
          bands_.erase(victim);
        }
        it = bands_.emplace(b, std::make_pair(0, std::make_shared<Slot>())).first;
        note_made(b);
      }
      it->second.first = ++clock_;
      slot = it->second.second;
    }
    std::call_once(slot->made, [&] { slot->img = make_band(b); });
    // The slot keeps the band alive for this reader even if evicted.
    return std::shared_ptr<const Image>(slot, &slot->img);
  }

  // The bands kept: what the readers in flight need (every thread's read
  // and the next, the largest read seen so far; at least 64), within the
  // budget's share. Keeping more only kept fresh memory for bands nobody
  // reads again: at --memory 16G a 2-core run held half a gigapixel's bands
  // (2 GB, each page a fault when first written) where evicted ones are
  // reused (take_big_buffer). Fewer than the readers need makes bands again
  // and again (16 threads reading 1024-row tiles with a halo need hundreds).
  size_t kept_bands() const {
    const size_t threads = static_cast<size_t>(std::max(1, tbb::this_task_arena::max_concurrency()));
    const size_t need = std::max<size_t>(64, 2 * threads * (read_bands_.load(std::memory_order_relaxed) + 1));
    return std::min(budget_bands_, need);
  }

  // Bands made again within half a pass of the bands since they were last
  // made: not a later reader's pass over the image (those make each band
  // once more, and storing would only add the raster), but readers the
  // cache cannot hold. A few such, or more than two passes' worth in all
  // (readers down tile columns, or a writer in vertical stripes, make every
  // band once per column or stripe), and the result is stored. Under mu_.
  void note_made(int64_t b) const {
    const int64_t n = made_.fetch_add(1);
    int64_t& last = last_made_[static_cast<size_t>(b)];
    if ((last >= 0 && n - last < n_bands_ / 2 && ++soon_remade_ > 8 + n_bands_ / 64) || n >= 2 * n_bands_ + 8)
      thrashing_.store(true, std::memory_order_release);
    last = n;
  }

  // Every band once, in order, into the store. Readers that come meanwhile
  // wait, and help with the bands' rows (collaborative_call_once): a plain
  // call_once would leave the row pass to one thread.
  void store_once() const {
    tbb::collaborative_call_once(store_flag_, [&] {
      {
        // The store takes the cache's share: readers still holding a band
        // keep it alive, the rest go now.
        std::lock_guard<std::mutex> l(mu_);
        bands_.clear();
      }
      const size_t bytes = static_cast<size_t>(W_) * static_cast<size_t>(H_) * 4;
      auto s = std::make_shared<Spillable>(info_.fmt, W_, H_, bytes <= cache_bytes_, near_);
      for (int64_t b = 0; b < n_bands_; ++b) {
        const Image band = make_band(b);
        s->write(band.view());
        made_.fetch_add(1);
      }
      std::atomic_store(&stored_, s);
      std::lock_guard<std::mutex> l(mu_);
      bands_.clear();  // any made meanwhile by readers that came before the store
    });
  }

  Image make_band(int64_t b) const {
    release_free_heap_now_and_then();  // bands come and go between the writer's buffers
    const int64_t y0 = b * kBand, rows = std::min(kBand, H_ - y0);
    Image tmp, out(info_.fmt, Rect(0, y0, W_, rows));
    // 32-bit integers where every sum of the row pass fits (a run's
    // (u - i)^2 + g2 below 2^31) and its divisions are exact in double
    // precision (denominators 2 (u - i) below 2^16): 16384² images too,
    // whose inf2 is just above 2^29, the old bound (64-bit divisions there
    // took a third of the row pass).
    const bool small = W_ <= 32768 && W_ * W_ + inf2_ < (int64_t{1} << 31);
    // Isolated: a thread waiting here for the band's rows must not take up
    // another read meanwhile (it could ask for this same band, made under
    // call_once: a deadlock; or nest band after band on its stack).
    tbb::this_task_arena::isolate([&] {
      const ImageView c = col_->rows(y0, rows, tmp);
      tbb::parallel_for(y0, y0 + rows, [&](int64_t y) {
        if (small)
          row(c, y, out, static_cast<int32_t*>(nullptr));
        else
          row(c, y, out, static_cast<int64_t*>(nullptr));
      });
    });
    return out;
  }

  // One row: squared column distances, the lower envelope, the square root.
  template <class D>
  void row(const ImageView& c, int64_t y, Image& out, D*) const {
    thread_local std::vector<D> g2, d2, s, t;
    const size_t w = static_cast<size_t>(W_);
    g2.resize(w), d2.resize(w), s.resize(w), t.resize(w);
    // In D throughout (32 bits for most images), so that both loops vectorise.
    const D inf = static_cast<D>(inf_), inf2 = static_cast<D>(inf2_);
    auto fill = [&](auto* gd) {
      for (int64_t x = 0; x < W_; ++x) {
        const D v = static_cast<D>(gd[x]);
        g2[static_cast<size_t>(x)] = v >= inf ? inf2 : v * v;
      }
    };
    if (c.fmt.type == SampleType::kU16)
      fill(c.row<uint16_t>(y));
    else
      fill(c.row<int32_t>(y));
    edt::row_pass_runs<D>(g2.data(), W_, d2.data(), s.data(), t.data());
    float* o = out.row<float>(y);
    for (int64_t x = 0; x < W_; ++x) {
      const D v = d2[static_cast<size_t>(x)];
      o[x] = v >= inf2 ? std::numeric_limits<float>::infinity() : static_cast<float>(std::sqrt(static_cast<double>(v)));
    }
  }

  std::shared_ptr<const ColumnDistances> col_;
  int64_t inf_, inf2_ = 0, W_ = 0, H_ = 0, n_bands_ = 0;
  size_t cache_bytes_;
  std::string near_;
  size_t budget_bands_ = 2;
  mutable std::atomic<int64_t> made_{0};
  mutable std::vector<int64_t> last_made_;  // under mu_: made_ when each band was last made (-1: never)
  mutable int64_t soon_remade_ = 0;         // under mu_
  mutable std::atomic<bool> thrashing_{false};
  mutable tbb::collaborative_once_flag store_flag_;
  mutable std::shared_ptr<Spillable> stored_;  // atomic_load / atomic_store
  mutable std::atomic<size_t> read_bands_{1};  // the most bands one read has needed
  mutable std::mutex mu_;
  mutable int64_t clock_ = 0;
  mutable std::map<int64_t, std::pair<int64_t, std::shared_ptr<Slot>>> bands_;
};

}  // namespace

std::shared_ptr<const TileSource> euclidean_distance(const TileSource& src, const EdtParams& p, size_t memory,
                                                     const std::string& scratch_near, EdtStats* stats) {
  const auto t0 = std::chrono::steady_clock::now();
  const LevelInfo& l0 = src.level(0);
  const int64_t W = l0.width, H = l0.height;
  if (W > (int64_t{1} << 30) || H > (int64_t{1} << 30))
    throw InputError("the distance transform handles images up to 2^30 pixels a side");
  // Column distances below each pixel, in 16 bits where the height allows
  // (65535 = no background below).
  const bool narrow = H < 65535;
  const PixelFormat gfmt{narrow ? SampleType::kU16 : SampleType::kI32, 1};
  const int64_t kInf = narrow ? 65535 : std::numeric_limits<int32_t>::max();
  // Bands: whatever the budget holds (source rows, the foreground's, the
  // column distances' window and peek where they spill), at least one row.
  // The row pass is not among them: it runs when the result is read, with
  // scratch per thread, not per row. (Counting it made bands a fifth as tall:
  // 14 rows of a 40960-wide mask at --memory 48M, every 256-row input tile
  // decoded 18 times.)
  const size_t per_row = static_cast<size_t>(W) * (src.info().fmt.bytes_per_pixel() + 1 + 4 + 4);
  const int64_t band =
      std::max<int64_t>(1, std::min<int64_t>(256, static_cast<int64_t>(memory / 2 / std::max<size_t>(per_row, 1))));

  // Both rasters (the column distances and the result) stay in memory when
  // they fit a quarter of the budget each; beyond that they spill to files.
  const size_t pixels = static_cast<size_t>(W) * static_cast<size_t>(H);
  auto below = std::make_shared<Spillable>(gfmt, W, H, pixels * gfmt.bytes_per_pixel() <= memory / 4, scratch_near);
  std::vector<int64_t> down(static_cast<size_t>(W), kInf);
  std::atomic<uint64_t> n_fg{0}, n_bg{0};
  // Columns are independent: both column passes run over chunks of columns.
  const int64_t chunk = std::max<int64_t>(64, W / 64);
  auto column_chunks = [&](auto&& fn) {
    tbb::parallel_for(int64_t{0}, ceil_div(W, chunk), [&](int64_t c) { fn(c * chunk, std::min(W, (c + 1) * chunk)); });
  };
  // Bottom-up: distance to the nearest background at or below, per column.
  // 0 marks background, so the second pass needs no second read of the input.
  Image fgb(kGray8, Rect(0, 0, W, band)), gtmp, ptmp;
  double read_s = 0;
  for (int64_t y1 = H; y1 > 0; y1 -= band) {
    const int64_t y0 = std::max<int64_t>(0, y1 - band), rows = y1 - y0;
    const auto r0 = std::chrono::steady_clock::now();
    const Image in = src.read(0, Rect(0, y0, W, rows));
    read_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - r0).count();
    fgb.set_origin(0, y0);
    tbb::parallel_for(int64_t{0}, rows,
                      [&](int64_t r) { foreground_row(in, p.threshold, fgb.row<uint8_t>(y0 + r), r); });
    const ImageView g = below->window(Rect(0, y0, W, rows), gtmp);
    column_chunks([&](int64_t x0, int64_t x1) {
      uint64_t f = 0;
      auto scan = [&](auto* tag) {
        using G = std::remove_pointer_t<decltype(tag)>;
        for (int64_t y = y1 - 1; y >= y0; --y) {
          const uint8_t* fg = fgb.row<uint8_t>(y);
          G* out = g.row<G>(y);
          for (int64_t x = x0; x < x1; ++x) {
            int64_t& d = down[static_cast<size_t>(x)];
            d = fg[x] ? std::min<int64_t>(d + 1, kInf) : 0;
            out[x] = static_cast<G>(d);
            f += fg[x];
          }
        }
      };
      if (narrow)
        scan(static_cast<uint16_t*>(nullptr));
      else
        scan(static_cast<int32_t*>(nullptr));
      n_fg += f;
    });
    below->commit(g);
  }
  n_bg = static_cast<uint64_t>(W * H) - n_fg.load();

  // Top-down: the distance to the nearest background above, and with the
  // one below the column distance min(up, down), written over `below`. The
  // row pass then needs nothing but that raster's rows: the result is
  // computed when it is read (RowPassSource), so no float32 copy of the
  // image is ever stored (4 GB written and read again for a gigapixel).
  std::vector<int64_t> up(static_cast<size_t>(W), kInf);
  for (int64_t y0 = 0; y0 < H; y0 += band) {
    const int64_t rows = std::min(band, H - y0);
    const ImageView g = below->window(Rect(0, y0, W, rows), gtmp);
    if (!below->in_memory()) copy_overlap(below->peek(Rect(0, y0, W, rows), ptmp), g);
    column_chunks([&](int64_t x0, int64_t x1) {
      auto scan = [&](auto* tag) {
        using G = std::remove_pointer_t<decltype(tag)>;
        for (int64_t y = y0; y < y0 + rows; ++y) {
          G* gd = g.row<G>(y);
          for (int64_t x = x0; x < x1; ++x) {
            const int64_t d = gd[x];
            int64_t& u = up[static_cast<size_t>(x)];
            u = d != 0 ? std::min<int64_t>(u + 1, kInf) : 0;
            gd[x] = static_cast<G>(std::min(u, d));
          }
        }
      };
      if (narrow)
        scan(static_cast<uint16_t*>(nullptr));
      else
        scan(static_cast<int32_t*>(nullptr));
    });
    below->commit(g);
  }
  if (stats) {
    stats->seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    stats->read_seconds = read_s;
    stats->foreground = n_fg.load(), stats->background = n_bg.load();
    stats->held_bytes = (below->in_memory() ? pixels * gfmt.bytes_per_pixel() : 0) + memory / 8;
  }
  return std::make_shared<RowPassSource>(stored_columns(std::move(below)), kInf, memory / 8, scratch_near);
}

std::shared_ptr<const TileSource> euclidean_distance_of_held(std::shared_ptr<const TileSource> src, const EdtParams& p,
                                                             size_t memory, const std::string& scratch_near,
                                                             EdtStats* stats) {
  const auto t0 = std::chrono::steady_clock::now();
  const LevelInfo& l0 = src->level(0);
  if (l0.width > (int64_t{1} << 30) || l0.height > (int64_t{1} << 30))
    throw InputError("the distance transform handles images up to 2^30 pixels a side");
  const uint64_t pixels = static_cast<uint64_t>(l0.width) * static_cast<uint64_t>(l0.height);
  BandEdgeStats es;
  auto cols = band_edge_columns(std::move(src), p.threshold, memory, scratch_near, &es);
  const int64_t inf = cols->format().type == SampleType::kU16 ? 65535 : std::numeric_limits<int32_t>::max();
  if (stats) {
    stats->seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    stats->read_seconds = es.read_seconds;
    stats->foreground = es.foreground, stats->background = pixels - es.foreground;
    stats->held_bytes = es.held_bytes + memory / 8;
  }
  return std::make_shared<RowPassSource>(std::move(cols), inf, memory / 8, scratch_near);
}

EdtReadCounts edt_read_counts(const TileSource& result) {
  const auto* r = dynamic_cast<const RowPassSource*>(&result);
  if (!r) return {};
  return EdtReadCounts{r->bands_made(), r->stored()};
}

}  // namespace tw
