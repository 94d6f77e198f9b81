// Per tile: Vincent's hybrid algorithm — a raster scan and an anti-raster
// scan carry values along the scan order (most of the work in one pass each),
// then a FIFO of pixels that can still grow a neighbour finishes the job. The
// one-pixel halo around the tile holds the neighbours' values: a source, never
// updated (the engine re-queues a neighbour whose edge changed).
#include <algorithm>
#include <cstring>
#include <limits>
#include <type_traits>
#include <vector>

#include "engine/error.hpp"
#include "engine/ops/clones.hpp"
#include "kernels/reconstruct/binary_tile.hpp"
#include "kernels/reconstruct/reconstruct.hpp"

namespace tw {
namespace {

// A row (r; u and d the rows above and below, each with its halo at index
// -1 and w; m the mask) as one step of dilation makes it, into out, and how
// many of its pixels that changes: the common case of the sparse path below
// (8-bit, by dilation: Canny's hysteresis, h-domes), kept out of the template
// so that it gets the AVX2/AVX-512 clones.
TW_CLONES int64_t settle_u8_dilation(const uint8_t* __restrict u, const uint8_t* __restrict r,
                                     const uint8_t* __restrict d, const uint8_t* __restrict m, uint8_t* __restrict out,
                                     int64_t w, bool eight) {
  int64_t n = 0;
  if (eight) {
    for (int64_t x = 0; x < w; ++x) {
      uint8_t v = std::max(std::max(std::max(r[x - 1], r[x]), std::max(r[x + 1], u[x])), d[x]);
      v = std::min(std::max(std::max(v, std::max(u[x - 1], u[x + 1])), std::max(d[x - 1], d[x + 1])), m[x]);
      out[x] = v;
      n += v != r[x];
    }
  } else {
    for (int64_t x = 0; x < w; ++x) {
      const uint8_t v = std::min(std::max(std::max(std::max(r[x - 1], r[x]), std::max(r[x + 1], u[x])), d[x]), m[x]);
      out[x] = v;
      n += v != r[x];
    }
  }
  return n;
}

// Dilation grows values (max), erosion shrinks them (min): one algorithm with
// the order flipped.
template <class T, bool kDilate>
struct Order {
  static bool before(T a, T b) { return kDilate ? a < b : a > b; }  // a is "behind" b
  static T ahead(T a, T b) { return before(a, b) ? b : a; }         // max for dilation
  static T limit(T a, T b) { return before(a, b) ? a : b; }         // min for dilation
  static T neutral() { return kDilate ? std::numeric_limits<T>::min() : std::numeric_limits<T>::max(); }
};

template <class T, bool kDilate, bool kEight>
class Rule : public TilePropagator {
 public:
  using O = Order<T, kDilate>;

  void neutral(uint8_t* px) const override {
    const T v = O::neutral();
    std::memcpy(px, &v, sizeof v);
  }

  bool can_propagate(const uint8_t* from, const uint8_t* j, const uint8_t* i) const override {
    T f, q, m;
    std::memcpy(&f, from, sizeof f), std::memcpy(&q, j, sizeof q), std::memcpy(&m, i, sizeof m);
    return O::before(q, f) && q != m;
  }

  bool propagate(const ImageView& jv, const ImageView& iv, const Rect& core) const override {
    // Binary tiles (0 and the maximum only) go on bit rows; a tile that
    // outlasts their passes finishes here, from where they left it.
    bool bits_changed = false;
    if (propagate_binary_tile<T>(jv, iv, core, kDilate, kEight, bits_changed)) return bits_changed;
    return propagate_bytes(jv, iv, core) || bits_changed;
  }

 private:
  bool propagate_bytes(const ImageView& jv, const ImageView& iv, const Rect& core) const {
    const int64_t w = core.w, h = core.h;
    // Row pointers into the halo buffer (rows -1 .. h, pointing at column 0
    // of the core, so index -1 and w are the halo) and into the mask.
    std::vector<T*> jr(static_cast<size_t>(h + 2));
    for (int64_t y = -1; y <= h; ++y) jr[static_cast<size_t>(y + 1)] = jv.ptr<T>(core.x, core.y + y);
    std::vector<const T*> ir(static_cast<size_t>(h));
    for (int64_t y = 0; y < h; ++y) ir[static_cast<size_t>(y)] = iv.ptr<T>(core.x, core.y + y);
    auto row = [&](int64_t y) { return jr[static_cast<size_t>(y + 1)]; };
    bool changed = false;
    std::vector<std::pair<int32_t, int32_t>>& fifo = queue();
    fifo.clear();

    // What every pixel would become from its neighbours as they stand.
    auto settle = [&](int64_t y, int64_t x) {
      const T* r = row(y);
      const T* u = row(y - 1);
      const T* d = row(y + 1);
      T v = O::ahead(O::ahead(r[x], r[x - 1]), O::ahead(r[x + 1], O::ahead(u[x], d[x])));
      if (kEight) v = O::ahead(v, O::ahead(O::ahead(u[x - 1], u[x + 1]), O::ahead(d[x - 1], d[x + 1])));
      return O::limit(v, ir[static_cast<size_t>(y)][x]);
    };
    // Sparse propagation (hysteresis from a few strong edges, a marker of
    // isolated seeds): when few pixels can change at all, a FIFO seeded with
    // just those beats two full raster scans. The count is a read-only pass
    // the compiler vectorises.
    std::vector<int64_t> unstable(static_cast<size_t>(h), 0);
    int64_t total = 0;
    for (int64_t y = 0; y < h; ++y) {
      const T* r = row(y);
      int64_t n = 0;
      if constexpr (std::is_same_v<T, uint8_t> && kDilate)
        n = settle_u8_dilation(row(y - 1), r, row(y + 1), ir[static_cast<size_t>(y)], settled(w), w, kEight);
      else
        for (int64_t x = 0; x < w; ++x) n += settle(y, x) != r[x];
      unstable[static_cast<size_t>(y)] = n;
      total += n;
    }
    if (total == 0) return false;
    if (total * 16 < w * h) {
      for (int64_t y = 0; y < h; ++y) {
        if (!unstable[static_cast<size_t>(y)]) continue;
        T* r = row(y);
        if constexpr (std::is_same_v<T, uint8_t> && kDilate) {
          // The row settled at once (from its neighbours as they stand now),
          // then only the pixels that moved, found eight at a time.
          uint8_t* v = settled(w);
          settle_u8_dilation(row(y - 1), r, row(y + 1), ir[static_cast<size_t>(y)], v, w, kEight);
          for (int64_t x0 = 0; x0 < w; x0 += 8) {
            const int64_t n = std::min<int64_t>(8, w - x0);
            if (std::memcmp(v + x0, r + x0, static_cast<size_t>(n)) == 0) continue;
            for (int64_t x = x0; x < x0 + n; ++x)
              if (v[x] != r[x]) r[x] = v[x], fifo.emplace_back(static_cast<int32_t>(x), static_cast<int32_t>(y));
          }
        } else {
          for (int64_t x = 0; x < w; ++x) {
            const T v = settle(y, x);
            if (v != r[x]) r[x] = v, fifo.emplace_back(static_cast<int32_t>(x), static_cast<int32_t>(y));
          }
        }
      }
      drain(fifo, w, h, row, ir);
      return true;
    }

    // Raster scan: neighbours above and to the left.
    for (int64_t y = 0; y < h; ++y) {
      T* r = row(y);
      const T* u = row(y - 1);
      const T* m = ir[static_cast<size_t>(y)];
      for (int64_t x = 0; x < w; ++x) {
        T v = O::ahead(r[x], r[x - 1]);
        v = O::ahead(v, u[x]);
        if (kEight) v = O::ahead(O::ahead(v, u[x - 1]), u[x + 1]);
        v = O::limit(v, m[x]);
        if (v != r[x]) r[x] = v, changed = true;
      }
    }
    // Anti-raster scan: neighbours below and to the right; pixels that could
    // still grow a neighbour there seed the queue.
    for (int64_t y = h - 1; y >= 0; --y) {
      T* r = row(y);
      const T* d = row(y + 1);
      const T* m = ir[static_cast<size_t>(y)];
      const T* md = y + 1 < h ? ir[static_cast<size_t>(y + 1)] : nullptr;
      for (int64_t x = w - 1; x >= 0; --x) {
        T v = O::ahead(r[x], r[x + 1]);
        v = O::ahead(v, d[x]);
        if (kEight) v = O::ahead(O::ahead(v, d[x - 1]), d[x + 1]);
        v = O::limit(v, m[x]);
        if (v != r[x]) r[x] = v, changed = true;
        bool seed = x + 1 < w && O::before(r[x + 1], v) && O::before(r[x + 1], m[x + 1]);
        if (md) {
          seed = seed || (O::before(d[x], v) && O::before(d[x], md[x]));
          if (kEight) {
            seed = seed || (x + 1 < w && O::before(d[x + 1], v) && O::before(d[x + 1], md[x + 1]));
            seed = seed || (x > 0 && O::before(d[x - 1], v) && O::before(d[x - 1], md[x - 1]));
          }
        }
        if (seed) fifo.emplace_back(static_cast<int32_t>(x), static_cast<int32_t>(y));
      }
    }
    if (drain(fifo, w, h, row, ir)) changed = true;
    return changed;
  }

  // FIFO propagation, inside the core only: each queued pixel grows its
  // neighbours, which are queued in turn. Returns whether anything changed.
  template <class RowFn>
  static bool drain(std::vector<std::pair<int32_t, int32_t>>& fifo, int64_t w, int64_t h, RowFn&& row,
                    const std::vector<const T*>& ir) {
    bool changed = false;
    static constexpr int kDx[8] = {-1, 1, 0, 0, -1, 1, -1, 1};
    static constexpr int kDy[8] = {0, 0, -1, 1, -1, -1, 1, 1};
    const int nn = kEight ? 8 : 4;
    for (size_t head = 0; head < fifo.size(); ++head) {
      const int64_t px = fifo[head].first, py = fifo[head].second;
      const T v = row(py)[px];
      for (int k = 0; k < nn; ++k) {
        const int64_t qx = px + kDx[k], qy = py + kDy[k];
        if (qx < 0 || qy < 0 || qx >= w || qy >= h) continue;
        T& q = row(qy)[qx];
        const T mq = ir[static_cast<size_t>(qy)][qx];
        if (O::before(q, v) && q != mq) {
          q = O::limit(v, mq);
          changed = true;
          fifo.emplace_back(static_cast<int32_t>(qx), static_cast<int32_t>(qy));
        }
      }
      // Keep the queue's memory bounded on long runs.
      if (head > (size_t{1} << 20) && head * 2 > fifo.size()) {
        fifo.erase(fifo.begin(), fifo.begin() + static_cast<long>(head) + 1);
        head = static_cast<size_t>(-1);
      }
    }
    return changed;
  }

  // A row of scratch for settle_u8_dilation, per thread.
  static uint8_t* settled(int64_t w) {
    thread_local std::vector<uint8_t> row;
    if (row.size() < static_cast<size_t>(w)) row.resize(static_cast<size_t>(w));
    return row.data();
  }

  static std::vector<std::pair<int32_t, int32_t>>& queue() {
    thread_local std::vector<std::pair<int32_t, int32_t>> q;
    return q;
  }
};

template <class T>
std::unique_ptr<TilePropagator> make_typed(const ReconstructParams& p) {
  const bool dil = p.method == ReconstructMethod::kDilation, eight = p.connectivity == 8;
  if (dil && eight) return std::make_unique<Rule<T, true, true>>();
  if (dil) return std::make_unique<Rule<T, true, false>>();
  if (eight) return std::make_unique<Rule<T, false, true>>();
  return std::make_unique<Rule<T, false, false>>();
}

}  // namespace

ReconstructMethod parse_reconstruct_method(const std::string& s) {
  if (s == "dilation") return ReconstructMethod::kDilation;
  if (s == "erosion") return ReconstructMethod::kErosion;
  throw InputError("unknown reconstruction method '" + s + "' (expected dilation or erosion)");
}

void ReconstructParams::validate() const {
  if (connectivity != 4 && connectivity != 8)
    throw InputError("connectivity must be 4 or 8, not " + std::to_string(connectivity));
}

std::unique_ptr<TilePropagator> make_reconstruct_rule(PixelFormat fmt, const ReconstructParams& p) {
  p.validate();
  if (fmt.channels != 1)
    throw InputError("reconstruction works on single-channel images; this one has " + std::to_string(fmt.channels) +
                     " channels");
  if (fmt.type == SampleType::kU8) return make_typed<uint8_t>(p);
  if (fmt.type == SampleType::kU16) return make_typed<uint16_t>(p);
  throw InputError(std::string("reconstruction works on 8- and 16-bit images, not ") + sample_name(fmt.type));
}

void reconstruct_image(Image& j, const Image& i, const ReconstructParams& p) {
  TW_ASSERT(j.rect() == i.rect() && j.fmt() == i.fmt());
  auto rule = make_reconstruct_rule(j.fmt(), p);
  const Rect core = j.rect();
  Image h(j.fmt(), core.grown(1));
  std::vector<uint8_t> nv(j.fmt().bytes_per_pixel());
  rule->neutral(nv.data());
  for (int64_t y = h.rect().y; y < h.rect().y1(); ++y)
    for (int64_t x = h.rect().x; x < h.rect().x1(); ++x) std::memcpy(h.ptr_bytes(x, y), nv.data(), nv.size());
  copy_overlap(j.view(), h.view());
  rule->propagate(h.view(), i.view(), core);
  copy_overlap(h.view(), j.view());
}

}  // namespace tw
