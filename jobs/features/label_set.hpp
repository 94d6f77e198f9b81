#pragma once
// The label values whose records are written, so that a label coming back
// after its record is refused (features_job.cpp). It costs memory by the
// number of labels, not by the largest value: one object labelled 2^32 - 1
// must not take a bitmap of 512 MiB.
//
// Values below a limit that grows with the count (32 values per label held,
// so the bitmap costs at most 4 bytes a label, what a sorted array would)
// are bits: `tilewave label`, scipy and scikit-image number objects 1..N, so
// there every label is a bit, one look-up away. Larger values go to a sorted
// array (4 bytes each) fed by a small hash set that is merged in once it
// holds 1/8 of the array, so each insertion costs O(log n) amortised. When
// the bitmap grows, the values it now covers move into it.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <unordered_set>
#include <vector>

namespace tw::features {

class LabelSet {
 public:
  bool contains(uint32_t v) const {
    if (v < bit_count()) return bits_[v >> 6] >> (v & 63) & 1;
    return std::binary_search(sorted_.begin(), sorted_.end(), v) || recent_.count(v) != 0;
  }

  void insert(uint32_t v) {
    if (contains(v)) return;
    ++count_;
    const size_t word = v >> 6;
    if (word >= bits_.size()) {
      // At most doubling at a time, so that a few scattered large values
      // do not stretch the bitmap over the gap below them.
      const size_t allowed =
          std::min(std::max(kMinWords, count_ * kValuesPerLabel / 64), std::max(kMinWords, 2 * bits_.size()));
      if (word >= allowed) {
        insert_sparse(v);
        return;
      }
      grow_bits(std::min(allowed, std::max(word + 1, 2 * bits_.size())));
    }
    bits_[word] |= uint64_t{1} << (v & 63);
  }

  size_t size() const { return count_; }
  // Heap bytes held (the hash set's nodes and buckets estimated).
  size_t bytes() const {
    return bits_.capacity() * sizeof(uint64_t) + sorted_.capacity() * sizeof(uint32_t) + recent_.size() * 32 +
           recent_.bucket_count() * sizeof(void*);
  }

 private:
  static constexpr size_t kValuesPerLabel = 32;
  static constexpr size_t kMinWords = 1024;  // 64 Ki values (8 KiB) for any count
  static constexpr size_t kMinRecent = 1024;

  size_t bit_count() const { return bits_.size() * 64; }

  void insert_sparse(uint32_t v) {
    // Values arriving in increasing order (raster order of sparse labels
    // numbered in that order) append without the hash set.
    if (recent_.empty() && (sorted_.empty() || v > sorted_.back())) {
      sorted_.push_back(v);
      return;
    }
    recent_.insert(v);
    if (recent_.size() >= std::max(kMinRecent, sorted_.size() / 8)) merge_recent();
  }

  void merge_recent() {
    const size_t mid = sorted_.size();
    sorted_.insert(sorted_.end(), recent_.begin(), recent_.end());
    recent_.clear();
    std::sort(sorted_.begin() + static_cast<std::ptrdiff_t>(mid), sorted_.end());
    std::inplace_merge(sorted_.begin(), sorted_.begin() + static_cast<std::ptrdiff_t>(mid), sorted_.end());
  }

  // The bitmap covers [0, 64 * words); the values now below it move in.
  void grow_bits(size_t words) {
    bits_.resize(words, 0);
    const uint64_t limit = bit_count();
    auto set = [&](uint32_t v) { bits_[v >> 6] |= uint64_t{1} << (v & 63); };
    const auto end = std::lower_bound(sorted_.begin(), sorted_.end(), limit);
    std::for_each(sorted_.begin(), end, set);
    sorted_.erase(sorted_.begin(), end);
    if (sorted_.size() < sorted_.capacity() / 4) sorted_.shrink_to_fit();
    for (auto it = recent_.begin(); it != recent_.end();) {
      if (*it < limit) {
        set(*it);
        it = recent_.erase(it);
      } else {
        ++it;
      }
    }
  }

  std::vector<uint64_t> bits_;           // bit v: value v, for v < 64 * bits_.size()
  std::vector<uint32_t> sorted_;         // larger values, sorted
  std::unordered_set<uint32_t> recent_;  // larger values not merged into sorted_ yet
  size_t count_ = 0;
};

}  // namespace tw::features
