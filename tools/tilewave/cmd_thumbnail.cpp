// tilewave thumbnail: the whole slide scaled to a size, as vips thumbnail
// (docs/region.md).
#include <tbb/global_control.h>

#include <cstdio>
#include <iostream>
#include <optional>

#include "io/open_source.hpp"
#include "jobs/region/region_job.hpp"
#include "tools/tilewave/args.hpp"
#include "tools/tilewave/commands.hpp"
#include "tools/tilewave/output.hpp"

namespace tw::cli {
namespace {

std::vector<OptionSpec> thumbnail_specs() {
  std::vector<OptionSpec> s = {
      {"size", "N", "the longer side in pixels (required); the other keeps the aspect ratio"},
      {"quality", "Q", "JPEG quality 1..100 (default 90)"},
      {"reader", "R", "auto, tiff or openslide (default auto)"},
  };
  for (auto& c : common_option_specs())
    if (c.name != "tile" && c.name != "device" && c.name != "gpu-memory" && c.name != "report") s.push_back(c);
  return s;
}

}  // namespace

int cmd_thumbnail(int argc, char** argv) {
  Args a("thumbnail", argc, argv, 2, thumbnail_specs());
  if (a.has("help")) {
    std::cout << "usage: tilewave thumbnail SLIDE OUT.png|OUT.jpg --size N [OPTIONS]\n\n"
                 "Writes SLIDE scaled so its longer side is N pixels, as vips thumbnail SLIDE OUT N:\n"
                 "from the smallest level at least that large, reduced by area averaging. PNG for\n"
                 "8/16-bit images of 1 to 4 channels, JPEG for 8-bit gray or RGB. See docs/region.md.\n\n"
                 "options:\n"
              << a.options_help();
    return 0;
  }
  const auto& pos = a.positional();
  if (pos.size() != 2) throw UsageError("thumbnail takes SLIDE and OUT.png (see tilewave thumbnail --help)");
  if (!a.has("size")) throw UsageError("thumbnail needs --size N");
  const int64_t size = a.integer("size", 0, 1, int64_t{1} << 20);
  const int quality = static_cast<int>(a.integer("quality", 90, 1, 100));
  CommonOptions common = parse_common(a);
  std::optional<tbb::global_control> threads;
  if (common.threads > 0)
    threads.emplace(tbb::global_control::max_allowed_parallelism, static_cast<size_t>(common.threads));
  check_paths(pos[1], common, {pos[0]}, OutputKind::kFile);
  const SourcePtr src = open_source(pos[0], parse_reader(a.str("reader", "auto")));
  check_image_file_output(pos[1], src->info().fmt);
  reserve_input_memory(*src, common);
  const Image img = make_thumbnail(*src, size, common.memory);
  write_image_file(pos[1], img.view(), quality);
  std::printf("wrote %s: %lld x %lld, %s\n", pos[1].c_str(), static_cast<long long>(img.rect().w),
              static_cast<long long>(img.rect().h), src->info().fmt.str().c_str());
  return 0;
}

}  // namespace tw::cli
