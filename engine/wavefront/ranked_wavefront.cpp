#include "engine/wavefront/ranked_wavefront.hpp"

#include <tbb/enumerable_thread_specific.h>
#include <tbb/parallel_for.h>
#include <tbb/parallel_for_each.h>
#include <tbb/task_arena.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <exception>
#include <memory>
#include <mutex>
#include <thread>

#include "engine/error.hpp"
#include "engine/ranks/ranks.hpp"
#include "engine/wavefront/tile_borders.hpp"
#include "engine/wavefront/tile_states.hpp"

namespace tw {

RowBand wavefront_band(int64_t rows, int rank, int ranks) {
  TW_ASSERT(ranks >= 1 && rank >= 0 && rank < ranks && rows >= 0);
  return {rows * rank / ranks, rows * (rank + 1) / ranks};
}

namespace {

// Three tags of the kWavefront range: the propagation (edges and the
// termination waves), the result's tiles, and their flow control. Each
// phase drains its tags completely, so a later run starts with none pending.
constexpr int kPropagateTag = rank_tags::kWavefront;
constexpr int kTilesTag = rank_tags::kWavefront + 1;
constexpr int kAckTag = rank_tags::kWavefront + 2;

enum : uint8_t { kEdgeMsg = 1, kProbeMsg = 2, kReplyMsg = 3, kDoneMsg = 4 };

// An edge: a tile's top or bottom row of pixels (which follow the header),
// sent to the rank owning the band that edge faces.
struct EdgeHeader {
  uint8_t kind = kEdgeMsg;
  uint8_t which = 0;  // 0: the tile's top edge, 1: its bottom edge
  uint8_t pad[6] = {};
  int64_t tx = 0, ty = 0;
  // The tile's publication count: messages from different threads carry no
  // order of their own, and an older edge must never replace a newer one.
  uint64_t seq = 0;
};

// A termination wave's probe (rank 0 to all), a rank's reply (to rank 0,
// with its counts of edge messages sent and taken in), or the end.
struct Control {
  uint8_t kind = 0;
  uint8_t pad[7] = {};
  int64_t wave = 0, sent = 0, received = 0;
};

// Rows [y, y + rows) of a changed tile's core follow; tx < 0: the sender's last.
struct TileChunk {
  int64_t tx = -1, ty = -1, y = 0, rows = 0;
};

// Result messages stay near this size (one row at least), and at most
// 2 * kWindow of them wait unread per receiver: the gather holds a few
// megabytes whatever the tile size.
constexpr size_t kChunkBytes = size_t{1} << 20;
constexpr int64_t kWindow = 4;

template <class T>
T header_of(const RankMessage& m) {
  TW_ASSERT(m.bytes.size() >= sizeof(T));
  T h;
  std::memcpy(&h, m.bytes.data(), sizeof h);
  return h;
}

template <class T>
std::vector<uint8_t> message_of(const T& h, size_t payload = 0) {
  std::vector<uint8_t> b(sizeof h + payload);
  std::memcpy(b.data(), &h, sizeof h);
  return b;
}

std::string what_of(const std::exception_ptr& e) {
  try {
    std::rethrow_exception(e);
  } catch (const std::exception& x) {
    return x.what();
  } catch (...) {
    return "unknown error";
  }
}

// Where a queued tile goes: the running parallel_for_each, or the seeds of
// the next one (when an edge arrives while this rank is idle).
struct Sink {
  tbb::feeder<int64_t>* feeder = nullptr;
  std::vector<int64_t>* seeds = nullptr;
  void add(int64_t t) const { feeder ? feeder->add(t) : seeds->push_back(t); }
};

class RankedEngine {
 public:
  RankedEngine(ScratchStore& j, ScratchStore& i, const TilePropagator& rule, const WavefrontOptions& opt)
      : j_(j),
        i_(i),
        ranks_(*opt.ranks),
        me_(opt.ranks->rank()),
        n_(opt.ranks->size()),
        grid_(j.grid()),
        bpp_(j.info().fmt.bytes_per_pixel()),
        band_(wavefront_band(grid_.rows(), me_, n_)),
        borders_(grid_, j.info().fmt, opt.connectivity, rule),
        state_(grid_.count()),
        changed_(static_cast<size_t>(grid_.count())) {
    if (opt.max_concurrency > 0) arena_ = std::make_unique<tbb::task_arena>(opt.max_concurrency);
    for (int64_t r = 0; r < n_; ++r) {
      const RowBand b = wavefront_band(grid_.rows(), static_cast<int>(r), n_);
      for (int64_t y = b.first; y < b.end; ++y) owner_.push_back(static_cast<int>(r));
    }
  }

  WavefrontStats run() {
    const auto t0 = std::chrono::steady_clock::now();
    check_same_grid();
    std::thread receiver([this] { receive_loop(); });
    // Joined on every way out: after an abort (or another rank's failure)
    // its wait is woken, as Ranks promises.
    struct Join {
      std::thread& t;
      ~Join() { t.join(); }
    } join{receiver};
    try {
      in_arena([&] { publish_initial(); });
      propagate();
      gather();
    } catch (...) {
      if (!comm_failed_) ranks_.abort(what_of(std::current_exception()));
      // Another rank failed (its error is the one reported): if our
      // receiver still waits, a message to ourselves lets it go.
      if (!receiver_done_) try {
          ranks_.send(me_, kPropagateTag, message_of(Control{kDoneMsg}));
        } catch (...) {
        }
      throw;
    }
    WavefrontStats st;
    st.tiles = grid_.count();
    // Collectives from this one thread, in the same order on every rank.
    st.tile_visits = ranks_.allreduce_sum(visits_.load());
    st.messages = ranks_.allreduce_sum(messages_.load());
    st.message_bytes = ranks_.allreduce_sum(message_bytes_.load());
    const auto us = std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - t0);
    st.seconds = static_cast<double>(ranks_.allreduce_max(us.count())) * 1e-6;
    return st;
  }

 private:
  int64_t index(int64_t tx, int64_t ty) const { return borders_.index(tx, ty); }
  bool owns_row(int64_t ty) const { return ty >= band_.first && ty < band_.end; }

  template <class F>
  void in_arena(F&& f) {
    if (arena_)
      arena_->execute(f);
    else
      f();
  }

  // Point-to-point calls go through here: an exception from Ranks means
  // another rank failed (or the transport did), which this rank must not
  // report as its own failure.
  template <class F>
  auto comm(F&& f) -> decltype(f()) {
    try {
      return f();
    } catch (...) {
      comm_failed_ = true;
      throw;
    }
  }
  void send(int to, int tag, const std::vector<uint8_t>& b) {
    ++messages_;
    message_bytes_ += static_cast<int64_t>(b.size());
    comm([&] { ranks_.send(to, tag, b); });
  }

  // Ranks that disagree on the raster would wait on each other forever.
  void check_same_grid() {
    const int64_t key[] = {grid_.width, grid_.height, grid_.tile_w, static_cast<int64_t>(bpp_),
                           borders_.eight() ? 8 : 4};
    for (int64_t k : key)
      if (ranks_.allreduce_max(k) != k || ranks_.allreduce_sum(k) != k * n_)
        throw InternalError("ranked wavefront: the ranks disagree on the raster, tile or connectivity");
  }

  // ---- The receiver: takes every propagation message in as it arrives, so
  // that a sender waiting for its receiver (a large MPI message) never waits
  // on a rank whose threads are all busy sending or computing.
  void receive_loop() {
    try {
      for (;;) {
        RankMessage m = comm([&] { return ranks_.recv(Ranks::kAny, kPropagateTag); });
        TW_ASSERT(!m.bytes.empty());
        const uint8_t kind = m.bytes[0];
        {
          std::lock_guard<std::mutex> l(in_mu_);
          if (kind == kEdgeMsg) {
            edges_in_.push_back(std::move(m));
            edges_waiting_ = true;
          } else {
            control_in_.push_back(std::move(m));
          }
        }
        in_cv_.notify_all();
        if (kind == kDoneMsg) break;
      }
    } catch (...) {
      std::lock_guard<std::mutex> l(in_mu_);
      in_error_ = std::current_exception();
    }
    receiver_done_ = true;
    in_cv_.notify_all();
  }

  // ---- Propagation until global termination.
  //
  // A rank is passive when no tile of its band is queued or running and it
  // holds no edge received but not yet applied; only an applied edge makes
  // it active again. Rank 0 runs waves: a probe to every rank, answered when
  // the rank is passive with its counts (edge messages sent, applied). Two
  // consecutive waves with equal counts and sent == applied prove that all
  // ranks were passive with no edge in flight between the waves
  // (docs/distributed-wavefront.md).
  void propagate() {
    std::vector<int64_t> seeds;
    for (int64_t ty = band_.first; ty < band_.end; ++ty)
      for (int64_t tx = 0; tx < grid_.cols(); ++tx) seeds.push_back(index(tx, ty));
    int64_t wave = 0, replies = 0, sum_sent = 0, sum_received = 0, last_sent = -1, last_received = -1;
    bool wave_open = false;
    for (;;) {
      if (!seeds.empty()) {
        in_arena([&] {
          tbb::parallel_for_each(seeds.begin(), seeds.end(), [&](int64_t t, tbb::feeder<int64_t>& f) { visit(t, f); });
        });
        seeds.clear();
      }
      std::deque<RankMessage> edges, control;
      {
        std::lock_guard<std::mutex> l(in_mu_);
        if (in_error_) std::rethrow_exception(in_error_);
        edges.swap(edges_in_);
        edges_waiting_ = false;
        // Control is answered only while passive: with no edge left unapplied.
        if (edges.empty()) control.swap(control_in_);
      }
      if (!edges.empty()) {
        const Sink sink{nullptr, &seeds};
        for (const RankMessage& m : edges) apply_edge(m, sink);
        continue;
      }
      bool acted = !control.empty();
      for (const RankMessage& m : control) {
        const Control c = header_of<Control>(m);
        if (c.kind == kDoneMsg) return;  // nothing can be in flight: the last wave proved it
        if (c.kind == kProbeMsg) {
          send(0, kPropagateTag, message_of(Control{kReplyMsg, {}, c.wave, sent_.load(), received_.load()}));
        } else {
          TW_ASSERT(c.kind == kReplyMsg && me_ == 0 && wave_open && c.wave == wave);
          sum_sent += c.sent, sum_received += c.received, ++replies;
        }
      }
      if (me_ == 0) {
        if (wave_open && replies == n_ - 1) {
          wave_open = false;
          if (sum_sent == sum_received && sum_sent == last_sent && sum_received == last_received) {
            // Ourselves too: our receiver ends on it.
            for (int r = 0; r < n_; ++r) send(r, kPropagateTag, message_of(Control{kDoneMsg}));
            return;
          }
          last_sent = sum_sent, last_received = sum_received;
        }
        if (!wave_open) {
          // Our own visit of the wave: now, passive.
          ++wave, replies = 0, wave_open = true;
          sum_sent = sent_.load(), sum_received = received_.load();
          for (int r = 1; r < n_; ++r) send(r, kPropagateTag, message_of(Control{kProbeMsg, {}, wave, 0, 0}));
          acted = true;
        }
      }
      if (!acted) {
        std::unique_lock<std::mutex> l(in_mu_);
        in_cv_.wait(l, [&] { return !edges_in_.empty() || !control_in_.empty() || in_error_ || receiver_done_; });
      }
    }
  }

  // Edges that arrived while tiles run are applied between tiles, by
  // whichever thread finds the inbox free: the tiles they wake join this run.
  void drain(tbb::feeder<int64_t>& feeder) {
    if (!edges_waiting_.load(std::memory_order_relaxed)) return;
    std::deque<RankMessage> edges;
    {
      std::unique_lock<std::mutex> l(in_mu_, std::try_to_lock);
      if (!l.owns_lock()) return;
      edges.swap(edges_in_);
      edges_waiting_ = false;
    }
    const Sink sink{&feeder, nullptr};
    for (const RankMessage& m : edges) apply_edge(m, sink);
  }

  // A remote tile's edge: stored as its published border (what halos and
  // reaches() read), and our tiles it can reach queued, as a local
  // publish would (the bottom edge of the row above our band, or the top
  // edge of the row below it).
  void apply_edge(const RankMessage& m, const Sink& sink) {
    const EdgeHeader h = header_of<EdgeHeader>(m);
    TW_ASSERT(h.tx >= 0 && h.tx < grid_.cols() && h.which <= 1);
    TW_ASSERT(h.which == 1 ? h.ty + 1 == band_.first : h.ty == band_.end);
    const int64_t w = grid_.tile_rect(h.tx, h.ty).w;
    TW_ASSERT(m.bytes.size() == sizeof h + static_cast<size_t>(w) * bpp_);
    std::vector<uint8_t> edge(m.bytes.begin() + sizeof h, m.bytes.end());
    ++received_;
    using S = TileBorders::Side;
    const EdgeTaken c = borders_.take_edge(index(h.tx, h.ty), h.which == 0 ? S::kTop : S::kBottom, edge, h.seq);
    if (!c.newer) return;
    const int64_t ny = h.which == 1 ? h.ty + 1 : h.ty - 1;
    const S facing = h.which == 1 ? S::kTop : S::kBottom;  // the edge of ours it touches
    if (c.changed && reaches(edge, index(h.tx, ny), facing)) enqueue(index(h.tx, ny), sink);
    if (borders_.eight()) {
      if (h.tx > 0 && c.first && reaches(edge, index(h.tx - 1, ny), facing, 0, grid_.tile_rect(h.tx - 1, ny).w - 1))
        enqueue(index(h.tx - 1, ny), sink);
      if (h.tx + 1 < grid_.cols() && c.last && reaches(edge, index(h.tx + 1, ny), facing, w - 1, 0))
        enqueue(index(h.tx + 1, ny), sink);
    }
  }

  void send_edge(int to, int64_t tx, int64_t ty, uint8_t which, uint64_t seq, const std::vector<uint8_t>& edge) {
    EdgeHeader h;
    h.which = which, h.tx = tx, h.ty = ty, h.seq = seq;
    std::vector<uint8_t> b = message_of(h, edge.size());
    std::memcpy(b.data() + sizeof h, edge.data(), edge.size());
    ++sent_;  // counted before it can be received
    send(to, kPropagateTag, b);
  }

  // ---- The tile step: wavefront.cpp's Engine, on the tiles of our band,
  // with the same TileBorders; queuing also sends edges to other bands.

  // Our tiles' borders and masks, and the facing borders of the rows just
  // outside our band, from the J every rank loaded: no exchange needed.
  void publish_initial() {
    if (band_.first == band_.end) return;
    const int64_t y0 = std::max<int64_t>(0, band_.first - 1), y1 = std::min(grid_.rows(), band_.end + 1);
    tbb::parallel_for(y0 * grid_.cols(), y1 * grid_.cols(), [&](int64_t t) {
      const int64_t tx = t % grid_.cols(), ty = t / grid_.cols();
      const Rect core = grid_.tile_rect(tx, ty);
      if (owns_row(ty)) {
        ScratchStore::Pin m = i_.acquire(tx, ty);
        borders_.record_mask(t, m.image().view(), core);
        state_.set_queued(t);
      }
      ScratchStore::Pin p = j_.acquire(tx, ty);
      publish(t, p.image().view(), core, nullptr);
    });
  }

  void enqueue(int64_t t, const Sink& sink) {
    TW_ASSERT(owns_row(t / grid_.cols()));
    if (state_.wake(t)) sink.add(t);
  }

  void visit(int64_t t, tbb::feeder<int64_t>& feeder) {
    const Sink sink{&feeder, nullptr};
    state_.run(t, [&] { process(t, sink); });
    drain(feeder);
  }

  void process(int64_t t, const Sink& sink) {
    ++visits_;
    // Isolated (as wavefront.cpp's step): a rule's own parallel loops must
    // not take up another tile's visit on this thread, which would reuse
    // its halo buffer (and re-enter a GPU rule's lock).
    tbb::this_task_arena::isolate([&] {
      borders_.step(j_, i_, t, halo_buf_.local(), [&](const ImageView& hv, const Rect& core) {
        changed_[static_cast<size_t>(t)] = 1;
        publish(t, hv, core, &sink);
      });
    });
  }

  // Whether pixels of `mine` can change tile nt's facing edge. nt is ours,
  // so its values are current; values only move one way, so a border read a
  // moment ago errs on the side of queueing.
  bool reaches(const std::vector<uint8_t>& mine, int64_t nt, TileBorders::Side side, int64_t only_mine = -1,
               int64_t only_theirs = -1) {
    return borders_.reaches(mine, nt, side, only_mine, only_theirs);
  }

  // Records the tile's edges; with a sink, queues each tile of ours that a
  // changed edge can now reach, and sends a changed top or bottom edge to
  // the rank whose band it faces (always: that rank decides what it reaches,
  // and its halos must see our latest values).
  void publish(int64_t t, const ImageView& v, const Rect& core, const Sink* sink) {
    const int64_t tx = t % grid_.cols(), ty = t / grid_.cols();
    const EdgeRecord r = borders_.record(t, v, core, !sink);
    if (!sink) return;
    using S = TileBorders::Side;
    const TileEdges& e = r.edges;
    const bool eight = borders_.eight();
    const bool up = ty > 0, down = ty + 1 < grid_.rows(), lft = tx > 0, rgt = tx + 1 < grid_.cols();
    const int64_t w = core.w;
    auto corner_w = [&](int64_t nx, int64_t ny) { return grid_.tile_rect(nx, ny).w; };
    if (up && r.top && !owns_row(ty - 1)) send_edge(owner_[static_cast<size_t>(ty - 1)], tx, ty, 0, r.seq, e.top);
    if (down && r.bottom && !owns_row(ty + 1))
      send_edge(owner_[static_cast<size_t>(ty + 1)], tx, ty, 1, r.seq, e.bottom);
    if (lft && r.left && reaches(e.left, index(tx - 1, ty), S::kRight)) enqueue(index(tx - 1, ty), *sink);
    if (rgt && r.right && reaches(e.right, index(tx + 1, ty), S::kLeft)) enqueue(index(tx + 1, ty), *sink);
    if (up && owns_row(ty - 1)) {
      if (r.top && reaches(e.top, index(tx, ty - 1), S::kBottom)) enqueue(index(tx, ty - 1), *sink);
      if (eight && lft && r.top_left &&
          reaches(e.top, index(tx - 1, ty - 1), S::kBottom, 0, corner_w(tx - 1, ty - 1) - 1))
        enqueue(index(tx - 1, ty - 1), *sink);
      if (eight && rgt && r.top_right && reaches(e.top, index(tx + 1, ty - 1), S::kBottom, w - 1, 0))
        enqueue(index(tx + 1, ty - 1), *sink);
    }
    if (down && owns_row(ty + 1)) {
      if (r.bottom && reaches(e.bottom, index(tx, ty + 1), S::kTop)) enqueue(index(tx, ty + 1), *sink);
      if (eight && lft && r.bottom_left &&
          reaches(e.bottom, index(tx - 1, ty + 1), S::kTop, 0, corner_w(tx - 1, ty + 1) - 1))
        enqueue(index(tx - 1, ty + 1), *sink);
      if (eight && rgt && r.bottom_right && reaches(e.bottom, index(tx + 1, ty + 1), S::kTop, w - 1, 0))
        enqueue(index(tx + 1, ty + 1), *sink);
    }
  }

  // ---- The result to every rank: the ranks take turns; the one whose turn
  // it is streams the tiles it changed, a chunk of rows a message, to all
  // others, and waits for their acknowledgements a window behind, so a
  // slow writer holds up the sender instead of piling messages up.
  void gather() {
    for (int src = 0; src < n_; ++src) src == me_ ? send_changed_tiles() : receive_tiles(src);
  }

  void send_changed_tiles() {
    int64_t sent = 0, acked = 0;  // messages to each rank; acknowledged windows
    auto await_acks = [&](int64_t windows) {
      for (; acked < windows; ++acked)
        for (int r = 0; r < n_; ++r)
          if (r != me_) comm([&] { return ranks_.recv(r, kAckTag); });
    };
    const size_t row_bytes = static_cast<size_t>(grid_.tile_w) * bpp_;
    const int64_t chunk_rows = std::max<int64_t>(1, static_cast<int64_t>(kChunkBytes / row_bytes));
    for (int64_t ty = band_.first; ty < band_.end; ++ty)
      for (int64_t tx = 0; tx < grid_.cols(); ++tx) {
        if (!changed_[static_cast<size_t>(index(tx, ty))]) continue;
        const Rect core = grid_.tile_rect(tx, ty);
        ScratchStore::Pin p = j_.acquire(tx, ty);
        const ImageView v = p.image().view();
        const size_t n = static_cast<size_t>(core.w) * bpp_;
        for (int64_t y = core.y; y < core.y1(); y += chunk_rows) {
          const TileChunk c{tx, ty, y, std::min(chunk_rows, core.y1() - y)};
          std::vector<uint8_t> b = message_of(c, n * static_cast<size_t>(c.rows));
          for (int64_t k = 0; k < c.rows; ++k) std::memcpy(b.data() + sizeof c + k * n, v.ptr_bytes(core.x, y + k), n);
          for (int r = 0; r < n_; ++r)
            if (r != me_) send(r, kTilesTag, b);
          if (++sent % kWindow == 0) await_acks(sent / kWindow - 1);
        }
      }
    for (int r = 0; r < n_; ++r)
      if (r != me_) send(r, kTilesTag, message_of(TileChunk{}));
    await_acks(sent / kWindow);
  }

  void receive_tiles(int src) {
    const RowBand theirs = wavefront_band(grid_.rows(), src, n_);
    for (int64_t got = 0;;) {
      const RankMessage m = comm([&] { return ranks_.recv(src, kTilesTag); });
      const TileChunk c = header_of<TileChunk>(m);
      if (c.tx < 0) return;
      TW_ASSERT(c.tx < grid_.cols() && c.ty >= theirs.first && c.ty < theirs.end);
      const Rect core = grid_.tile_rect(c.tx, c.ty);
      TW_ASSERT(c.y >= core.y && c.rows > 0 && c.y + c.rows <= core.y1());
      const size_t n = static_cast<size_t>(core.w) * bpp_;
      TW_ASSERT(m.bytes.size() == sizeof c + n * static_cast<size_t>(c.rows));
      {
        ScratchStore::Pin p = j_.acquire(c.tx, c.ty);
        const ImageView v = p.image().view();
        for (int64_t k = 0; k < c.rows; ++k)
          std::memcpy(v.ptr_bytes(core.x, c.y + k), m.bytes.data() + sizeof c + k * n, n);
        p.mark_dirty();
      }
      if (++got % kWindow == 0) send(src, kAckTag, message_of(uint8_t{1}));
    }
  }

  ScratchStore& j_;
  ScratchStore& i_;
  Ranks& ranks_;
  const int me_, n_;
  TileGrid grid_;
  size_t bpp_;
  RowBand band_;
  std::vector<int> owner_;  // rank of each tile row
  TileBorders borders_;
  TileStates state_;
  std::vector<std::atomic<uint8_t>> changed_;  // our tiles the run changed: sent in the gather
  std::unique_ptr<tbb::task_arena> arena_;
  std::atomic<int64_t> visits_{0};
  tbb::enumerable_thread_specific<Image> halo_buf_;
  // Edge messages sent to and applied from other ranks: the termination counts.
  std::atomic<int64_t> sent_{0}, received_{0};
  std::atomic<int64_t> messages_{0}, message_bytes_{0};  // every message, for the stats
  std::atomic<bool> comm_failed_{false};

  // The receiver's hand-over: propagation messages it took, and its error.
  std::mutex in_mu_;
  std::condition_variable in_cv_;
  std::deque<RankMessage> edges_in_, control_in_;
  std::atomic<bool> edges_waiting_{false};
  std::exception_ptr in_error_;
  std::atomic<bool> receiver_done_{false};
};

}  // namespace

WavefrontStats run_ranked_wavefront(ScratchStore& j, ScratchStore& i, const TilePropagator& rule,
                                    const WavefrontOptions& opt) {
  TW_ASSERT(opt.ranks && opt.ranks->size() > 1);
  RankedEngine e(j, i, rule, opt);
  return e.run();
}

}  // namespace tw
