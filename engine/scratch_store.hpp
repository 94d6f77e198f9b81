#pragma once
// An out-of-core raster of fixed-size tiles: the working image of wavefront
// ops. Tiles live in an LRU cache under a byte budget; a tile evicted while
// modified is written to a scratch file (one slot per tile) and read back on
// its next use. Readable as a TileSource (one level), so results go straight
// to the pyramid writer.
#include <condition_variable>
#include <exception>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include "engine/output_file.hpp"
#include "engine/tile_source.hpp"

namespace tw {

class ScratchStore : public TileSource {
 public:
  // Files are created beside near_path. cache_bytes: budget for tiles held in memory.
  ScratchStore(PixelFormat fmt, int64_t width, int64_t height, int64_t tile, size_t cache_bytes,
               const std::string& near_path, std::string name = "scratch");
  ~ScratchStore() override;

  const TileGrid& grid() const { return grid_; }
  size_t tile_bytes() const;
  // What every tile takes in memory: the most a cache can use.
  size_t full_bytes() const { return tile_bytes() * static_cast<size_t>(grid_.count()); }

  // A tile held in memory for use; unpinned (and evictable) on destruction.
  // Its image is the full tile rect (tile_full_rect), whatever the edge.
  class Pin {
   public:
    Pin() = default;
    Pin(Pin&& o) noexcept;
    Pin& operator=(Pin&& o) noexcept;
    Pin(const Pin&) = delete;
    Pin& operator=(const Pin&) = delete;
    ~Pin();
    Image& image() const;
    void mark_dirty();  // the tile changed: keep it (in memory or on disk)

   private:
    friend class ScratchStore;
    ScratchStore* store_ = nullptr;
    int64_t index_ = -1;
    void* entry_ = nullptr;
  };
  // Thread-safe. A tile never written reads as zeros, unless the caller says
  // it will overwrite the whole tile first (`overwrite`): then a fresh tile
  // is not cleared (for GPU-sized tiles the clearing, under the store's lock,
  // cost more than the loading that follows it).
  Pin acquire(int64_t tx, int64_t ty, bool overwrite = false);

  // Changes the memory budget (evicting down to it).
  void set_cache_bytes(size_t n);

  struct Stats {
    uint64_t loads = 0, spills = 0;  // tiles read back from / written to disk
    size_t peak_bytes = 0;           // most tile memory held at once
  };
  Stats stats() const;

 protected:
  void read_inside(int level, const ImageView& dst) const override;

 private:
  struct Entry;
  void release(int64_t index) noexcept;
  void unpin_locked(int64_t index, Entry& e);  // with mu_ held
  // Evicts down to the budget; called with l holding mu_, which it lets go
  // while dirty tiles are written and takes again.
  void evict_and_write(std::unique_lock<std::mutex>& l);
  void write_slot(int64_t index, const Image& img) const;
  void read_slot(int64_t index, Image& img) const;

  TileGrid grid_;
  PixelFormat fmt_;
  size_t cache_bytes_;
  ScratchFile file_;
  int fd_ = -1;
  mutable std::mutex mu_;
  std::condition_variable io_done_;      // a tile's disk transfer finished
  std::unordered_set<int64_t> writing_;  // evicted tiles still being written
  std::exception_ptr failed_;            // a spill that failed in release()
  std::unordered_map<int64_t, std::unique_ptr<Entry>> entries_;
  std::list<int64_t> lru_;  // unpinned entries, least recently used first
  std::vector<uint8_t> on_disk_;
  size_t held_ = 0;
  // Buffers of evicted tiles, reused for the next tiles loaded: all tiles
  // have one size, and freeing and allocating them from many threads let
  // glibc's per-thread heaps grow to twice the budget.
  std::vector<Image> spare_;
  Stats stats_;
};

}  // namespace tw
