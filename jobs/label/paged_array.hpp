#pragma once
// A large array of fixed-size records that stays within a memory budget:
// pages live in an LRU cache of `cache_bytes`, and a page evicted while
// modified goes to an anonymous scratch file (one slot per page) and comes
// back on its next use. Pages never written read as zeros. The per-component
// tables of `label` and `objects` (a record per border piece or per object)
// live here, so their memory is bounded for any number of components.
#include <cstdint>
#include <cstring>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "engine/output_file.hpp"

namespace tw {

class PagedBytes {
 public:
  // elem: bytes per record; n: records; files go beside near_path.
  PagedBytes(size_t elem, uint64_t n, size_t cache_bytes, const std::string& near_path);
  ~PagedBytes();
  PagedBytes(const PagedBytes&) = delete;
  PagedBytes& operator=(const PagedBytes&) = delete;

  uint64_t size() const { return n_; }
  // Thread-safe copies of records [i, i + count).
  void read(uint64_t i, void* dst, uint64_t count);
  void write(uint64_t i, const void* src, uint64_t count);
  // The record's bytes, valid until the next call on this array: for phases
  // where one thread alone uses the array (no lock taken).
  uint8_t* at(uint64_t i, bool dirty);
  uint64_t spills() const { return spills_; }

 private:
  struct Page {
    std::vector<uint8_t> bytes;
    bool dirty = false;
    std::list<uint64_t>::iterator lru_pos;
  };
  Page& page(uint64_t p);  // loaded and most recent
  void evict();

  size_t elem_, page_elems_, page_bytes_;
  uint64_t n_;
  size_t max_pages_;
  std::string near_;
  std::unique_ptr<ScratchFile> file_;  // made at the first spill
  std::unordered_map<uint64_t, Page> pages_;
  std::list<uint64_t> lru_;  // least recent first
  std::vector<bool> on_disk_;
  uint64_t last_ = UINT64_MAX;  // the page of the last access
  Page* last_page_ = nullptr;
  uint64_t spills_ = 0;
  std::mutex mu_;
};

template <class T>
class PagedArray {
 public:
  PagedArray(uint64_t n, size_t cache_bytes, const std::string& near_path)
      : bytes_(sizeof(T), n, cache_bytes, near_path) {}
  uint64_t size() const { return bytes_.size(); }
  void read(uint64_t i, T* dst, uint64_t count) { bytes_.read(i, dst, count); }
  void write(uint64_t i, const T* src, uint64_t count) { bytes_.write(i, src, count); }
  T get(uint64_t i) {
    T v;
    bytes_.read(i, &v, 1);
    return v;
  }
  // Single-threaded phases: a reference valid until the next access.
  T& ref(uint64_t i) { return *reinterpret_cast<T*>(bytes_.at(i, true)); }
  const T& cref(uint64_t i) { return *reinterpret_cast<const T*>(bytes_.at(i, false)); }
  uint64_t spills() const { return bytes_.spills(); }

 private:
  PagedBytes bytes_;
};

}  // namespace tw
