#include "jobs/pyramid/banded_pyramid.hpp"

#include <tbb/global_control.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <exception>
#include <mutex>
#include <thread>

#include "engine/file_io.hpp"
#include "engine/geometry.hpp"
#include "engine/memory.hpp"
#include "engine/output_file.hpp"
#include "engine/progress.hpp"
#include "engine/raw_raster.hpp"
#include "engine/trace.hpp"
#include "engine/warnings.hpp"
#include "jobs/pyramid/band_share.hpp"
#include "jobs/pyramid/pad_tile.hpp"
#include "jobs/pyramid/pass_plan.hpp"
#include "jobs/pyramid/pyramid_pass.hpp"

namespace tw {
namespace {

using Clock = std::chrono::steady_clock;

// Messages to rank 0 (one tag, so they arrive in the order sent).
enum : uint8_t { kTile = 1, kRows = 2, kDone = 3 };

class Writer {
 public:
  template <class T>
  void put(T v) {
    const size_t at = b.size();
    b.resize(at + sizeof(T));
    std::memcpy(b.data() + at, &v, sizeof(T));
  }
  void put_bytes(const uint8_t* p, size_t n) { b.insert(b.end(), p, p + n); }
  std::vector<uint8_t> b;
};

class Reader {
 public:
  explicit Reader(const std::vector<uint8_t>& b) : b_(b) {}
  template <class T>
  T get() {
    if (at_ + sizeof(T) > b_.size()) throw InternalError("banded pyramid: a short message");
    T v;
    std::memcpy(&v, b_.data() + at_, sizeof(T));
    at_ += sizeof(T);
    return v;
  }
  const uint8_t* take(size_t n) {
    if (at_ + n > b_.size()) throw InternalError("banded pyramid: a short message");
    const uint8_t* p = b_.data() + at_;
    at_ += n;
    return p;
  }

 private:
  const std::vector<uint8_t>& b_;
  size_t at_ = 0;
};

// A rank's tiles of one token, as one message to rank 0.
struct TileBatch {
  Writer w;
  int64_t token = 0;
  uint32_t count = 0;
  void start(int64_t t) {
    w.b.clear();
    w.put<uint8_t>(kTile), w.put<int64_t>(t), w.put<uint32_t>(0);
    token = t;
  }
  void add(int level, int64_t tx, int64_t ty, const std::vector<uint8_t>& bytes) {
    w.put<int32_t>(level), w.put<int64_t>(tx), w.put<int64_t>(ty), w.put<uint64_t>(bytes.size());
    w.put_bytes(bytes.data(), bytes.size());
    ++count;
  }
  void send(Ranks& ranks) {
    std::memcpy(w.b.data() + 1 + sizeof(int64_t), &count, sizeof count);
    ranks.send(0, rank_tags::kPyramid, w.b);
    count = 0;
  }
};

struct Spilled {
  int64_t token = 0;
  int32_t level = 0;
  int64_t tx = 0, ty = 0;
  uint64_t off = 0, n = 0;
};

// Rank 0's store of every rank's tiles (a scratch file and an index) and
// of level K's rows (a raw raster), filled from the ranks as they finish
// their tiles, in any order.
class Collected {
 public:
  Collected(const std::string& near, PixelFormat fmt, int64_t wK, int64_t hK) : file_(near), rows_(near, fmt, wK, hK) {}

  void tile(int64_t token, int level, int64_t tx, int64_t ty, const uint8_t* p, size_t n) {
    std::lock_guard<std::mutex> l(mu_);
    pwrite_all(file_.fd(), p, n, end_, file_.name());
    index_.push_back({token, level, tx, ty, end_, n});
    end_ += n;
  }
  void rows(const ImageView& v) {
    std::lock_guard<std::mutex> l(mu_);
    rows_.write(v);
  }
  std::vector<Spilled>& index() { return index_; }
  std::vector<uint8_t> bytes(const Spilled& s) const {
    std::vector<uint8_t> b(s.n);
    pread_all(file_.fd(), b.data(), b.size(), s.off, file_.name());
    return b;
  }
  const RawRasterFile& level_k() const { return rows_; }

 private:
  std::mutex mu_;
  ScratchFile file_;
  RawRasterFile rows_;
  std::vector<Spilled> index_;
  uint64_t end_ = 0;
};

std::string scratch_of(const PyramidJobOptions& opt) {
  if (!opt.scratch_near.empty()) return opt.scratch_near;
  const char* tmp = std::getenv("TMPDIR");
  return std::string(tmp && *tmp ? tmp : "/tmp") + "/tilewave";
}

// The shared levels K, weighing two costs against a rank's share of the
// work: its ghost rows, about (2^K - 1) tiles' rows of level 0 read again
// (jobs/pyramid/band_share.cpp), and the levels below K, which rank 0 makes
// alone while the others wait (a third of 4^-K of the pixels, so R / (3 *
// 4^K) of a share), and level K's raw rows travel to rank 0 (as much again). At least 1
// where every rank gets two units of 2 tiles' rows; 0 (rank 0 alone) below.
int shared_levels(const Sizes& sizes, int64_t T, int ranks) {
  const int64_t H = sizes[0].second, L = static_cast<int64_t>(sizes.size());
  if (L < 2 || ceil_div(H, 2 * T) < 2 * static_cast<int64_t>(ranks)) return 0;
  int best = 1;
  double best_cost = 1e300;
  for (int k = 1; k < L && ceil_div(H, T << k) >= 2 * static_cast<int64_t>(ranks); ++k) {
    const double ghost = static_cast<double>(((int64_t{1} << k) - 1) * T) * ranks / static_cast<double>(H);
    // Counted twice: rank 0's work, and level K's raw rows crossing to it.
    const double tail = 2 * ranks / (3.0 * static_cast<double>(int64_t{1} << (2 * k)));
    if (ghost + tail < best_cost) best_cost = ghost + tail, best = k;
  }
  return best;
}

// Rank r's level-0 rows: a contiguous run of bands (possibly none).
std::pair<int64_t, int64_t> rows_of(const Sizes& sizes, int64_t T, int K, int r, int R) {
  const int64_t A = T << K, H = sizes[0].second, units = ceil_div(H, A);
  const int64_t u0 = units * r / R, u1 = units * (r + 1) / R;
  return {std::min(H, u0 * A), std::min(H, u1 * A)};
}

// Rank 0: the tail levels K+1.. from level K, band by band as the file
// order reaches each level-K band, encoded and written at once.
class Tail {
 public:
  Tail(const Sizes& sizes, int K, int64_t T, PixelFormat fmt, PyramidSink& sink, const RawRasterFile& levelK)
      : K_(K), T_(T), fmt_(fmt), sink_(sink), levelK_(levelK) {
    const Sizes rest(sizes.begin() + K, sizes.end());
    if (rest.size() > 1) {
      geom_ = stripe_geometry(rest, static_cast<int>(rest.size()) - 1, 0, rest[0].first);
      producer_ = make_cpu_producer(fmt, geom_.levels, T, pool_);
    }
  }
  // After the level-K band `ty` was written.
  int64_t push(int64_t ty) {
    if (!producer_) return 0;
    const CascadeLevel& l = geom_.levels[0];
    auto band = pool_.acquire(fmt_, Rect(0, ty * T_, l.width, std::min(T_, l.height - ty * T_)));
    levelK_.read(0, band->view());
    std::vector<FinishedBand> done;
    producer_->push(band, done);
    int64_t n = 0;
    for (const FinishedBand& f : done) {
      const CascadeLevel& L = geom_.levels[static_cast<size_t>(f.level)];
      const int64_t tiles = ceil_div(L.width, T_), row = f.band->rect().y / T_;
      std::vector<std::vector<uint8_t>> bytes(static_cast<size_t>(tiles));
      tbb::parallel_for(int64_t{0}, tiles, [&](int64_t tx) {
        static thread_local Image pad;
        const Rect tile(tx * T_, row * T_, T_, T_);
        const ImageView bv = f.band->view();
        if (bv.rect.contains(tile)) {
          sink_.encode(f.level + K_, bv.sub(tile), bytes[static_cast<size_t>(tx)]);
        } else {
          pad_tile(bv, tile, L.width, L.height, pad);
          sink_.encode(f.level + K_, pad.view(), bytes[static_cast<size_t>(tx)]);
        }
      });
      for (int64_t tx = 0; tx < tiles; ++tx) sink_.write(f.level + K_, tx, row, bytes[static_cast<size_t>(tx)]);
      n += tiles;
    }
    return n;
  }

 private:
  int K_;
  int64_t T_;
  PixelFormat fmt_;
  PyramidSink& sink_;
  const RawRasterFile& levelK_;
  PassGeom geom_;
  ImagePool pool_;
  std::unique_ptr<LevelProducer> producer_;
};

// Where a single pass emits band `ty` of `level` within its token: the
// cascade hands a finished band straight to the level below (depth first),
// so a band comes after the band of the level above whose arrival completed
// it — the one holding row 2e of that level (e: this band's end; the last
// row at the bottom edge). The path of those bands from level 1 down orders
// a token's bands as the pass emits them: a parent before its children,
// siblings top to bottom (two only where the last rows flush at once).
// Level 0's tiles (an empty path) come first.
std::vector<int64_t> emit_path(const Sizes& sizes, int64_t T, int level, int64_t ty) {
  std::vector<int64_t> path(static_cast<size_t>(level));
  for (int k = level; k >= 1; --k) {
    path[static_cast<size_t>(k - 1)] = ty;
    const int64_t end = std::min((ty + 1) * T, sizes[static_cast<size_t>(k)].second);
    ty = std::min(2 * end, sizes[static_cast<size_t>(k - 1)].second - 1) / T;
  }
  return path;
}

struct Outcome {
  std::exception_ptr own;  // this rank's failure
  std::string remote;      // rank 0: the first other rank's failure
};

}  // namespace

PyramidStats run_pyramid_banded(const TileSource& src, PyramidSink& sink, const PyramidJobOptions& opt, Ranks& ranks) {
  const int R = ranks.size(), me = ranks.rank();
  const auto t0 = Clock::now();
  const Sizes sizes = plan_pyramid_levels(src, opt.min_size);
  const int64_t T = opt.tile;
  const PixelFormat fmt = src.info().fmt;
  const int K = shared_levels(sizes, T, R);
  if (K == 0) {
    // Too few rows to share (under two bands of 2 tiles a rank): rank 0
    // makes it all, as a single process would.
    PyramidJobOptions one = opt;
    one.ranks = nullptr;
    PyramidStats s = me == 0 ? run_pyramid(src, sink, one) : PyramidStats{};
    s.level_sizes = sizes;
    s.ranks = R;
    return s;
  }
  PyramidStats stats;
  stats.level_sizes = sizes;
  stats.ranks = R;
  stats.shared_levels = K;
  std::unique_ptr<Collected> collected;
  if (me == 0)
    collected = std::make_unique<Collected>(scratch_of(opt), fmt, sizes[static_cast<size_t>(K)].first,
                                            sizes[static_cast<size_t>(K)].second);
  Outcome out;
  // Rank 0 receives while it computes its own share; it keeps receiving
  // after a failure of its own, so no rank stays blocked sending to it.
  std::thread receiver;
  if (me == 0)
    receiver = std::thread([&] {
      int done = 0;
      while (done < R - 1) {
        RankMessage m;
        try {
          m = ranks.recv(Ranks::kAny, rank_tags::kPyramid);
        } catch (const std::exception& e) {
          // The transport itself failed (or, in one process, another rank
          // did): nothing more will come.
          if (out.remote.empty()) out.remote = std::string("rank 0 receiving: ") + e.what();
          return;
        }
        try {
          Reader rd(m.bytes);
          const uint8_t kind = rd.get<uint8_t>();
          if (kind == kDone) {
            ++done;
            const uint64_t n = rd.get<uint64_t>();
            if (n && out.remote.empty())
              out.remote = "rank " + std::to_string(m.from) + ": " +
                           std::string(reinterpret_cast<const char*>(rd.take(n)), static_cast<size_t>(n));
          } else if (kind == kTile) {
            const int64_t token = rd.get<int64_t>();
            const uint32_t count = rd.get<uint32_t>();
            for (uint32_t t = 0; t < count; ++t) {
              const int32_t level = rd.get<int32_t>();
              const int64_t tx = rd.get<int64_t>(), ty = rd.get<int64_t>();
              const uint64_t n = rd.get<uint64_t>();
              collected->tile(token, level, tx, ty, rd.take(n), static_cast<size_t>(n));
            }
          } else if (kind == kRows) {
            const int64_t x = rd.get<int64_t>(), y = rd.get<int64_t>(), w = rd.get<int64_t>(), h = rd.get<int64_t>();
            const size_t row = static_cast<size_t>(w) * fmt.bytes_per_pixel();
            const uint8_t* p = rd.take(row * static_cast<size_t>(h));
            Image img(fmt, Rect(x, y, w, h));
            for (int64_t r = 0; r < h; ++r) std::memcpy(img.row_bytes(y + r), p + row * static_cast<size_t>(r), row);
            collected->rows(img.view());
          }
        } catch (const std::exception& e) {
          if (out.remote.empty()) out.remote = std::string("rank 0 receiving: ") + e.what();
        }
      }
    });

  Counters cnt;
  TileBatch batch;
  try {
    const int threads =
        static_cast<int>(tbb::global_control::active_value(tbb::global_control::max_allowed_parallelism));
    // Each rank reduces on its own device (or CPU); a pending CUDA start is
    // waited for (the hand-over from the CPU is a single pass's affair).
    PyramidJobOptions mine = opt;
    if (mine.backend.pending) mine.backend = resolve_backend(mine.backend);
    const size_t gpu = pyramid_gpu_budget(mine);
    stats.backend = mine.backend.str();
    const Plan plan = choose_plan(sizes, fmt, T, opt.memory, gpu, threads, sink.compression_ratio_estimate());
    if (plan.K != static_cast<int>(sizes.size()) - 1 || plan.S < sizes[0].first)
      throw InputError("splitting a slide over ranks needs --memory for whole bands of rows of level 0 (" +
                       format_bytes(opt.memory) + " is not enough for " + std::to_string(sizes[0].first) +
                       "-pixel rows): give more --memory or run it on one rank");
    const auto [y0, y1] = rows_of(sizes, T, K, me, R);
    if (y0 < y1) {
      BandShare share = band_share(sizes, K, T, y0, y1);
      if (me == 0) {
        share.tile = [&](int64_t token, int level, int64_t tx, int64_t ty, std::vector<uint8_t>& b) {
          collected->tile(token, level, tx, ty, b.data(), b.size());
        };
        share.rows_of_last_level = [&](const ImageView& v) { collected->rows(v); };
      } else {
        // A token's tiles go as one message (the write stage hands them on
        // token by token), sent when the next token's first tile comes.
        share.tile = [&](int64_t token, int level, int64_t tx, int64_t ty, std::vector<uint8_t>& b) {
          if (batch.count && batch.token != token) batch.send(ranks);
          if (!batch.count) batch.start(token);
          batch.add(level, tx, ty, b);
        };
        share.rows_of_last_level = [&](const ImageView& v) {
          Writer w;
          w.put<uint8_t>(kRows), w.put<int64_t>(v.rect.x), w.put<int64_t>(v.rect.y), w.put<int64_t>(v.rect.w);
          w.put<int64_t>(v.rect.h);
          for (int64_t y = v.rect.y; y < v.rect.y1(); ++y) w.put_bytes(v.row_bytes(y), v.row_length_bytes());
          ranks.send(0, rank_tags::kPyramid, w.b);
        };
      }
      PassGeom geom = stripe_geometry(sizes, K, 0, sizes[0].first);
      for (int k = 0; k <= K; ++k) geom.levels[static_cast<size_t>(k)].row0 = share.start[static_cast<size_t>(k)];
      // Only rank 0 shows progress (a rank's share of the tiles).
      Progress progress(me == 0 ? opt.progress_label : std::string(), tiles_in(sizes, T, 0) / R,
                        static_cast<double>(T * T));
      PassArgs a{&src,           &sink,
                 geom,           T,
                 plan.tokens,    opt.passthrough,
                 false,          0,
                 nullptr,        mine.backend,
                 opt.gpu_jpeg,   gpu > plan.device_bytes ? gpu - plan.device_bytes : 0,
                 opt.gpu_memory, -1};
      a.share = &share;
      run_pass(a, cnt, progress);
      if (batch.count) batch.send(ranks);
    }
  } catch (...) {
    out.own = std::current_exception();
  }
  if (me != 0) {
    Writer w;
    w.put<uint8_t>(kDone);
    std::string why;
    if (out.own) try {
        std::rethrow_exception(out.own);
      } catch (const std::exception& e) {
        why = e.what();
      }
    w.put<uint64_t>(why.size());
    w.put_bytes(reinterpret_cast<const uint8_t*>(why.data()), why.size());
    ranks.send(0, rank_tags::kPyramid, w.b);
  } else {
    receiver.join();
  }
  const bool failed = ranks.allreduce_max(out.own || !out.remote.empty() ? 1 : 0) != 0;
  if (out.own) std::rethrow_exception(out.own);
  if (failed) {
    if (me == 0) throw InputError(out.remote);
    throw InputError("stopped: another rank failed (rank 0 reports why)");
  }
  counters_to_stats(cnt, stats);
  if (me == 0) {
    // The file in a single pass's order: by token; within one, level 0's
    // tiles, then the bands finished, level after level (each level
    // finishes at most one band per token), each left to right.
    TraceSpan span("banded-merge", 0);
    const auto tm = Clock::now();
    std::vector<Spilled>& idx = collected->index();
    std::vector<std::vector<int64_t>> paths(idx.size());
    for (size_t i = 0; i < idx.size(); ++i) paths[i] = emit_path(sizes, T, idx[i].level, idx[i].ty);
    std::vector<size_t> order(idx.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
      const Spilled &x = idx[a], &y = idx[b];
      if (x.token != y.token) return x.token < y.token;
      if (paths[a] != paths[b]) return paths[a] < paths[b];
      return x.tx < y.tx;
    });
    Tail tail(sizes, K, T, fmt, sink, collected->level_k());
    int64_t written = 0;
    for (size_t i = 0; i < order.size(); ++i) {
      const Spilled& s = idx[order[i]];
      sink.write(s.level, s.tx, s.ty, collected->bytes(s));
      ++written;
      // The levels below K that this band of level K completes come right
      // after it, as in a single pass.
      const bool band_done = i + 1 == order.size() || idx[order[i + 1]].level != s.level ||
                             idx[order[i + 1]].ty != s.ty || idx[order[i + 1]].token != s.token;
      if (s.level == K && band_done) written += tail.push(s.ty);
    }
    stats.merge_s = std::chrono::duration<double>(Clock::now() - tm).count();
    stats.tiles_encoded = written - cnt.passed;
    if (written != tiles_in(sizes, T, 0))
      throw InternalError("banded pyramid: " + std::to_string(written) + " tiles made of " +
                          std::to_string(tiles_in(sizes, T, 0)));
  }
  stats.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  return stats;
}

}  // namespace tw
