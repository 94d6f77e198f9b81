// tilewave region: one rectangle of one level as a PNG or JPEG, cut as
// openslide-write-png cuts it (docs/region.md).
#include <tbb/global_control.h>

#include <cstdio>
#include <iostream>
#include <optional>
#include <sstream>

#include "io/open_source.hpp"
#include "jobs/region/region_job.hpp"
#include "tools/tilewave/args.hpp"
#include "tools/tilewave/commands.hpp"
#include "tools/tilewave/output.hpp"

namespace tw::cli {
namespace {

std::vector<OptionSpec> region_specs() {
  std::vector<OptionSpec> s = {
      {"level", "L", "the level to read (default 0)"},
      {"rect", "X,Y,W,H", "X,Y: top left in level-0 pixels; W,H: size in the level's pixels (required)"},
      {"quality", "Q", "JPEG quality 1..100 (default 90)"},
      {"reader", "R", "auto, tiff or openslide (default auto)"},
  };
  for (auto& c : common_option_specs())
    if (c.name != "tile" && c.name != "device" && c.name != "gpu-memory" && c.name != "report") s.push_back(c);
  return s;
}

RegionRequest parse_rect(const std::string& text) {
  RegionRequest r;
  std::istringstream in(text);
  char c1 = 0, c2 = 0, c3 = 0;
  long long x = 0, y = 0, w = 0, h = 0;
  if (!(in >> x >> c1 >> y >> c2 >> w >> c3 >> h) || c1 != ',' || c2 != ',' || c3 != ',' || !in.eof())
    throw UsageError("--rect must be X,Y,W,H (integers), not '" + text + "'");
  if (w < 1 || h < 1) throw UsageError("--rect " + text + ": W and H must be at least 1");
  r.x = x, r.y = y, r.w = w, r.h = h;
  return r;
}

}  // namespace

int cmd_region(int argc, char** argv) {
  Args a("region", argc, argv, 2, region_specs());
  if (a.has("help")) {
    std::cout << "usage: tilewave region SLIDE OUT.png|OUT.jpg --rect X,Y,W,H [--level L] [OPTIONS]\n\n"
                 "Writes W x H pixels of level L as a PNG (8/16-bit, 1 to 4 channels) or JPEG\n"
                 "(8-bit gray or RGB), as openslide-write-png SLIDE X Y L W H OUT does: X,Y in\n"
                 "level-0 pixels, W,H in the level's. Pixels outside the level are 0 (OpenSlide's\n"
                 "transparent ones, without the alpha channel). See docs/region.md.\n\noptions:\n"
              << a.options_help();
    return 0;
  }
  const auto& pos = a.positional();
  if (pos.size() != 2) throw UsageError("region takes SLIDE and OUT.png (see tilewave region --help)");
  if (!a.has("rect")) throw UsageError("region needs --rect X,Y,W,H");
  RegionRequest r = parse_rect(a.str("rect"));
  r.level = static_cast<int>(a.integer("level", 0, 0, 1000));
  const int quality = static_cast<int>(a.integer("quality", 90, 1, 100));
  CommonOptions common = parse_common(a);
  std::optional<tbb::global_control> threads;
  if (common.threads > 0)
    threads.emplace(tbb::global_control::max_allowed_parallelism, static_cast<size_t>(common.threads));
  check_paths(pos[1], common, {pos[0]}, OutputKind::kFile);
  const SourcePtr src = open_source(pos[0], parse_reader(a.str("reader", "auto")));
  check_image_file_output(pos[1], src->info().fmt);
  reserve_input_memory(*src, common);
  const Image img = read_region(*src, r, common.memory);
  write_image_file(pos[1], img.view(), quality);
  std::printf("wrote %s: %lld x %lld of level %d at (%lld, %lld), %s\n", pos[1].c_str(), static_cast<long long>(r.w),
              static_cast<long long>(r.h), r.level, static_cast<long long>(r.x), static_cast<long long>(r.y),
              src->info().fmt.str().c_str());
  return 0;
}

}  // namespace tw::cli
