#include "jobs/edt/edt_columns.hpp"

#include <tbb/parallel_for.h>

#include <algorithm>
#include <chrono>
#include <limits>
#include <type_traits>
#include <vector>

#include "engine/error.hpp"
#include "engine/geometry.hpp"

namespace tw {

namespace {

class StoredColumns final : public ColumnDistances {
 public:
  explicit StoredColumns(std::shared_ptr<Spillable> r) : raster_(std::move(r)) {
    w_ = raster_->level().width, h_ = raster_->level().height;
  }
  ImageView rows(int64_t y0, int64_t rows, Image& tmp) const override {
    return raster_->peek(Rect(0, y0, w_, rows), tmp);
  }
  PixelFormat format() const override { return raster_->source()->info().fmt; }

 private:
  std::shared_ptr<Spillable> raster_;
};

// Columns are independent: the passes run over chunks of them.
template <class Fn>
void column_chunks(int64_t w, Fn&& fn) {
  const int64_t chunk = std::max<int64_t>(256, w / 64);
  tbb::parallel_for(int64_t{0}, ceil_div(w, chunk), [&](int64_t c) { fn(c * chunk, std::min(w, (c + 1) * chunk)); });
}

// The table: rows [0, n) the distance from the first row of band b + 1 to
// the nearest background at or below it (+inf for the last band), rows
// [n, 2n) from the last row of band b - 1 to the nearest at or above it
// (+inf for the first). While it is made, the same rows hold each band's
// first and last background row (offsets in the band; +inf: none).
class BandEdgeColumns final : public ColumnDistances {
 public:
  BandEdgeColumns(std::shared_ptr<const TileSource> src, double thr, size_t memory, const std::string& near)
      : src_(std::move(src)), thr_(thr) {
    const LevelInfo& l0 = src_->level(0);
    w_ = l0.width, h_ = l0.height;
    narrow_ = h_ < 65535;
    fmt_ = PixelFormat{narrow_ ? SampleType::kU16 : SampleType::kI32, 1};
    inf_ = narrow_ ? 65535 : std::numeric_limits<int32_t>::max();
    n_ = ceil_div(h_, kEdtBand);
    const size_t bytes = static_cast<size_t>(w_) * static_cast<size_t>(2 * n_) * fmt_.bytes_per_pixel();
    table_ = std::make_shared<Spillable>(fmt_, w_, 2 * n_, bytes <= memory / 4, near);
  }

  BandEdgeStats make(size_t memory) {
    BandEdgeStats st;
    if (narrow_)
      st = make_typed<uint16_t>(memory);
    else
      st = make_typed<int32_t>(memory);
    st.held_bytes =
        table_->in_memory() ? static_cast<size_t>(w_) * static_cast<size_t>(2 * n_) * fmt_.bytes_per_pixel() : 0;
    return st;
  }

  ImageView rows(int64_t y0, int64_t rows, Image& tmp) const override {
    if (y0 % kEdtBand != 0 || rows != std::min(kEdtBand, h_ - y0))
      throw InternalError("band edge columns: rows not of one band");
    if (narrow_) return band<uint16_t>(y0, rows, tmp);
    return band<int32_t>(y0, rows, tmp);
  }
  PixelFormat format() const override { return fmt_; }

 private:
  // What a distance is computed in: room for +inf + 1.
  template <class G>
  using Wide = std::conditional_t<std::is_same_v<G, uint16_t>, int32_t, int64_t>;

  int64_t band_rows(int64_t b) const { return std::min(kEdtBand, h_ - b * kEdtBand); }

  template <class G>
  BandEdgeStats make_typed(size_t memory) {
    using D = Wide<G>;
    BandEdgeStats st;
    // Reads of whole bands, as many as half the budget holds (the input's
    // rows and their foreground), up to 8.
    const size_t per_band =
        static_cast<size_t>(w_) * static_cast<size_t>(kEdtBand) * (src_->info().fmt.bytes_per_pixel() + 1);
    const int64_t per_read =
        std::clamp<int64_t>(static_cast<int64_t>(memory / 2 / std::max<size_t>(per_band, 1)), 1, 8);
    const D none = static_cast<D>(inf_);
    Image ftmp, ltmp;
    std::vector<uint64_t> fg_counts(static_cast<size_t>(n_), 0);
    for (int64_t b0 = 0; b0 < n_; b0 += per_read) {
      const int64_t b1 = std::min(n_, b0 + per_read), y0 = b0 * kEdtBand, y1 = std::min(h_, b1 * kEdtBand);
      const auto r0 = std::chrono::steady_clock::now();
      const Image in = src_->read(0, Rect(0, y0, w_, y1 - y0));
      st.read_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - r0).count();
      const ImageView first = table_->window(Rect(0, b0, w_, b1 - b0), ftmp);
      const ImageView last = table_->window(Rect(0, n_ + b0, w_, b1 - b0), ltmp);
      tbb::parallel_for(b0, b1, [&](int64_t b) {
        thread_local std::vector<uint8_t> fg;
        fg.resize(static_cast<size_t>(w_));
        G* f = first.row<G>(b);
        G* l = last.row<G>(n_ + b);
        std::fill(f, f + w_, static_cast<G>(none));
        std::fill(l, l + w_, static_cast<G>(none));
        uint64_t count = 0;
        for (int64_t r = 0; r < band_rows(b); ++r) {
          count += static_cast<uint64_t>(foreground_row(in, thr_, fg.data(), b * kEdtBand - y0 + r));
          const G off = static_cast<G>(r);
          for (int64_t x = 0; x < w_; ++x) {
            const bool bg = fg[static_cast<size_t>(x)] == 0;
            f[x] = bg && f[x] == static_cast<G>(none) ? off : f[x];
            l[x] = bg ? off : l[x];
          }
        }
        fg_counts[static_cast<size_t>(b)] = count;
      });
      table_->commit(first);
      table_->commit(last);
    }
    for (uint64_t c : fg_counts) st.foreground += c;
    sweep<G>();
    return st;
  }

  // First and last background rows into the edges' distances, band after
  // band: down from the bottom, up from the top (a row of the table each).
  template <class G>
  void sweep() {
    using D = Wide<G>;
    const D inf = static_cast<D>(inf_);
    const size_t w = static_cast<size_t>(w_);
    std::vector<D> carry(w), mark(w);
    Image tmp;
    // Down: row b becomes band b + 1's first background, else its rows plus
    // band b + 1's distance.
    std::fill(carry.begin(), carry.end(), inf);
    std::fill(mark.begin(), mark.end(), inf);  // band b + 1's first background: none yet
    for (int64_t b = n_ - 1; b >= 0; --b) {
      const ImageView v = table_->window(Rect(0, b, w_, 1), tmp);
      if (!table_->in_memory()) copy_overlap(table_->peek(Rect(0, b, w_, 1), tmp), v);
      G* row = v.row<G>(b);
      const D below_rows = b + 1 < n_ ? static_cast<D>(band_rows(b + 1)) : 0;
      column_chunks(w_, [&](int64_t x0, int64_t x1) {
        for (int64_t x = x0; x < x1; ++x) {
          const size_t k = static_cast<size_t>(x);
          const D f = static_cast<D>(row[x]);
          const D d = b + 1 == n_ ? inf : mark[k] != inf ? mark[k] : std::min<D>(below_rows + carry[k], inf);
          row[x] = static_cast<G>(d);
          carry[k] = d, mark[k] = f;
        }
      });
      table_->commit(v);
    }
    // Up: row n + b becomes the distance from band b - 1's last row.
    std::fill(carry.begin(), carry.end(), inf);
    std::fill(mark.begin(), mark.end(), inf);
    for (int64_t b = 0; b < n_; ++b) {
      const ImageView v = table_->window(Rect(0, n_ + b, w_, 1), tmp);
      if (!table_->in_memory()) copy_overlap(table_->peek(Rect(0, n_ + b, w_, 1), tmp), v);
      G* row = v.row<G>(n_ + b);
      column_chunks(w_, [&](int64_t x0, int64_t x1) {
        for (int64_t x = x0; x < x1; ++x) {
          const size_t k = static_cast<size_t>(x);
          const D l = static_cast<D>(row[x]);
          const D d = b == 0           ? inf
                      : mark[k] != inf ? static_cast<D>(kEdtBand - 1) - mark[k]
                                       : std::min<D>(static_cast<D>(kEdtBand) + carry[k], inf);
          row[x] = static_cast<G>(d);
          carry[k] = d, mark[k] = l;
        }
      });
      table_->commit(v);
    }
  }

  template <class G>
  ImageView band(int64_t y0, int64_t rows, Image& tmp) const {
    using D = Wide<G>;
    const int64_t b = y0 / kEdtBand;
    const Image in = src_->read(0, Rect(0, y0, w_, rows));
    if (tmp.fmt() != fmt_ || tmp.rect().w != w_ || tmp.rect().h != rows) tmp = Image(fmt_, Rect(0, y0, w_, rows));
    tmp.set_origin(0, y0);
    Image fg(kGray8, Rect(0, y0, w_, rows));
    Image etmp;
    const ImageView edges = table_->peek(Rect(0, b, w_, 1), etmp);  // copied below when the table is a file
    std::vector<G> down(edges.row<G>(b), edges.row<G>(b) + w_);
    const ImageView up_edge = table_->peek(Rect(0, n_ + b, w_, 1), etmp);
    std::vector<G> up(up_edge.row<G>(n_ + b), up_edge.row<G>(n_ + b) + w_);
    const D inf = static_cast<D>(inf_);
    tbb::parallel_for(int64_t{0}, rows, [&](int64_t r) { foreground_row(in, thr_, fg.row<uint8_t>(y0 + r), r); });
    const ImageView out = tmp.view();
    column_chunks(w_, [&](int64_t x0, int64_t x1) {
      const size_t n = static_cast<size_t>(x1 - x0);
      thread_local std::vector<D> d;
      d.resize(n);
      for (size_t k = 0; k < n; ++k) d[k] = static_cast<D>(down[static_cast<size_t>(x0) + k]);
      for (int64_t y = y0 + rows - 1; y >= y0; --y) {
        const uint8_t* f = fg.row<uint8_t>(y) + x0;
        G* o = out.row<G>(y) + x0;
        for (size_t k = 0; k < n; ++k) {
          d[k] = f[k] ? std::min<D>(d[k] + 1, inf) : 0;
          o[k] = static_cast<G>(d[k]);
        }
      }
      for (size_t k = 0; k < n; ++k) d[k] = static_cast<D>(up[static_cast<size_t>(x0) + k]);
      for (int64_t y = y0; y < y0 + rows; ++y) {
        const uint8_t* f = fg.row<uint8_t>(y) + x0;
        G* o = out.row<G>(y) + x0;
        for (size_t k = 0; k < n; ++k) {
          d[k] = f[k] ? std::min<D>(d[k] + 1, inf) : 0;
          o[k] = static_cast<G>(std::min<D>(d[k], static_cast<D>(o[k])));
        }
      }
    });
    return out;
  }

  std::shared_ptr<const TileSource> src_;
  double thr_;
  bool narrow_ = true;
  PixelFormat fmt_;
  int64_t inf_ = 0, n_ = 0;
  std::shared_ptr<Spillable> table_;
};

}  // namespace

std::shared_ptr<const ColumnDistances> stored_columns(std::shared_ptr<Spillable> raster) {
  return std::make_shared<StoredColumns>(std::move(raster));
}

std::shared_ptr<const ColumnDistances> band_edge_columns(std::shared_ptr<const TileSource> src, double threshold,
                                                         size_t memory, const std::string& scratch_near,
                                                         BandEdgeStats* stats) {
  auto c = std::make_shared<BandEdgeColumns>(std::move(src), threshold, memory, scratch_near);
  const BandEdgeStats st = c->make(memory);
  if (stats) *stats = st;
  return c;
}

}  // namespace tw
