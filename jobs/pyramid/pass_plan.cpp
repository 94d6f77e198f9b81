#include "jobs/pyramid/pass_plan.hpp"

#include <algorithm>

#include "engine/error.hpp"
#include "engine/geometry.hpp"
#include "engine/memory.hpp"
#include "jobs/pyramid/level_producer.hpp"

namespace tw {
namespace {

size_t row_bytes(PixelFormat fmt, int64_t w) {
  return ((static_cast<size_t>(w) * fmt.bytes_per_pixel()) + 63) & ~size_t{63};
}

struct Budget {
  size_t cascade = 0, per_token = 0, fixed = 0;
  size_t device = 0;  // the CUDA cascade's device memory (0 on the CPU)
  int64_t tokens(size_t memory) const {
    if (memory <= cascade + fixed) return 0;
    return static_cast<int64_t>((memory - cascade - fixed) / per_token);
  }
};

Budget budget_for(const PassGeom& g, PixelFormat fmt, int64_t T, int threads, double ratio, bool cuda) {
  Budget b;
  // On the GPU the cascade lives in device memory; the host holds the bands
  // coming back (counted per token).
  b.cascade = cuda ? 0 : PyramidCascade::state_bytes(fmt, g.levels, T);
  b.device = cuda ? cuda_producer_bytes(fmt, g.levels, T) : 0;
  const size_t band0 = row_bytes(fmt, g.levels[0].col1 - g.levels[0].col0) * static_cast<size_t>(T);
  // A token holds its level-0 band, the lower-level bands it completed (at
  // most one of each level: < band0 together), their compressed tiles, and
  // the raw tiles of a passed-through band.
  b.per_token = static_cast<size_t>(band0 * (2.0 + 3.0 * std::min(ratio, 1.0)));
  // On the GPU, a computed level 0 written as JPEG comes back as
  // coefficients beside its pixel band: at most 2 bytes a sample (4:4:4).
  if (cuda && fmt.type == SampleType::kU8) b.per_token += 2 * band0;
  // Per thread: a padded tile copy and the codec's buffers; plus the
  // writer's offset tables and small odds and ends.
  const size_t tile = static_cast<size_t>(T * T) * fmt.bytes_per_pixel();
  b.fixed = static_cast<size_t>(threads) * 4 * tile + (size_t{512} << 10);
  return b;
}

}  // namespace

PassGeom stripe_geometry(const Sizes& sizes, int K, int64_t X0, int64_t X1) {
  PassGeom g;
  g.K = K;
  g.levels.resize(static_cast<size_t>(K) + 1);
  g.emit.resize(static_cast<size_t>(K) + 1);
  const bool last = X1 >= sizes[0].first;
  for (int k = 0; k <= K; ++k) {
    const int64_t w = sizes[k].first;
    g.levels[k].width = w;
    g.levels[k].height = sizes[k].second;
    g.emit[k] = {std::min(X0 >> k, w), last ? w : std::min(X1 >> k, w)};
  }
  g.levels[K].col0 = g.emit[K].x0;
  g.levels[K].col1 = g.emit[K].x1;
  for (int k = K; k >= 1; --k) {
    const CascadeLevel& c = g.levels[k];
    const int64_t lo = std::max<int64_t>(0, 2 * c.col0 - 2);
    const int64_t hi = std::min(sizes[k - 1].first, 2 * (c.col1 - 1) + 3);
    g.levels[k - 1].col0 = std::min(lo, g.emit[k - 1].x0);
    g.levels[k - 1].col1 = std::max(hi, g.emit[k - 1].x1);
  }
  return g;
}

Plan choose_plan(const Sizes& sizes, PixelFormat fmt, int64_t T, size_t memory, size_t gpu_memory, int threads,
                 double ratio) {
  const bool cuda = gpu_memory > 0;
  const int L = static_cast<int>(sizes.size());
  const int64_t W0 = sizes[0].first;
  // Enough bands in flight that every thread has tiles to decode and encode
  // (a band of many tiles keeps many threads busy on its own), plus three
  // for the serial stages; more only costs memory (pinned, for the GPU).
  const int64_t tiles_per_band = std::max<int64_t>(1, ceil_div(W0, T));
  const int max_tokens =
      static_cast<int>(std::min<int64_t>(2 * threads + 2, ceil_div(2 * threads, tiles_per_band) + 3));
  auto fit = [&](int K, int64_t S, Plan& p) {
    // The widest stripe: an interior one when there are three or more.
    const int64_t X0 = W0 > 2 * S ? S : 0;
    const PassGeom g = stripe_geometry(sizes, K, X0, std::min(X0 + S, W0));
    const Budget b = budget_for(g, fmt, T, threads, ratio, cuda);
    const int64_t n = b.tokens(memory);
    if (n < 1 || (cuda && b.device > gpu_memory)) return false;
    p.K = K, p.S = S;
    p.tokens = static_cast<int>(std::min<int64_t>(n, max_tokens));
    p.bytes = b.cascade + b.fixed + b.per_token * static_cast<size_t>(p.tokens);
    p.device_bytes = b.device;
    return true;
  };
  Plan p;
  if (fit(L - 1, W0, p)) return p;
  int j = 1;
  while ((T << (j + 1)) < W0) ++j;
  for (; j >= 1; --j)
    if (fit(std::min(j, L - 1), T << j, p)) return p;
  const Budget b =
      budget_for(stripe_geometry(sizes, std::min(1, L - 1), 0, std::min(2 * T, W0)), fmt, T, threads, ratio, cuda);
  if (cuda && b.device > gpu_memory)
    throw InputError("--gpu-memory " + format_bytes(gpu_memory) + " is too small for " + std::to_string(T) +
                     "-pixel tiles: this pyramid needs at least " + format_bytes(b.device) + " of device memory");
  const size_t needed = b.cascade + b.fixed + b.per_token;
  throw BudgetTooSmall("--memory " + format_bytes(memory) + " is too small for " + std::to_string(T) +
                           "-pixel tiles: this pyramid needs at least " + format_bytes(needed) +
                           " (use a larger --memory or a smaller --tile)",
                       needed, memory);
}

size_t least_pass_bytes(const Sizes& sizes, PixelFormat fmt, int64_t T) {
  const int L = static_cast<int>(sizes.size());
  const PassGeom g = stripe_geometry(sizes, std::min(1, L - 1), 0, std::min(2 * T, sizes[0].first));
  const Budget b = budget_for(g, fmt, T, 1, 0.0, false);
  return b.fixed + b.per_token;  // b.cascade lives on the GPU there
}

int64_t tiles_in(const Sizes& sizes, int64_t T, size_t from) {
  int64_t n = 0;
  for (size_t k = from; k < sizes.size(); ++k) n += ceil_div(sizes[k].first, T) * ceil_div(sizes[k].second, T);
  return n;
}

}  // namespace tw
