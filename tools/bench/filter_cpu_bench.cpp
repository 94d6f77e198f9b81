// The op API's CPU filters on an in-memory 8-bit gray image, timed as the
// pyramid writer consumes them (bands of 256 full-width rows, in parallel),
// without file I/O, for tools/bench/filter_vs_opencv.py:
//
//   filter_cpu_bench OP RAW WIDTH HEIGHT [RUNS]
//   OP: gaussian:SIGMA | sobel | canny:SIGMA:LOW:HIGH | nms:SIGMA:LOW:HIGH (Canny without hysteresis)
//       | cuda-canny:SIGMA:LOW:HIGH (Canny on CUDA device 0, end to end from host memory)
//
// RAW is WIDTH x HEIGHT bytes. Prints the median seconds of RUNS (default 5),
// after one run that is not counted.
#include <tbb/parallel_for.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "engine/memory_source.hpp"
#include "engine/ops/run_op.hpp"
#include "jobs/canny/canny_job.hpp"
#include "kernels/canny/canny.hpp"
#include "kernels/gaussian/gaussian.hpp"
#include "kernels/sobel/sobel.hpp"

using namespace tw;

namespace {

// Reads the whole result in bands into `out` (allocated once, like the
// writer's recycled band buffers).
void consume(const TileSource& s, Image& out) {
  const LevelInfo& l0 = s.level(0);
  if (out.empty()) out = Image(s.info().fmt, l0.bounds());
  const int64_t band = 256, n = (l0.height + band - 1) / band;
  tbb::parallel_for(int64_t{0}, n, [&](int64_t b) {
    s.read(0, out.view().sub(Rect(0, b * band, l0.width, std::min(band, l0.height - b * band))));
  });
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 5) {
    std::fprintf(stderr, "usage: filter_cpu_bench OP RAW WIDTH HEIGHT [RUNS]\n");
    return 2;
  }
  const std::string op = argv[1];
  const int64_t w = std::atoll(argv[3]), h = std::atoll(argv[4]);
  const int runs = argc > 5 ? std::atoi(argv[5]) : 5;
  Image img(kGray8, Rect(0, 0, w, h));
  std::ifstream f(argv[2], std::ios::binary);
  for (int64_t y = 0; y < h; ++y) f.read(reinterpret_cast<char*>(img.row_bytes(y)), w);
  if (!f) {
    std::fprintf(stderr, "cannot read %s\n", argv[2]);
    return 1;
  }
  auto src = std::make_shared<MemorySource>(std::move(img));
  const Backend cpu{};
  std::vector<double> t;
  Image out;
  for (int r = -1; r < runs; ++r) {  // run -1 warms up (threads, first-touch pages)
    const auto t0 = std::chrono::steady_clock::now();
    if (op.rfind("gaussian:", 0) == 0) {
      consume(*ops::run_op(src, ops::make_gaussian<1>(std::atof(op.c_str() + 9)), cpu, "gaussian"), out);
    } else if (op == "sobel") {
      consume(*ops::run_op(src, ops::Sobel{}, cpu, "sobel"), out);
    } else if (op.rfind("nms:", 0) == 0) {  // Canny without hysteresis, to see where time goes
      double sigma = 0, lo = 0, hi = 0;
      std::sscanf(op.c_str() + 4, "%lf:%lf:%lf", &sigma, &lo, &hi);
      auto smooth = ops::run_op(src, ops::make_gaussian<1>(sigma), cpu, "smooth");
      consume(*ops::run_op(smooth, ops::make_canny_nms(lo, hi), cpu, "nms"), out);
    } else if (op.rfind("canny:", 0) == 0 || op.rfind("cuda-canny:", 0) == 0) {
      // cuda-canny: the same pipeline on CUDA device 0 (the seed thesis's
      // workload: one image after another in one process).
      const bool gpu = op[0] == 'c' && op[1] == 'u';
      double sigma = 0, lo = 0, hi = 0;
      std::sscanf(op.c_str() + (gpu ? 11 : 6), "%lf:%lf:%lf", &sigma, &lo, &hi);
      ops::CannyParams p;
      p.sigma = sigma, p.low = lo, p.high = hi;
      ReconstructJob job;
      job.memory = size_t{4} << 30;
      job.scratch_near = "/tmp/filter_cpu_bench.tif";
      if (gpu) job.backend = Backend::cuda(0);
      consume(*ops::canny_classic(src, p, job).edges, out);
    } else {
      std::fprintf(stderr, "unknown op %s\n", op.c_str());
      return 2;
    }
    if (r >= 0) t.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(t.begin(), t.end());
  std::printf("%.6f\n", t[t.size() / 2]);
  return 0;
}
