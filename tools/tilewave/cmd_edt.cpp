#include <tbb/global_control.h>

#include <chrono>
#include <cstdio>
#include <iostream>
#include <optional>

#include "io/open_source.hpp"
#include "kernels/edt/edt.hpp"
#include "kernels/edt/edt_cuda.hpp"
#include "tools/tilewave/args.hpp"
#include "tools/tilewave/commands.hpp"
#include "tools/tilewave/output.hpp"

namespace tw::cli {

int cmd_edt(int argc, char** argv) {
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<OptionSpec> sp = {{"threshold", "T", "foreground: pixels above T (default 0; RGB uses BT.601 luma)"}};
  for (auto& o : output_option_specs()) sp.push_back(o);
  for (auto& o : common_option_specs()) sp.push_back(o);
  Args a("edt", argc, argv, 2, sp);
  if (a.has("help")) {
    std::cout << "usage: tilewave edt INPUT OUTPUT.tif [--threshold T] [OPTIONS]\n\n"
                 "The exact Euclidean distance of every foreground pixel (above T) to the nearest\n"
                 "background pixel, as float32 (scipy's ndimage.distance_transform_edt), out of\n"
                 "core. Background pixels are 0; with no background at all, every pixel is +inf.\n\noptions:\n"
              << a.options_help();
    return 0;
  }
  CommonOptions common = parse_common(a);
  std::optional<tbb::global_control> threads;
  if (common.threads > 0) threads.emplace(tbb::global_control::max_allowed_parallelism, static_cast<size_t>(common.threads));
  if (a.positional().size() != 2) throw UsageError("edt takes INPUT OUTPUT.tif (see --help)");
  EdtParams p;
  const std::string thr = a.str("threshold", "0");
  try {
    size_t used = 0;
    p.threshold = std::stod(thr, &used);
    if (used != thr.size()) throw std::invalid_argument(thr);
  } catch (const std::exception&) {
    throw UsageError("--threshold '" + thr + "' is not a number");
  }
  const std::string output = a.positional()[1];
  check_paths(output, common, {a.positional()[0]});
  const SourcePtr in = open_source(a.positional()[0]);
  cache_input_reads(*in, common);
  if (in->info().fmt.channels == 2 || in->info().fmt.channels > 4)
    throw InputError(in->info().path + " is " + in->info().fmt.str() + "; edt needs gray or RGB");
  EdtStats st;
  std::shared_ptr<const TileSource> dist;
  // The GPU path handles sides below 2^20; --device auto falls back to the CPU beyond.
  const LevelInfo& l0 = in->level(0);
  const bool too_big = l0.width >= (int64_t{1} << 20) || l0.height >= (int64_t{1} << 20);
  Backend backend = common.backend;
  if (backend.is_cuda() && too_big && a.str("device", "auto") == "auto") backend.kind = Backend::Kind::kCpu;
  if (backend.is_cuda()) {
    EdtCudaJob job;
    job.params = p;
    job.memory = common.memory;
    job.gpu_memory = common.gpu_memory;
    job.device = backend.device;
    job.scratch_near = output;
    dist = euclidean_distance_cuda(*in, job, &st);
  } else {
    dist = euclidean_distance(*in, p, common.memory, output, &st);
  }
  OutputRequest req;
  req.src = dist.get();
  req.output = output;
  req.description = "Tilewave Euclidean distance transform";
  req.lossless_default = true;
  const double open_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const OutputResult out = write_output(req, a, common);
  char what[160];
  if (backend.is_cuda())
    std::snprintf(what, sizeof what, "distances %.2f s on %s (kernels %.1f ms, copies %.1f ms, %lld band%s)", st.seconds,
                  backend.str().c_str(), st.gpu_kernel_seconds * 1e3, st.gpu_transfer_seconds * 1e3,
                  static_cast<long long>(st.gpu_bands), st.gpu_bands == 1 ? "" : "s");
  else
    std::snprintf(what, sizeof what, "distances %.2f s", st.seconds);
  print_written(req, out, what);
  write_report(common.report, "edt", a.positional()[0], output, out, open_s,
               std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(),
               {{"edt_seconds", st.seconds},
                {"edt_read_seconds", st.read_seconds},
                {"edt_device", backend.str()},
                {"gpu_kernel_seconds", st.gpu_kernel_seconds},
                {"gpu_transfer_seconds", st.gpu_transfer_seconds},
                {"gpu_bands", st.gpu_bands},
                {"foreground_pixels", st.foreground},
                {"background_pixels", st.background}});
  return 0;
}

}  // namespace tw::cli
