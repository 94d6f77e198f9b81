#include "tools/tilewave/args.hpp"

#include <sched.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "engine/memory.hpp"
#include "engine/trace.hpp"

namespace tw::cli {

Args::Args(const std::string& command, int argc, char** argv, int first, std::vector<OptionSpec> specs)
    : command_(command), specs_(std::move(specs)) {
  auto find = [&](const std::string& n) -> const OptionSpec* {
    for (const auto& s : specs_)
      if (s.name == n) return &s;
    return nullptr;
  };
  for (int i = first; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--") {
      for (++i; i < argc; ++i) positional_.emplace_back(argv[i]);
      break;
    }
    if (a.size() > 2 && a.compare(0, 2, "--") == 0) {
      std::string name = a.substr(2), value;
      bool inline_value = false;
      const auto eq = name.find('=');
      if (eq != std::string::npos) {
        value = name.substr(eq + 1), name = name.substr(0, eq), inline_value = true;
      }
      const OptionSpec* s = find(name);
      if (!s) throw UsageError("unknown option --" + name + " for '" + command_ + "'");
      if (s->value.empty()) {
        if (inline_value) throw UsageError("option --" + name + " takes no value");
        values_[name] = "1";
        continue;
      }
      if (!inline_value) {
        if (i + 1 >= argc) throw UsageError("option --" + name + " needs a value (" + s->value + ")");
        value = argv[++i];
      }
      values_[name] = value;
      all_values_[name].push_back(value);
      continue;
    }
    positional_.push_back(a);
  }
}

std::vector<std::string> Args::all(const std::string& name) const {
  auto it = all_values_.find(name);
  return it == all_values_.end() ? std::vector<std::string>{} : it->second;
}

std::string Args::str(const std::string& name, const std::string& fallback) const {
  auto it = values_.find(name);
  return it == values_.end() ? fallback : it->second;
}

namespace {
std::string fmt_real(double d) {
  char b[32];
  std::snprintf(b, sizeof b, "%g", d);
  return b;
}
}  // namespace

int64_t Args::integer(const std::string& name, int64_t fallback, int64_t lo, int64_t hi) const {
  auto it = values_.find(name);
  if (it == values_.end()) return fallback;
  const std::string& v = it->second;
  char* end = nullptr;
  errno = 0;
  const long long n = std::strtoll(v.c_str(), &end, 10);
  if (v.empty() || *end != 0 || errno == ERANGE) throw UsageError("--" + name + " '" + v + "' is not an integer");
  if (n < lo || n > hi)
    throw UsageError("--" + name + " " + v + " is out of range " + std::to_string(lo) + ".." + std::to_string(hi));
  return n;
}

double Args::real(const std::string& name, double fallback, double lo, double hi) const {
  auto it = values_.find(name);
  if (it == values_.end()) return fallback;
  const std::string& v = it->second;
  char* end = nullptr;
  errno = 0;
  const double d = std::strtod(v.c_str(), &end);
  if (v.empty() || *end != 0 || errno == ERANGE || !std::isfinite(d))
    throw UsageError("--" + name + " '" + v + "' is not a number");
  if (d < lo || d > hi)
    throw UsageError("--" + name + " " + v + " is out of range " + fmt_real(lo) + ".." + fmt_real(hi));
  return d;
}

size_t Args::bytes(const std::string& name, size_t fallback) const {
  auto it = values_.find(name);
  if (it == values_.end()) return fallback;
  try {
    return parse_byte_size(it->second);
  } catch (const InputError& e) {
    throw UsageError("--" + name + ": " + e.what());
  }
}

std::string Args::options_help() const {
  std::string out;
  for (const auto& s : specs_) {
    std::string left = "  --" + s.name + (s.value.empty() ? "" : " " + s.value);
    if (left.size() < 28)
      left.resize(28, ' ');
    else
      left += "\n" + std::string(28, ' ');
    out += left + s.help + "\n";
  }
  return out;
}

std::vector<OptionSpec> common_option_specs() {
  return {
      {"tile", "N",
       "tile size in pixels, a multiple of 16 (default 256); for Deep Zoom outputs any size, "
       "default 254"},
      {"memory", "SIZE", "memory budget for pixel data, e.g. 512M, 4G (default 1G)"},
      {"threads", "N", "worker threads (default: all cores)"},
      {"device", "DEV",
       "auto (default: CUDA when a GPU is present), cpu, cuda, cuda:N, or several GPUs to split a slide over: "
       "cuda:N,M,... or cuda:all"},
      {"gpu-memory", "SIZE", "device memory budget (default: half the GPU's free memory)"},
      {"report", "FILE", "write timings and counts as JSON to FILE"},
      {"help", "", "show this help"},
  };
}

namespace {

// Under mpirun, Open MPI binds each rank to one core when it starts two
// ranks or fewer: every thread of a rank then shares that core (seen on the
// 16-core GPU host: a batch on 2 ranks 6x slower than on 1 or 4). Said once,
// by rank 0, at once (a batch's per-slide warnings would drop it).
void warn_if_rank_is_bound() {
  static bool said = false;
  const char* local = std::getenv("OMPI_COMM_WORLD_LOCAL_SIZE");
  const char* rank = std::getenv("OMPI_COMM_WORLD_RANK");
  if (said || !local || std::atoi(local) < 1 || !rank || std::atoi(rank) != 0) return;
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) != 0) return;
  const long cores = sysconf(_SC_NPROCESSORS_ONLN);
  const int allowed = CPU_COUNT(&set);
  if (cores > 0 && allowed < cores / std::atoi(local)) {
    said = true;
    std::fprintf(stderr,
                 "tilewave: warning: each rank may run on %d of the host's %ld cores (mpirun binds ranks to "
                 "cores by default): add --bind-to none to mpirun\n",
                 allowed, cores);
  }
}

}  // namespace

CommonOptions parse_common(const Args& a, bool defer_device) {
  CommonOptions o;
  // The pass's tile. Any size is a Deep Zoom output's tile (its sink
  // re-tiles the pass's tiles, and the pass keeps 256); anything else
  // needs a multiple of 16.
  o.tile = a.integer("tile", 256, 1, 16384);
  bool dzi = a.has("format") && a.str("format") == "dzi";
  for (const std::string& p : a.positional()) dzi = dzi || (p.size() > 4 && p.compare(p.size() - 4, 4, ".dzi") == 0);
  // OUT.zip: a Deep Zoom pyramid in one zip (io/open_sink.cpp's layout_for).
  for (const std::string& p : a.positional()) dzi = dzi || (p.size() > 4 && p.compare(p.size() - 4, 4, ".zip") == 0);
  if (o.tile % 16 != 0 || o.tile < 16) {
    if (!dzi)
      throw UsageError("--tile " + std::to_string(o.tile) +
                       " is not a multiple of 16 (TIFF requires it; Deep Zoom outputs take any size)");
    o.tile = 256;
  }
  o.memory = a.bytes("memory", o.memory);
  // Free heap pages go back to the system once the process nears its budget
  // (engine/memory.hpp): the pipeline's stores fill amid other buffers. An
  // eighth short of it, not a quarter: `tilewave nuclei` of a 67-MP slide at
  // 1G sat between the two for its whole second half, handing pages back
  // that its next buffers faulted in again (a quarter of its page faults,
  // 0.4-1.1 s of 6-7 s on our 2-core machine: docs/PERFORMANCE.md).
  set_rss_target(o.memory / 8 * 7);
  hand_big_blocks_back_under(o.memory);
  if (o.memory < (size_t{4} << 20)) throw UsageError("--memory " + a.str("memory") + " is below the minimum of 4M");
  o.threads = static_cast<int>(a.integer("threads", 0, 1, 4096));
  warn_if_rank_is_bound();
  {
    TraceSpan span("device-init", 0);
    const std::string dev = a.str("device", "auto");
    o.backend = defer_device ? parse_backend_deferred(dev) : parse_backend(dev);
  }
  o.gpu_memory = a.bytes("gpu-memory", 0);
  if (a.has("gpu-memory") && o.gpu_memory < (size_t{1} << 20))
    throw UsageError("--gpu-memory " + a.str("gpu-memory") + " is below the minimum of 1M");
  o.report = a.str("report");
  return o;
}

}  // namespace tw::cli
