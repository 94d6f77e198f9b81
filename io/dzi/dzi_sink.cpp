#include "io/dzi/dzi_sink.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <tbb/concurrent_queue.h>
#include <tbb/enumerable_thread_specific.h>
#include <tbb/task_arena.h>
#include <tbb/task_group.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <exception>
#include <mutex>
#include <unordered_map>

#include "engine/error.hpp"
#include "io/dzi/dzi_descriptor.hpp"
#include "io/dzi/dzi_geometry.hpp"
#include "io/dzi/dzi_output.hpp"
#include "io/dzi/dzi_tile_encoder.hpp"
#include "io/dzi/file_writer_pool.hpp"

namespace tw {
namespace {

constexpr int64_t kDefaultTile = 254;  // vips dzsave's and OpenSeadragon's default
// Threads that create the tile files. One: on ext4 creating a file costs
// 20-130 us of kernel CPU, up to 1 ms right after many deletions (it skips
// recently deleted inodes), and more threads creating files in one folder
// only contend for its lock.
constexpr int kWriterThreads = 1;

DziTileFormat tile_format_for(const SinkRequest& r) {
  DziTileFormat f;
  f.fmt = r.encode.fmt;
  // PNG is deflate: the lossless default of op results and 16-bit images.
  f.codec = r.encode.codec == Codec::kDeflate ? Codec::kPng : r.encode.codec;
  f.quality = r.encode.quality;
  f.subsampling = r.encode.subsampling;
  f.png_level = r.encode.level < 0 ? -1 : std::min(r.encode.level, 9);
  f.validate();
  return f;
}

DziGeometry geometry_for(const SinkRequest& r) {
  DziGeometry g;
  TW_ASSERT(!r.levels.empty());
  g.width = r.levels[0].width;
  g.height = r.levels[0].height;
  g.tile = r.layout_tile > 0 ? r.layout_tile : kDefaultTile;
  g.overlap = r.overlap;
  if (g.tile < 1) throw InputError("--tile must be at least 1 for Deep Zoom, not " + std::to_string(g.tile));
  if (g.overlap < 0) throw InputError("--overlap must be 0 or more, not " + std::to_string(g.overlap));
  // The pass plans its levels down to 1x1 for Deep Zoom (write_pyramid).
  TW_ASSERT(static_cast<int>(r.levels.size()) == g.max_level() + 1);
  return g;
}

// Along one axis of a level: which pass tiles each Deep Zoom tile needs and
// which Deep Zoom tiles need each pass tile (both contiguous ranges, as the
// tiles are ordered intervals).
struct Axis {
  std::vector<int64_t> need_lo, need_hi;  // per Deep Zoom index: pass tiles
  std::vector<int64_t> used_lo, used_hi;  // per pass index: Deep Zoom tiles

  Axis(int64_t size, int64_t dzi_tile, int64_t overlap, int64_t pass_tile) {
    const int64_t n = (size + dzi_tile - 1) / dzi_tile, passes = (size + pass_tile - 1) / pass_tile;
    used_lo.assign(passes, n);
    used_hi.assign(passes, -1);
    for (int64_t i = 0; i < n; ++i) {
      const int64_t a = std::max<int64_t>(0, i * dzi_tile - (i > 0 ? overlap : 0));
      const int64_t b = std::min(size, (i + 1) * dzi_tile + overlap);
      need_lo.push_back(a / pass_tile);
      need_hi.push_back((b - 1) / pass_tile);
      for (int64_t p = a / pass_tile; p <= (b - 1) / pass_tile; ++p) {
        used_lo[p] = std::min(used_lo[p], i);
        used_hi[p] = std::max(used_hi[p], i);
      }
    }
  }
  int64_t needed(int64_t i) const { return need_hi[i] - need_lo[i] + 1; }
  int64_t users(int64_t p) const { return used_hi[p] - used_lo[p] + 1; }
};

using TileBytes = std::shared_ptr<const std::vector<uint8_t>>;

struct PassTile {
  TileBytes px;
  int64_t users_left = 0;
};

struct Level {
  int dzi_level = 0;
  int64_t width = 0, height = 0, pass_cols = 0;
  Axis x, y;
  std::unordered_map<int64_t, PassTile> pending;  // ty * pass_cols + tx
  std::unordered_map<int64_t, int64_t> missing;   // row * cols + col: pass tiles it still lacks
  int64_t cut = 0;
};

// A Deep Zoom tile ready to cut: its pixels lie in these pass tiles.
struct Job {
  int level = 0;
  int64_t col = 0, row = 0;
  Rect rect;
  std::vector<std::pair<Rect, TileBytes>> parts;  // pass tile's rect in level pixels, its pixels
};

class DziSink final : public PyramidSink {
 public:
  explicit DziSink(const SinkRequest& r)
      : format_(tile_format_for(r)),
        geo_(geometry_for(r)),
        pass_tile_(r.encode.tile_w),
        out_(r.path),
        max_waiting_(2 * tbb::this_task_arena::max_concurrency() + 2),
        workers_([this] { return Worker{std::make_unique<DziTileEncoder>(format_)}; }) {
    TW_ASSERT(r.encode.tile_w == r.encode.tile_h && pass_tile_ > 0);
    const int max_level = geo_.max_level();
    for (size_t p = 0; p < r.levels.size(); ++p) {
      const int dz = max_level - static_cast<int>(p);
      TW_ASSERT(r.levels[p].width == geo_.level_width(dz) && r.levels[p].height == geo_.level_height(dz));
      levels_.push_back(Level{dz,
                              r.levels[p].width,
                              r.levels[p].height,
                              (r.levels[p].width + pass_tile_ - 1) / pass_tile_,
                              Axis(r.levels[p].width, geo_.tile, geo_.overlap, pass_tile_),
                              Axis(r.levels[p].height, geo_.tile, geo_.overlap, pass_tile_),
                              {},
                              {},
                              0});
      const std::string dir = out_.files_dir() + "/" + std::to_string(dz);
      if (::mkdir(dir.c_str(), 0755) != 0) throw InputError("cannot create " + dir + ": " + std::strerror(errno));
    }
  }

  ~DziSink() override {
    // Without finish() (an error elsewhere): drop what waits, let running
    // tasks end; DziOutput then removes the temporary folder.
    aborted_ = true;
    try {
      tasks_->wait();
    } catch (...) {
    }
  }

  void encode(int level, const ImageView& tile, std::vector<uint8_t>& out) override {
    (void)level;
    // Raw pixels: the Deep Zoom tiles are cut from them in write().
    const size_t row = static_cast<size_t>(tile.rect.w) * tile.fmt.bytes_per_pixel();
    out.resize(row * static_cast<size_t>(tile.rect.h));
    for (int64_t y = 0; y < tile.rect.h; ++y)
      std::memcpy(out.data() + static_cast<size_t>(y) * row, tile.row_bytes(tile.rect.y + y), row);
  }

  void write(int level, int64_t tx, int64_t ty, const std::vector<uint8_t>& bytes) override {
    rethrow_task_error();
    Level& L = levels_.at(static_cast<size_t>(level));
    const int64_t cols = L.x.need_lo.size();
    PassTile& pt = L.pending[ty * L.pass_cols + tx];
    pt.px = std::make_shared<const std::vector<uint8_t>>(bytes);
    pt.users_left = L.x.users(tx) * L.y.users(ty);
    for (int64_t r = L.y.used_lo[ty]; r <= L.y.used_hi[ty]; ++r)
      for (int64_t c = L.x.used_lo[tx]; c <= L.x.used_hi[tx]; ++c) {
        const int64_t key = r * cols + c;
        auto it = L.missing.try_emplace(key, L.x.needed(c) * L.y.needed(r)).first;
        if (--it->second > 0) continue;
        L.missing.erase(it);
        schedule(level, L, c, r);
      }
    // Wait for no one: help with the cutting while too much of it waits.
    while (waiting_.load() > max_waiting_) run_one();
  }

  double compression_ratio_estimate() const override { return 1.0; }  // encode() keeps raw pixels

  void finish() override {
    tasks_->wait();
    rethrow_task_error();
    files_.drain();
    for (const Level& L : levels_) {
      const int64_t expected = static_cast<int64_t>(L.x.need_lo.size() * L.y.need_lo.size());
      if (L.cut != expected || !L.pending.empty() || !L.missing.empty())
        throw InternalError("Deep Zoom level " + std::to_string(L.dzi_level) + ": " + std::to_string(L.cut) + " of " +
                            std::to_string(expected) + " tiles cut");
    }
    const std::string xml =
        dzi_descriptor(geo_.width, geo_.height, geo_.tile, static_cast<int>(geo_.overlap), format_.suffix());
    out_.commit(xml);
    bytes_ += xml.size();
  }

  uint64_t bytes_written() const override { return bytes_.load(); }

 private:
  struct Worker {
    std::unique_ptr<DziTileEncoder> encoder;
  };

  void schedule(int level, Level& L, int64_t c, int64_t r) {
    Job job;
    job.level = level;
    job.col = c;
    job.row = r;
    job.rect = geo_.tile_rect(L.dzi_level, c, r);
    for (int64_t ty = L.y.need_lo[r]; ty <= L.y.need_hi[r]; ++ty)
      for (int64_t tx = L.x.need_lo[c]; tx <= L.x.need_hi[c]; ++tx) {
        auto it = L.pending.find(ty * L.pass_cols + tx);
        TW_ASSERT(it != L.pending.end());
        job.parts.emplace_back(Rect{tx * pass_tile_, ty * pass_tile_, pass_tile_, pass_tile_}, it->second.px);
        // The job holds its own reference: the pass tile goes as soon as
        // its last Deep Zoom tile is cut.
        if (--it->second.users_left == 0) L.pending.erase(it);
      }
    ++L.cut;
    queue_.push(std::move(job));
    ++waiting_;
    tasks_->run([this] { run_one(); });
  }

  // Cuts and writes one waiting tile, if any waits (the thread that helped in
  // write() may have taken this task's).
  void run_one() {
    Job job;
    if (!queue_.try_pop(job)) return;
    --waiting_;
    if (aborted_) return;
    try {
      cut_and_write(job);
    } catch (...) {
      std::lock_guard<std::mutex> lock(error_mutex_);
      if (!error_) error_ = std::current_exception();
      aborted_ = true;
    }
  }

  void cut_and_write(const Job& job) {
    const PixelFormat fmt = format_.fmt;
    const size_t bpp = fmt.bytes_per_pixel();
    Image img(fmt, job.rect);
    for (const auto& [rect, px] : job.parts) {
      const Rect in = rect.intersect(job.rect);
      const size_t stride = static_cast<size_t>(rect.w) * bpp;
      for (int64_t y = in.y; y < in.y1(); ++y)
        std::memcpy(img.ptr_bytes(in.x, y),
                    px->data() + static_cast<size_t>(y - rect.y) * stride + static_cast<size_t>(in.x - rect.x) * bpp,
                    static_cast<size_t>(in.w) * bpp);
    }
    Worker& w = workers_.local();
    std::vector<uint8_t> bytes;
    w.encoder->encode(img.view(), bytes);
    const std::string path = out_.files_dir() + "/" + std::to_string(levels_[job.level].dzi_level) + "/" +
                             std::to_string(job.col) + "_" + std::to_string(job.row) + "." + format_.suffix();
    bytes_ += bytes.size();
    files_.submit(path, std::move(bytes));
  }

  void rethrow_task_error() {
    {
      std::lock_guard<std::mutex> lock(error_mutex_);
      if (error_) std::rethrow_exception(error_);
    }
    files_.rethrow_error();
  }

  const DziTileFormat format_;
  const DziGeometry geo_;
  const int64_t pass_tile_;
  DziOutput out_;
  // Before the tasks (destroyed after them): they submit files to it.
  FileWriterPool files_{kWriterThreads, 64};
  std::vector<Level> levels_;
  const int64_t max_waiting_;
  tbb::concurrent_queue<Job> queue_;
  std::atomic<int64_t> waiting_{0};
  std::atomic<bool> aborted_{false};
  std::atomic<uint64_t> bytes_{0};
  tbb::enumerable_thread_specific<Worker> workers_;
  std::mutex error_mutex_;
  std::exception_ptr error_;
  // Waited for in the destructor before the rest goes. Held by pointer: the
  // destructor of TBB's task_group may throw, which ours must not.
  std::unique_ptr<tbb::task_group> tasks_ = std::make_unique<tbb::task_group>();
};

}  // namespace

std::unique_ptr<PyramidSink> make_dzi_sink(const SinkRequest& r) {
  return std::make_unique<DziSink>(r);
}

size_t dzi_sink_memory_bytes(const SinkRequest& r) {
  if (r.levels.empty()) return 0;
  // Per level, at most about two rows of pass tiles wait for the Deep Zoom
  // row that straddles them; the task queue adds its own (each task holds
  // up to four pass tiles, most of them waiting anyway).
  const int64_t p = std::max<int64_t>(r.encode.tile_w, 1);
  double tiles = 0;
  for (const PyramidLevelSpec& l : r.levels)
    tiles += static_cast<double>(std::min<int64_t>(2, (l.height + p - 1) / p) * ((l.width + p - 1) / p));
  tiles += 2.0 * tbb::this_task_arena::max_concurrency() + 2;
  return static_cast<size_t>(tiles * static_cast<double>(p * p * r.encode.fmt.bytes_per_pixel()));
}

}  // namespace tw
