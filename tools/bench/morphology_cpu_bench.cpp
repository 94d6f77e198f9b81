// `filter erode` on the CPU, on an in-memory image, read as the writer reads
// (bands of 256 full-width rows, in parallel), without file I/O:
//
//   morphology_cpu_bench [SIDE] [RUNS] [THREADS]     (defaults 4096, 7, all cores)
//
// For u8 and u16, disk and square, R = 8, 16, 64: the median and the range
// (min-max) of RUNS timed runs after one untimed, in MP/s. The image is
// smooth gradients with noise (deterministic), as tissue is to a min filter.
#include <tbb/global_control.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>
#include <random>
#include <vector>

#include "engine/memory_source.hpp"
#include "engine/op_registry.hpp"
#include "jobs/op_runner.hpp"

using namespace tw;

namespace {

Image make_image(PixelFormat f, int64_t side) {
  Image img(f, Rect(0, 0, side, side));
  std::mt19937 rng(7);
  const int max = f.type == SampleType::kU8 ? 255 : 65535;
  for (int64_t y = 0; y < side; ++y)
    for (int64_t x = 0; x < side; ++x) {
      const double v = 0.5 + 0.3 * std::sin(x * 0.013) * std::cos(y * 0.011) + (rng() % 1000) * 1e-4;
      const int s = std::clamp(static_cast<int>(v * max), 0, max);
      if (f.type == SampleType::kU8)
        img.row<uint8_t>(y)[x] = static_cast<uint8_t>(s);
      else
        img.row<uint16_t>(y)[x] = static_cast<uint16_t>(s);
    }
  return img;
}

void consume(const TileSource& s, Image& out) {
  const LevelInfo& l0 = s.level(0);
  const int64_t band = 256, n = (l0.height + band - 1) / band;
  tbb::parallel_for(int64_t{0}, n, [&](int64_t b) {
    s.read(0, out.view().sub(Rect(0, b * band, l0.width, std::min(band, l0.height - b * band))));
  });
}

}  // namespace

int main(int argc, char** argv) {
  const int64_t side = argc > 1 ? std::atoll(argv[1]) : 4096;
  const int runs = argc > 2 ? std::atoi(argv[2]) : 7;
  std::optional<tbb::global_control> threads;
  if (argc > 3) threads.emplace(tbb::global_control::max_allowed_parallelism, std::atoi(argv[3]));
  const OpDef* op = op_registry().find("erode");
  if (!op || side < 64 || runs < 1) {
    std::fprintf(stderr, "usage: morphology_cpu_bench [SIDE>=64] [RUNS>=1] [THREADS]\n");
    return 2;
  }
  for (PixelFormat f : {kGray8, PixelFormat{SampleType::kU16, 1}}) {
    const auto src = std::make_shared<MemorySource>(make_image(f, side));
    Image out(f, Rect(0, 0, side, side));
    for (const char* shape : {"disk", "square"})
      for (int r : {8, 16, 64}) {
        std::vector<double> s;
        for (int k = 0; k <= runs; ++k) {
          OpParams p = op->params_for();
          p.set("radius", std::to_string(r));
          p.set("shape", shape);
          ExecContext ctx;
          ctx.tile = 256;
          const auto t0 = std::chrono::steady_clock::now();
          const OpResult res = run_registered_op(*op, {src}, p, ctx);
          consume(*res.image, out);
          if (k > 0) s.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
        }
        std::sort(s.begin(), s.end());
        const double mp = static_cast<double>(side * side) / 1e6;
        std::printf("erode %-6s r %2d %s: median %.0f MP/s, %.0f-%.0f over %d runs\n", shape, r, f.str().c_str(),
                    mp / s[s.size() / 2], mp / s.back(), mp / s.front(), runs);
      }
  }
  return 0;
}
