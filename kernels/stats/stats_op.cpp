// Registration of `tilewave stats` (kernels/stats/stats.hpp): reductions
// whose result is numbers, printed as JSON.
#include "kernels/point/filter_support.hpp"
#include "kernels/stats/stats.hpp"

namespace tw::ops {
namespace {

template <int C>
nlohmann::json stats_json(const TileSource& in, const Backend& b, int bins, size_t memory) {
  const LevelInfo& l0 = in.level(0);
  const auto acc = ops::reduce(in, Stats<C>{}, b, "stats", memory);
  const double n = static_cast<double>(l0.width) * static_cast<double>(l0.height);
  nlohmann::json lo, hi, mean, sum;
  for (int c = 0; c < C; ++c) {
    lo.push_back(acc.lo[c]);
    hi.push_back(acc.hi[c]);
    mean.push_back(n > 0 ? static_cast<double>(acc.sum[c]) / n : 0.0);
    sum.push_back(acc.sum[c]);
  }
  nlohmann::json o = {{"input", in.info().path},
                      {"width", l0.width},
                      {"height", l0.height},
                      {"channels", C},
                      {"device", b.str()},
                      {"min", lo},
                      {"max", hi},
                      {"mean", mean},
                      {"sum", sum}};
  if (bins > 0) {
    nlohmann::json hists = nlohmann::json::array();
    for (int c = 0; c < C; ++c) {
      ChannelHistogram<C> h;
      h.channel = c, h.n = bins;
      const auto v = ops::histogram(in, h, b, "histogram", memory);
      hists.push_back(v);
      if (C == 1 && bins == 256) o["otsu_threshold"] = otsu_threshold(v);
    }
    o["histogram_bins"] = bins;
    o["histogram"] = hists;
  }
  return o;
}

// Other channel counts than gray and RGB: each channel alone (a
// single-channel image each), the arrays joined in channel order.
nlohmann::json stats_per_channel(const std::shared_ptr<const TileSource>& in, const Backend& b, int bins,
                                 size_t memory) {
  nlohmann::json o;
  const int n = in->info().fmt.channels;
  for (int c = 0; c < n; ++c) {
    const nlohmann::json one = stats_json<1>(*channel_source(in, c), b, bins, memory);
    if (c == 0) {
      o = one;
      o["input"] = in->info().path;
      o["channels"] = n;
      o.erase("otsu_threshold");
      continue;
    }
    for (const char* k : {"min", "max", "mean", "sum"}) o[k].push_back(one[k][0]);
    if (bins > 0) o["histogram"].push_back(one["histogram"][0]);
  }
  return o;
}

}  // namespace

void register_stats(OpRegistry& r) {
  OpDef op;
  op.name = "stats";
  op.command = {"stats"};
  op.category = OpCategory::kReduction;
  op.summary = "min, max, mean, sum and histograms per channel (JSON)";
  op.usage = "[--histogram BINS]";
  op.help =
      "Min, max, mean and sum per channel of level 0 of an 8-bit image of any number of\n"
      "channels, and optionally histograms (with 256 bins on gray: Otsu's threshold\n"
      "too), as JSON on stdout.";
  op.takes = "8-bit, any number of channels";
  op.params = {ParamSpec::integer("histogram", "BINS", 1, 256, "",
                                  "also per-channel histograms with BINS bins (1..256) over 0..255")};
  op.output_format = [](const std::vector<ImageType>& in, const OpParams&) { return require_u8(in[0], "stats"); };
  op.run = [](const std::vector<SourceP>& in, const OpParams& p, ExecContext& ctx) {
    const int bins = p.has("histogram") ? static_cast<int>(p.integer("histogram")) : 0;
    OpResult res;
    const int c = in[0]->info().fmt.channels;
    res.values = c == 1   ? stats_json<1>(*in[0], ctx.backend, bins, ctx.memory)
                 : c == 3 ? stats_json<3>(*in[0], ctx.backend, bins, ctx.memory)
                          : stats_per_channel(in[0], ctx.backend, bins, ctx.memory);
    return res;
  };
  r.add(std::move(op));
}

}  // namespace tw::ops
