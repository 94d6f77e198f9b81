#include <cstdio>
#include <iostream>
#include <sstream>

#include "engine/json.hpp"
#include "io/open_source.hpp"
#include "tools/tilewave/args.hpp"
#include "tools/tilewave/commands.hpp"

namespace tw::cli {
namespace {

void print_text(const SourceInfo& in) {
  std::ostringstream o;
  o << "file:       " << in.path << "\n";
  o << "format:     " << in.format << (in.vendor.empty() ? "" : " (vendor: " + in.vendor + ")") << "\n";
  o << "pixels:     " << in.fmt.str() << "\n";
  o << "channels:   " << in.fmt.channels;
  for (size_t c = 0; c < in.channel_names.size(); ++c) o << (c ? ", " : " (") << in.channel_names[c];
  o << (in.channel_names.empty() ? "" : ")") << "\n";
  char buf[256];
  if (in.mpp_x > 0) {
    std::snprintf(buf, sizeof buf, "%.4f x %.4f microns per pixel", in.mpp_x, in.mpp_y);
    o << "resolution: " << buf << "\n";
  } else {
    o << "resolution: unknown\n";
  }
  o << "levels:     " << in.levels.size() << "\n";
  for (size_t l = 0; l < in.levels.size(); ++l) {
    const LevelInfo& li = in.levels[l];
    std::string unit = "-";
    if (li.tile_w > 0)
      unit = (li.tile_w == li.width && li.tile_h < li.height
                  ? "strips of " + std::to_string(li.tile_h) + " rows"
                  : "tiles " + std::to_string(li.tile_w) + "x" + std::to_string(li.tile_h));
    std::snprintf(buf, sizeof buf, "  level %zu: %lld x %lld  downsample %.4g  %s  %s", l,
                  static_cast<long long>(li.width), static_cast<long long>(li.height), li.downsample, unit.c_str(),
                  li.compression.c_str());
    o << buf << "\n";
  }
  o << "associated: ";
  if (in.associated.empty()) o << "none";
  for (size_t i = 0; i < in.associated.size(); ++i)
    o << (i ? ", " : "") << in.associated[i].name << " " << in.associated[i].width << "x" << in.associated[i].height;
  o << "\n";
  if (in.objective_power > 0) o << "objective:  " << in.objective_power << "x\n";
  for (const auto& [k, v] : in.properties) o << k << ": " << v << "\n";
  for (const auto& [k, v] : in.vendor_properties) o << k << ": " << v << "\n";
  std::cout << o.str();
}

void print_json(const SourceInfo& in) {
  nlohmann::json levels = nlohmann::json::array(), assoc = nlohmann::json::array();
  for (const LevelInfo& li : in.levels)
    levels.push_back({{"width", li.width},
                      {"height", li.height},
                      {"tile_width", li.tile_w},
                      {"tile_height", li.tile_h},
                      {"downsample", li.downsample},
                      {"compression", li.compression}});
  for (const auto& a : in.associated) assoc.push_back({{"name", a.name}, {"width", a.width}, {"height", a.height}});
  nlohmann::json props = nlohmann::json::object();
  for (const auto& [k, v] : in.properties) props[k] = v;
  nlohmann::json vendor = nlohmann::json::object();
  for (const auto& [k, v] : in.vendor_properties) vendor[k] = v;
  const nlohmann::json o = {{"file", in.path},
                            {"format", in.format},
                            {"vendor", in.vendor},
                            {"sample", sample_name(in.fmt.type)},
                            {"channels", in.fmt.channels},
                            {"channel_names", in.channel_names},
                            {"mpp_x", in.mpp_x},
                            {"mpp_y", in.mpp_y},
                            {"levels", levels},
                            {"associated", assoc},
                            {"objective_power", in.objective_power},
                            {"properties", props},
                            {"vendor_properties", vendor}};
  std::cout << dump_json(o) << "\n";
}

}  // namespace

int cmd_info(int argc, char** argv) {
  Args a("info", argc, argv, 2,
         {{"json", "", "print JSON instead of text"},
          {"reader", "R", "auto, tiff or openslide (default auto)"},
          {"help", "", "show this help"}});
  if (a.has("help")) {
    std::cout << "usage: tilewave info INPUT [--json] [--reader auto|tiff|openslide]\n\n" << a.options_help();
    return 0;
  }
  if (a.positional().size() != 1) throw UsageError("info takes one INPUT (see tilewave info --help)");
  const SourcePtr src = open_source(a.positional()[0], parse_reader(a.str("reader", "auto")));
  if (a.has("json"))
    print_json(src->info());
  else
    print_text(src->info());
  return 0;
}

}  // namespace tw::cli
