#pragma once
// A monotone priority queue on 64-bit keys (Ahuja, Mehlhorn, Orlin & Tarjan
// 1990, "Faster algorithms for the shortest path problem"): valid when no
// key pushed is below the last key popped — true of a Dijkstra whose
// extensions never lower a cost, as the watershed's (m, d) costs. A key
// lives in the bucket of the highest bit where it differs from the last
// popped key; a pop empties the lowest non-empty bucket into lower ones, so
// each item moves at most 64 times and mostly once or twice: several times
// faster than a binary heap on a tile's flood. Items of equal key pop in
// the order of their first payload (`a`, the watershed's label): the
// lowest key's items are sorted once when they become the lowest.
#include <algorithm>
#include <cstdint>
#include <vector>

namespace tw {

struct RadixItem {
  uint64_t key;
  uint32_t a, b;  // payload
};

class RadixHeap {
 public:
  bool empty() const { return size_ == 0; }
  void clear() {
    for (auto& b : buckets_) b.clear();
    size_ = 0;
    last_ = 0;
    sorted0_ = true;
  }
  // key >= the last key popped.
  void push(uint64_t key, uint32_t a, uint32_t b) {
    const int k = bucket(key);
    buckets_[k].push_back({key, a, b});
    if (k == 0) sorted0_ = false;
    ++size_;
  }
  // The item with the smallest key, and of those the smallest `a`.
  RadixItem pop() {
    if (buckets_[0].empty()) {
      int i = 1;
      while (buckets_[i].empty()) ++i;
      std::vector<RadixItem>& from = buckets_[i];
      uint64_t lo = from[0].key;
      for (const RadixItem& it : from) lo = it.key < lo ? it.key : lo;
      last_ = lo;
      // Every item of bucket i now differs from last_ below bit i-1.
      for (const RadixItem& it : from) buckets_[bucket(it.key)].push_back(it);
      from.clear();
      sorted0_ = false;
    }
    if (!sorted0_) {
      // Largest `a` first: pop_back takes the smallest.
      std::sort(buckets_[0].begin(), buckets_[0].end(),
                [](const RadixItem& x, const RadixItem& y) { return x.a > y.a; });
      sorted0_ = true;
    }
    const RadixItem it = buckets_[0].back();
    buckets_[0].pop_back();
    --size_;
    return it;
  }

 private:
  int bucket(uint64_t key) const { return key == last_ ? 0 : 64 - __builtin_clzll(key ^ last_); }
  std::vector<RadixItem> buckets_[65];
  uint64_t last_ = 0;
  size_t size_ = 0;
  bool sorted0_ = true;
};

}  // namespace tw
