// Per tile: a Dijkstra on (m, d, label) from the tile's seeds and its halo,
// from scratch on every visit (watershed.hpp says why), on a monotone radix
// heap keyed by (m, d) whose ties pop by label. A stale entry (its pixel
// since got a cheaper offer) is skipped when popped.
// The one-pixel halo holds the neighbours' values: sources, never updated
// (the wavefront engine re-queues a neighbour whose edge changed).
#include <cstring>
#include <vector>

#include "engine/error.hpp"
#include "kernels/watershed/radix_heap.hpp"
#include "kernels/watershed/watershed.hpp"

namespace tw {
namespace {

uint64_t heap_key(const WsCost& c) {
  return (uint64_t{c.m} << 32) | c.d;
}

constexpr int kDx[8] = {1, -1, 0, 0, 1, 1, -1, -1};  // the 4-neighbours first
constexpr int kDy[8] = {0, 0, 1, -1, 1, -1, 1, -1};

// N: the connectivity, a template parameter so that the neighbour loop
// unrolls. Pixels are addressed by base pointer and byte stride (no row
// tables), and a queued pixel by its column and row in the grown tile, 16
// bits each (no division by the width on every pop).
template <int N>
class Flood {
 public:
  Flood(const ImageView& j, const ImageView& i, const Rect& core, RadixHeap& heap, const uint8_t* in_region = nullptr)
      : w_(core.w),
        h_(core.h),
        jbase_(reinterpret_cast<uint8_t*>(j.ptr<WsCost>(core.x - 1, core.y - 1))),
        jstride_(static_cast<int64_t>(j.stride)),
        ibase_(reinterpret_cast<const uint8_t*>(i.ptr<WsInput>(core.x, core.y))),
        istride_(static_cast<int64_t>(i.stride)),
        heap_(heap),
        in_region_(in_region) {
    heap_.clear();
  }

  // Rows -1 .. h (the halo's at -1 and h; columns -1 and w likewise).
  WsCost& at(int64_t x, int64_t y) {
    return *reinterpret_cast<WsCost*>(jbase_ + (y + 1) * jstride_ + (x + 1) * int64_t{sizeof(WsCost)});
  }
  const WsInput& input(int64_t x, int64_t y) const {
    return *reinterpret_cast<const WsInput*>(ibase_ + y * istride_ + x * int64_t{sizeof(WsInput)});
  }

  // The core from scratch: seeds set and queued, every other pixel
  // unreached until a path comes; the halo's reached pixels queued as
  // sources (never updated), so that their offers arrive in cost order too.
  void start() {
    for (int64_t y = 0; y < h_; ++y)
      for (int64_t x = 0; x < w_; ++x) reset(x, y);
    sources();
  }
  // Only the listed pixels (indices y * w + x) from scratch; the rest of
  // the core is neither read nor written.
  void start(const std::vector<uint32_t>& region) {
    const uint32_t w = static_cast<uint32_t>(w_);
    for (const uint32_t k : region) reset(k % w, k / w);
    sources();
  }

  void sources() {
    auto source = [&](int64_t x, int64_t y) {
      const WsCost& c = at(x, y);
      if (c.m != kWsUnreached) push(c, x, y);
    };
    for (int64_t x = -1; x <= w_; ++x) source(x, -1), source(x, h_);
    for (int64_t y = 0; y < h_; ++y) source(-1, y), source(w_, y);
  }

  // Pops in (m, d, label) order: a pixel's first valid pop is final, and
  // its first offer of the lowest (m, d) came from the cheapest neighbour.
  void run() {
    while (!heap_.empty()) {
      const RadixItem it = heap_.pop();
      const int64_t x = static_cast<int64_t>(it.b & 0xFFFFu) - 1, y = static_cast<int64_t>(it.b >> 16) - 1;
      const WsCost c = at(x, y);
      if (heap_key(c) != it.key || c.label != it.a) continue;  // stale (a core pixel offered less since)
      if (x > 0 && x < w_ - 1 && y > 0 && y < h_ - 1) {
#pragma GCC unroll 8
        for (int k = 0; k < N; ++k) relax(c, x + kDx[k], y + kDy[k]);
      } else {
        for (int k = 0; k < N; ++k) {
          const int64_t nx = x + kDx[k], ny = y + kDy[k];
          if (nx >= 0 && nx < w_ && ny >= 0 && ny < h_) relax(c, nx, ny);
        }
      }
    }
  }

 private:
  void reset(int64_t x, int64_t y) {
    const WsInput& in = input(x, y);
    WsCost& c = at(x, y);
    if (in.inside && in.seed) {
      c = WsCost{in.key, 0, in.seed};
      push(c, x, y);
    } else {
      c = kWsNeutral;
    }
  }

  void push(const WsCost& c, int64_t x, int64_t y) {
    heap_.push(heap_key(c), c.label, static_cast<uint32_t>(y + 1) << 16 | static_cast<uint32_t>(x + 1));
  }

  // An offer replaces the pixel's only when strictly cheaper in (m, d): of
  // equal offers the first, from the neighbour popped first, stands.
  void relax(const WsCost& from, int64_t x, int64_t y) {
    if (in_region_ && !in_region_[y * w_ + x]) return;
    const WsInput& in = input(x, y);
    if (!in.inside || in.seed) return;  // seeds keep their own label
    const WsCost n = ws_extend(from, in.key);
    WsCost& cur = at(x, y);
    if (!ws_cheaper(n, cur)) return;
    cur = n;
    push(n, x, y);
  }

  int64_t w_, h_;
  uint8_t* jbase_;
  int64_t jstride_;
  const uint8_t* ibase_;
  int64_t istride_;
  RadixHeap& heap_;
  const uint8_t* in_region_;
};

// Runs fn(flood) on a Flood of the connectivity asked for.
template <class Fn>
void with_flood(const ImageView& j, const ImageView& i, const Rect& core, int connectivity, RadixHeap& heap,
                const uint8_t* in_region, Fn&& fn) {
  if (connectivity == 8) {
    Flood<8> f(j, i, core, heap, in_region);
    fn(f);
  } else {
    Flood<4> f(j, i, core, heap, in_region);
    fn(f);
  }
}

class Rule : public TilePropagator {
 public:
  explicit Rule(int connectivity) : connectivity_(connectivity) {}

  void neutral(uint8_t* px) const override { std::memcpy(px, &kWsNeutral, sizeof kWsNeutral); }

  // Whether `from` is, or may become, one of q's cheapest offers: then its
  // label may matter, not only its cost. At equal cost too: the neighbour
  // may be flooding with an older value of ours right now, and its (m, d)
  // only falls, so an offer dearer than its published cost can never count.
  bool can_propagate(const uint8_t* from, const uint8_t* j, const uint8_t* i) const override {
    WsCost f, q;
    WsInput in;
    std::memcpy(&f, from, sizeof f), std::memcpy(&q, j, sizeof q), std::memcpy(&in, i, sizeof in);
    return f.m != kWsUnreached && in.inside && !in.seed && !ws_cheaper(q, ws_extend(f, in.key));
  }

  bool propagate(const ImageView& j, const ImageView& i, const Rect& core) const override {
    return watershed_flood_tile(j, i, core, connectivity_);
  }

 private:
  int connectivity_;
};

}  // namespace

bool watershed_flood_tile(const ImageView& j, const ImageView& i, const Rect& core, int connectivity) {
  TW_ASSERT(j.fmt.bytes_per_pixel() == sizeof(WsCost) && i.fmt.bytes_per_pixel() == sizeof(WsInput));
  TW_ASSERT(core.w <= kWsTileMax && core.h <= kWsTileMax);
  // Per thread, reused: the heap's buckets and the copy of the old core keep
  // their capacity.
  thread_local RadixHeap heap;
  thread_local std::vector<WsCost> before;
  const size_t row = static_cast<size_t>(core.w) * sizeof(WsCost);
  before.resize(static_cast<size_t>(core.w * core.h));
  for (int64_t y = 0; y < core.h; ++y) std::memcpy(before.data() + y * core.w, j.ptr<WsCost>(core.x, core.y + y), row);
  with_flood(j, i, core, connectivity, heap, nullptr, [](auto& f) {
    f.start();
    f.run();
  });
  for (int64_t y = 0; y < core.h; ++y)
    if (std::memcmp(before.data() + y * core.w, j.ptr<WsCost>(core.x, core.y + y), row) != 0) return true;
  return false;
}

void watershed_flood_region(const ImageView& j, const ImageView& i, const Rect& core, int connectivity,
                            const std::vector<uint32_t>& region, const uint8_t* in_region) {
  TW_ASSERT(j.fmt.bytes_per_pixel() == sizeof(WsCost) && i.fmt.bytes_per_pixel() == sizeof(WsInput));
  TW_ASSERT(core.w <= kWsTileMax && core.h <= kWsTileMax);
  thread_local RadixHeap heap;
  with_flood(j, i, core, connectivity, heap, in_region, [&](auto& f) {
    f.start(region);
    f.run();
  });
}

std::unique_ptr<TilePropagator> make_watershed_rule(int connectivity) {
  if (connectivity != 4 && connectivity != 8) throw InputError("--connectivity must be 4 or 8");
  return std::make_unique<Rule>(connectivity);
}

}  // namespace tw
