// stats: whole-slide min, max, mean and histograms as JSON (the op API's
// reductions), computed band by band in bounded memory.
#include <tbb/global_control.h>

#include <iostream>
#include <optional>

#include "engine/json.hpp"
#include "engine/ops/reduce.hpp"
#include "io/open_source.hpp"
#include "kernels/stats/stats.hpp"
#include "tools/tilewave/args.hpp"
#include "tools/tilewave/commands.hpp"
#include "tools/tilewave/output.hpp"

namespace tw::cli {
namespace {

template <int C>
nlohmann::json stats_json(const TileSource& in, const Backend& b, int bins, size_t memory) {
  const LevelInfo& l0 = in.level(0);
  const auto acc = ops::reduce(in, kernels::Stats<C>{}, b, "stats", memory);
  const double n = static_cast<double>(l0.width) * static_cast<double>(l0.height);
  nlohmann::json lo, hi, mean, sum;
  for (int c = 0; c < C; ++c) {
    lo.push_back(acc.lo[c]);
    hi.push_back(acc.hi[c]);
    mean.push_back(n > 0 ? static_cast<double>(acc.sum[c]) / n : 0.0);
    sum.push_back(acc.sum[c]);
  }
  nlohmann::json o = {{"input", in.info().path}, {"width", l0.width}, {"height", l0.height}, {"channels", C},
                      {"device", b.str()},       {"min", lo},         {"max", hi},            {"mean", mean},
                      {"sum", sum}};
  if (bins > 0) {
    nlohmann::json hists = nlohmann::json::array();
    for (int c = 0; c < C; ++c) {
      kernels::ChannelHistogram<C> h;
      h.channel = c, h.n = bins;
      const auto v = ops::histogram(in, h, b, "histogram", memory);
      hists.push_back(v);
      if (C == 1 && bins == 256) o["otsu_threshold"] = kernels::otsu_threshold(v);
    }
    o["histogram_bins"] = bins;
    o["histogram"] = hists;
  }
  return o;
}

}  // namespace

int cmd_stats(int argc, char** argv) {
  std::vector<OptionSpec> sp = {{"histogram", "BINS", "also per-channel histograms with BINS bins (1..256) over 0..255"}};
  for (auto& o : common_option_specs()) sp.push_back(o);
  Args a("stats", argc, argv, 2, sp);
  if (a.has("help")) {
    std::cout << "usage: tilewave stats INPUT [--histogram BINS] [OPTIONS]\n\n"
                 "Min, max, mean and sum per channel of level 0 of an 8-bit gray or RGB image, and\n"
                 "optionally histograms (with 256 bins on gray: Otsu's threshold too), as JSON on\n"
                 "stdout.\n\noptions:\n"
              << a.options_help();
    return 0;
  }
  CommonOptions common = parse_common(a);
  std::optional<tbb::global_control> threads;
  if (common.threads > 0) threads.emplace(tbb::global_control::max_allowed_parallelism, static_cast<size_t>(common.threads));
  if (a.positional().size() != 1) throw UsageError("stats takes INPUT (see --help)");
  const int bins = static_cast<int>(a.integer("histogram", 0, 1, 256));
  const SourcePtr in = open_source(a.positional()[0]);
  reserve_input_memory(*in, common);
  const PixelFormat f = in->info().fmt;
  if (f.type != SampleType::kU8 || (f.channels != 1 && f.channels != 3))
    throw InputError(in->info().path + " is " + f.str() + "; stats needs 8-bit gray or RGB");
  const nlohmann::json o = f.channels == 1 ? stats_json<1>(*in, common.backend, bins, common.memory)
                                           : stats_json<3>(*in, common.backend, bins, common.memory);
  std::cout << dump_json(o, 2) << "\n";
  return 0;
}

}  // namespace tw::cli
