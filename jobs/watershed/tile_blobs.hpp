#pragma once
// The watershed's per-tile storage, in proportion to the mask: a tile keeps
// only its mask pixels, as runs along its rows, each pixel with its altitude
// key (1, 2 or 4 bytes), a seed flag and its label (4 bytes) — about 6 to 9
// bytes a mask pixel plus 8 a run, where a raster of the tile would take 6
// to 9 bytes a pixel of the tile (a nuclei mask covers ~12% of a slide).
// Tiles are byte blobs of a fixed size in an LRU cache under a budget,
// spilled to a scratch file beyond it (one slot per tile, written again in
// place) and read back on use.
#include <cstdint>
#include <cstring>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "engine/output_file.hpp"

namespace tw {

// A view of one tile's blob. Layout: n_runs, n_px (u32 each); per row y of
// the tile the first run of the row (h + 1 u32); per run its first pixel's
// index in the pixel arrays (u32); the labels (u32 per pixel); per run its x
// and length (u16 each); the keys (key_bytes per pixel); the seed flags (one
// byte per pixel).
struct TileBlob {
  uint32_t n_runs = 0, n_px = 0;
  uint32_t* row_run = nullptr;  // h + 1
  uint32_t* run_px = nullptr;
  uint32_t* labels = nullptr;
  uint16_t* run_x = nullptr;
  uint16_t* run_len = nullptr;
  uint8_t* keys = nullptr;
  uint8_t* seed = nullptr;
  int key_bytes = 1;

  static size_t bytes_for(int64_t h, size_t n_runs, size_t n_px, int key_bytes) {
    return 8 + 4 * static_cast<size_t>(h + 1) + 4 * n_runs + 4 * n_px + 4 * n_runs +
           (static_cast<size_t>(key_bytes) + 1) * n_px;
  }
  // Over bytes laid out for a tile of h rows (n_runs and n_px are read from
  // them; `init` writes them first).
  static TileBlob over(uint8_t* p, int64_t h, int key_bytes, bool init = false, uint32_t n_runs = 0,
                       uint32_t n_px = 0) {
    TileBlob b;
    if (init) std::memcpy(p, &n_runs, 4), std::memcpy(p + 4, &n_px, 4);
    std::memcpy(&b.n_runs, p, 4), std::memcpy(&b.n_px, p + 4, 4);
    b.key_bytes = key_bytes;
    size_t at = 8;
    b.row_run = reinterpret_cast<uint32_t*>(p + at), at += 4 * static_cast<size_t>(h + 1);
    b.run_px = reinterpret_cast<uint32_t*>(p + at), at += 4 * size_t{b.n_runs};
    b.labels = reinterpret_cast<uint32_t*>(p + at), at += 4 * size_t{b.n_px};
    b.run_x = reinterpret_cast<uint16_t*>(p + at), at += 2 * size_t{b.n_runs};
    b.run_len = reinterpret_cast<uint16_t*>(p + at), at += 2 * size_t{b.n_runs};
    b.keys = p + at, at += static_cast<size_t>(key_bytes) * b.n_px;
    b.seed = p + at;
    return b;
  }
  uint32_t key(uint32_t i) const {
    uint32_t k = 0;
    std::memcpy(&k, keys + static_cast<size_t>(i) * key_bytes, static_cast<size_t>(key_bytes));  // little-endian
    return k;
  }
  void set_key(uint32_t i, uint32_t k) {
    std::memcpy(keys + static_cast<size_t>(i) * key_bytes, &k, static_cast<size_t>(key_bytes));
  }
};

class BlobStore {
 public:
  BlobStore(int64_t count, size_t budget, const std::string& near_path);
  BlobStore(const BlobStore&) = delete;
  BlobStore& operator=(const BlobStore&) = delete;

  class Pin {
   public:
    Pin() = default;
    Pin(Pin&& o) noexcept : store_(o.store_), t_(o.t_) { o.store_ = nullptr; }
    Pin& operator=(Pin&& o) noexcept;
    Pin(const Pin&) = delete;
    Pin& operator=(const Pin&) = delete;
    ~Pin();
    uint8_t* data() const;
    void mark_dirty();  // changed: written back if evicted

   private:
    friend class BlobStore;
    Pin(BlobStore* s, int64_t t) : store_(s), t_(t) {}
    BlobStore* store_ = nullptr;
    int64_t t_ = -1;
  };

  // A new blob for tile t (which has none), pinned and dirty.
  Pin put(int64_t t, std::vector<uint8_t> bytes);
  // Tile t's blob (read back if spilled); t must have one. Thread-safe.
  Pin acquire(int64_t t);
  bool has(int64_t t) const { return entries_[static_cast<size_t>(t)].size > 0; }
  // Forgets tile t's blob (unpinned; its slot in the scratch file is left unused).
  void drop(int64_t t);
  void set_budget(size_t bytes);

  struct Stats {
    uint64_t spills = 0, loads = 0;    // blobs written to / read from the scratch file
    size_t peak_bytes = 0, bytes = 0;  // most held in memory at once; the blobs' size (dropped ones not)
  };
  Stats stats() const;

 private:
  struct Entry {
    std::vector<uint8_t> bytes;  // empty while on disk (or none)
    size_t size = 0;             // 0: no blob
    uint64_t slot = ~uint64_t{0};
    int pins = 0;
    bool dirty = false, in_lru = false;
    std::list<int64_t>::iterator lru_pos;
  };
  void release(int64_t t);
  // Drops least recently used blobs until the budget holds; true if any went.
  bool evict_locked();
  static void after_eviction(bool evicted);

  std::vector<Entry> entries_;
  std::list<int64_t> lru_;  // unpinned resident blobs, least recently used first
  mutable std::mutex mu_;
  size_t budget_, held_ = 0;
  uint64_t file_end_ = 0;
  std::string near_;
  std::unique_ptr<ScratchFile> file_;  // made at the first spill
  Stats stats_;
};

}  // namespace tw
