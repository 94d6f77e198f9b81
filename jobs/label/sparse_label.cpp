#include "jobs/label/sparse_label.hpp"

#include <tbb/parallel_for.h>
#include <tbb/parallel_sort.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <numeric>
#include <string>
#include <vector>

#include "engine/error.hpp"
#include "engine/geometry.hpp"

namespace tw {
namespace {

// The labels, pixel by pixel: `index` (y * width + x, ascending) and the
// label of each.
class SparseLabelSource final : public TileSource {
 public:
  SparseLabelSource(std::vector<uint64_t> index, std::vector<uint32_t> label, int64_t w, int64_t h,
                    const SourceInfo& like)
      : index_(std::move(index)), label_(std::move(label)), w_(w) {
    info_.path = "labels (sparse)";
    info_.format = "computed";
    info_.fmt = PixelFormat{SampleType::kU32, 1};
    info_.mpp_x = like.mpp_x, info_.mpp_y = like.mpp_y;
    LevelInfo li;
    li.width = w, li.height = h;
    li.compression = "none (computed)";
    info_.levels.push_back(li);
  }

 protected:
  void read_inside(int, const ImageView& dst) const override {
    const Rect& r = dst.rect;
    for (int64_t y = r.y; y < r.y1(); ++y) {
      uint32_t* row = dst.ptr<uint32_t>(r.x, y);
      std::fill(row, row + r.w, 0u);
      const uint64_t first = static_cast<uint64_t>(y * w_ + r.x), end = first + static_cast<uint64_t>(r.w);
      for (auto it = std::lower_bound(index_.begin(), index_.end(), first); it != index_.end() && *it < end; ++it)
        row[*it - first] = label_[static_cast<size_t>(it - index_.begin())];
    }
  }

 private:
  std::vector<uint64_t> index_;
  std::vector<uint32_t> label_;
  int64_t w_;
};

// The indices (first + x) of a row's set pixels, skipping zeros eight at a
// time: markers are a small share of a slide's pixels.
void append_set_pixels(const uint8_t* row, int64_t w, uint64_t first, std::vector<uint64_t>& out) {
  int64_t x = 0;
  while (x < w) {
    if (x + 8 <= w) {
      uint64_t word;
      std::memcpy(&word, row + x, 8);
      if (word == 0) {
        x += 8;
        continue;
      }
    }
    const int64_t end = std::min(x + 8, w);
    for (; x < end; ++x)
      if (row[x]) out.push_back(first + static_cast<uint64_t>(x));
  }
}

uint32_t find(std::vector<uint32_t>& parent, uint32_t i) {
  while (parent[i] != i) i = parent[i] = parent[parent[i]];  // path halving
  return i;
}

void join(std::vector<uint32_t>& parent, uint32_t a, uint32_t b) {
  a = find(parent, a), b = find(parent, b);
  if (a != b) parent[std::max(a, b)] = std::min(a, b);
}

}  // namespace

std::shared_ptr<const TileSource> label_sparse(const TileSource& mask, int connectivity, int64_t tile,
                                               size_t max_pixels, LabelStats* stats) {
  if (connectivity != 4 && connectivity != 8) throw InputError("--connectivity must be 4 or 8");
  if (mask.info().fmt != kGray8) return nullptr;
  const auto t0 = std::chrono::steady_clock::now();
  const int64_t W = mask.level(0).width, H = mask.level(0).height;
  if (tile < 16) tile = 16;
  const TileGrid grid{W, H, tile, tile};
  // The set pixels of every tile, each tile's in raster order within it.
  std::vector<std::vector<uint64_t>> found(static_cast<size_t>(grid.count()));
  std::atomic<size_t> total{0};
  std::atomic<bool> too_many{false};
  tbb::parallel_for(int64_t{0}, grid.count(), [&](int64_t t) {
    if (too_many.load(std::memory_order_relaxed)) return;
    const Rect r = grid.tile_rect(t % grid.cols(), t / grid.cols());
    const Image img = mask.read(0, r);
    std::vector<uint64_t>& mine = found[static_cast<size_t>(t)];
    // Checked row by row, so that a dense tile (up to 16384^2 pixels) stops
    // long before its list outgrows the limit; added to the shared count
    // only in batches (a fetch_add a row, on 16 threads, made this scan 14%
    // of the CPU of a 2-GP nuclei run's steps on the H200).
    size_t unshared = 0;
    for (int64_t y = r.y; y < r.y1(); ++y) {
      const uint8_t* row = img.row<uint8_t>(y);
      const size_t before = mine.size();
      append_set_pixels(row, r.w, static_cast<uint64_t>(y * W + r.x), mine);
      unshared += mine.size() - before;
      if (unshared >= 4096 || y + 1 == r.y1()) {
        if (unshared && total.fetch_add(unshared) + unshared > max_pixels) return too_many.store(true);
        unshared = 0;
      } else if (total.load(std::memory_order_relaxed) + unshared > max_pixels) {
        return too_many.store(true);
      }
    }
  });
  if (too_many) return nullptr;
  std::vector<uint64_t> index;
  index.reserve(total.load());
  for (auto& f : found) {
    index.insert(index.end(), f.begin(), f.end());
    f = std::vector<uint64_t>();
  }
  tbb::parallel_sort(index.begin(), index.end());
  const size_t n = index.size();
  if (n >= (size_t{1} << 32) - 1)
    throw InputError("more than 4294967294 marker pixels");  // unreachable under any budget

  // Union-find in raster order: each pixel joins its set neighbours to the
  // left and in the row above (found with a pointer that only moves on).
  std::vector<uint32_t> parent(n);
  std::iota(parent.begin(), parent.end(), 0u);
  size_t above = 0;
  for (size_t i = 0; i < n; ++i) {
    const int64_t y = static_cast<int64_t>(index[i] / static_cast<uint64_t>(W));
    const int64_t x = static_cast<int64_t>(index[i] % static_cast<uint64_t>(W));
    if (x > 0 && i > 0 && index[i - 1] == index[i] - 1)
      join(parent, static_cast<uint32_t>(i - 1), static_cast<uint32_t>(i));
    if (y == 0) continue;
    const int64_t x0 = connectivity == 8 ? std::max<int64_t>(0, x - 1) : x;
    const int64_t x1 = connectivity == 8 ? std::min<int64_t>(W - 1, x + 1) : x;
    const uint64_t lo = static_cast<uint64_t>((y - 1) * W + x0), hi = static_cast<uint64_t>((y - 1) * W + x1);
    while (above < i && index[above] < lo) ++above;
    for (size_t j = above; j < i && index[j] <= hi; ++j)
      join(parent, static_cast<uint32_t>(j), static_cast<uint32_t>(i));
  }
  // Numbers in raster order of each component's first pixel: the first of
  // its pixels met in this order.
  std::vector<uint32_t> label(n, 0);
  std::vector<uint32_t> number(n, 0);  // by root
  uint32_t count = 0;
  for (size_t i = 0; i < n; ++i) {
    const uint32_t r = find(parent, static_cast<uint32_t>(i));
    if (number[r] == 0) number[r] = ++count;
    label[i] = number[r];
  }
  if (stats) {
    *stats = LabelStats{};
    stats->components = stats->found = count;
    stats->tiles = grid.count();
    stats->tile = tile;
    stats->seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
  return std::make_shared<SparseLabelSource>(std::move(index), std::move(label), W, H, mask.info());
}

}  // namespace tw
