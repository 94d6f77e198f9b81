#include "jobs/pyramid/cascade.hpp"

#include <tbb/enumerable_thread_specific.h>
#include <tbb/parallel_for.h>

#include <cstring>

#include "kernels/pyramid_reduce/pyramid_reduce.hpp"

namespace tw {
namespace {

int64_t floor_div2(int64_t a) {
  return a >= 0 ? a / 2 : -((-a + 1) / 2);
}
constexpr int64_t kCarryRows = 4;

}  // namespace

PyramidCascade::PyramidCascade(PixelFormat fmt, std::vector<CascadeLevel> levels, int64_t band_rows, ImagePool& pool)
    : fmt_(fmt), levels_(std::move(levels)), band_rows_(band_rows), pool_(pool), state_(levels_.size()) {
  TW_ASSERT(!levels_.empty() && band_rows_ > 0);
  for (size_t k = 1; k < levels_.size(); ++k) {
    const CascadeLevel& up = levels_[k - 1];
    for (auto& c : state_[k].carry) c = Image(fmt_, Rect(up.col0, 0, up.col1 - up.col0, kCarryRows));
    // A cascade starting below row 0 begins each level at its first row and
    // its band at the band boundary before it: rows of that band above row0
    // are never computed, and the share that started here owns none of them.
    const CascadeLevel& me = levels_[k];
    TW_ASSERT(me.row0 == 0 || 2 * me.row0 - 2 >= up.row0);
    state_[k].next_out = me.row0;
    state_[k].band_y0 = me.row0 / band_rows_ * band_rows_;
  }
}

size_t PyramidCascade::state_bytes(PixelFormat fmt, const std::vector<CascadeLevel>& levels, int64_t band_rows) {
  size_t n = 0;
  for (size_t k = 1; k < levels.size(); ++k) {
    const size_t up_row = static_cast<size_t>(levels[k - 1].col1 - levels[k - 1].col0) * fmt.bytes_per_pixel();
    const size_t row = static_cast<size_t>(levels[k].col1 - levels[k].col0) * fmt.bytes_per_pixel();
    n += 2 * kCarryRows * up_row + static_cast<size_t>(std::min(band_rows, levels[k].height)) * row;
  }
  return n;
}

CascadeSnapshot PyramidCascade::snapshot() const {
  CascadeSnapshot snap;
  snap.levels.resize(levels_.size());
  for (size_t k = 1; k < levels_.size(); ++k) {
    const State& st = state_[k];
    CascadeSnapshot::Level& l = snap.levels[k];
    const CascadeLevel& up = levels_[k - 1];
    const CascadeLevel& me = levels_[k];
    if (st.carry_n) l.carry = st.carry[st.which].view().sub(Rect(up.col0, st.carry_y0, up.col1 - up.col0, st.carry_n));
    l.next_out = st.next_out;
    l.band_y0 = st.band_y0;
    if (st.band && st.next_out > st.band_y0)
      l.band = st.band->view().sub(Rect(me.col0, st.band_y0, me.col1 - me.col0, st.next_out - st.band_y0));
    else
      TW_ASSERT(st.next_out == st.band_y0);
  }
  return snap;
}

void PyramidCascade::push(const std::shared_ptr<const Image>& rows, const Emit& emit) {
  TW_ASSERT(rows->rect().x == levels_[0].col0 && rows->rect().w == levels_[0].col1 - levels_[0].col0);
  TW_ASSERT(rows->rect().y >= levels_[0].row0);
  if (levels_.size() > 1) push_level(1, rows, emit);
}

void PyramidCascade::push_level(int k, const std::shared_ptr<const Image>& chunk, const Emit& emit) {
  State& st = state_[k];
  const CascadeLevel& in = levels_[k - 1];
  const CascadeLevel& out = levels_[k];
  const int64_t a = chunk->rect().y, b = chunk->rect().y1();
  const Image& carry = st.carry[st.which];
  TW_ASSERT(st.carry_n == 0 || st.carry_y0 + st.carry_n == a);

  // Row Y needs input rows up to 2Y+2 (mirrored at the bottom edge).
  int64_t y_end = b == in.height ? out.height : floor_div2(b - 3) + 1;
  y_end = std::min(y_end, out.height);
  auto row_ptr = [&](int64_t r) -> const uint8_t* {
    if (r >= a) return chunk->ptr_bytes(in.col0, r);
    TW_ASSERT(r >= st.carry_y0 && r < st.carry_y0 + st.carry_n);
    return carry.ptr_bytes(in.col0, r);
  };

  int64_t y = st.next_out;
  while (y < y_end) {
    if (!st.band) {
      const int64_t h = std::min(band_rows_, out.height - st.band_y0);
      st.band = pool_.acquire(fmt_, Rect(out.col0, st.band_y0, out.col1 - out.col0, h));
    }
    const int64_t seg_end = std::min(y_end, st.band->rect().y1());
    Image& band = *st.band;
    tbb::parallel_for(y, seg_end, [&](int64_t oy) {
      int64_t src[5];
      reduce_source_rows(oy, in.height, src);
      const uint8_t* rows[5];
      for (int i = 0; i < 5; ++i) rows[i] = row_ptr(src[i]);
      reduce_row(fmt_, rows, in.col0, in.col1 - in.col0, in.width, out.col0, out.col1 - out.col0, band.row_bytes(oy),
                 scratch_.local());
    });
    y = seg_end;
    if (seg_end == band.rect().y1()) {
      std::shared_ptr<const Image> done = std::move(st.band);
      st.band.reset();
      st.band_y0 = seg_end;
      emit(k, done);
      if (k + 1 < static_cast<int>(levels_.size())) push_level(k + 1, done, emit);
    }
  }
  st.next_out = y;  // not y_end: a level starting below row 0 may not have reached its first row yet

  // Keep the last rows for the next chunk (rows 2Y-2.. of rows not yet made).
  const int64_t keep0 = std::max(b - kCarryRows, st.carry_n ? st.carry_y0 : a);
  Image& next = st.carry[1 - st.which];
  next.set_origin(in.col0, keep0);
  for (int64_t r = keep0; r < b; ++r) std::memcpy(next.row_bytes(r), row_ptr(r), next.view().row_length_bytes());
  st.which = 1 - st.which;
  st.carry_y0 = keep0;
  st.carry_n = b - keep0;
}

}  // namespace tw
