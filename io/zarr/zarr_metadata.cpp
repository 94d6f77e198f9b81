#include "io/zarr/zarr_metadata.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "io/vendor_metadata.hpp"

namespace tw {
namespace {

using nlohmann::json;

// A display window over the sample type's whole range: we know the type,
// not the content's range. Floats are taken as 0..1 (our ops' results).
std::pair<double, double> type_range(SampleType t) {
  switch (t) {
    case SampleType::kU8:
      return {0, 255};
    case SampleType::kU16:
      return {0, 65535};
    case SampleType::kU32:
      return {0, 4294967295.0};
    case SampleType::kI32:
      return {-2147483648.0, 2147483647.0};
    case SampleType::kF32:
      return {0, 1};
  }
  return {0, 1};
}

json compressor_json(const ZarrCompression& c) {
  switch (c.codec) {
    case Codec::kDeflate:
      // numcodecs' Zlib takes levels 0..9; libdeflate's 10..12 make the
      // same zlib stream format, so the level is only informative.
      return {{"id", "zlib"}, {"level", std::min(c.effective_level(), 9)}};
    case Codec::kZstd:
      return {{"id", "zstd"}, {"level", c.effective_level()}};
    default:
      return nullptr;
  }
}

json channels_json(const ZarrImageSpec& s) {
  const int C = s.fmt.channels;
  const bool rgb = C == 3 && s.channel_names.empty();
  static const char* const kRgb[] = {"red", "green", "blue"};
  static const char* const kRgbColor[] = {"FF0000", "00FF00", "0000FF"};
  // Fluorescence-like order: DAPI first, then the common dyes' colours.
  static const char* const kPalette[] = {"0000FF", "00FF00", "FF0000", "FF00FF", "00FFFF", "FFFF00", "FFFFFF"};
  const auto [lo, hi] = type_range(s.fmt.type);
  json channels = json::array();
  for (int c = 0; c < C; ++c) {
    std::string label;
    if (static_cast<size_t>(c) < s.channel_names.size() && !s.channel_names[static_cast<size_t>(c)].empty())
      label = s.channel_names[static_cast<size_t>(c)];
    else if (rgb)
      label = kRgb[c];
    else if (C == 1)
      label = s.fmt.type == SampleType::kU32 ? "labels" : "gray";
    else
      label = "Channel " + std::to_string(c);
    const char* color = rgb ? kRgbColor[c] : C == 1 ? "FFFFFF" : kPalette[c % 7];
    channels.push_back({{"label", label},
                        {"color", color},
                        {"active", true},
                        {"coefficient", 1},
                        {"family", "linear"},
                        {"inverted", false},
                        {"window", {{"min", lo}, {"max", hi}, {"start", lo}, {"end", hi}}}});
  }
  return channels;
}

}  // namespace

const char* zarr_dtype(SampleType t) {
  switch (t) {
    case SampleType::kU8:
      return "|u1";
    case SampleType::kU16:
      return "<u2";
    case SampleType::kU32:
      return "<u4";
    case SampleType::kI32:
      return "<i4";
    case SampleType::kF32:
      return "<f4";
  }
  return "?";
}

json zarr_array_json(const ZarrImageSpec& s, size_t level) {
  const auto [w, h] = s.levels.at(level);
  json filters = nullptr;
  if (s.compression.delta)
    filters = json::array({{{"id", "delta"}, {"dtype", zarr_dtype(s.fmt.type)}, {"astype", zarr_dtype(s.fmt.type)}}});
  return {
      {"zarr_format", 2},
      {"shape", {s.fmt.channels, h, w}},
      {"chunks", {s.fmt.channels, s.chunk, s.chunk}},
      {"dtype", zarr_dtype(s.fmt.type)},
      {"compressor", compressor_json(s.compression)},
      {"fill_value", 0},
      {"order", "C"},
      {"filters", filters},
      // OME-Zarr 0.4 stores chunks nested ("L/c/y/x"): its image layout
      // says so, and napari's and vizarr's readers expect it.
      {"dimension_separator", "/"},
  };
}

json ome_zarr_attrs(const ZarrImageSpec& s) {
  const bool physical = plausible_mpp(s.mpp_x) && plausible_mpp(s.mpp_y);  // else scales in pixels
  json y = {{"name", "y"}, {"type", "space"}};
  json x = {{"name", "x"}, {"type", "space"}};
  if (physical) y["unit"] = x["unit"] = "micrometer";
  json datasets = json::array();
  for (size_t l = 0; l < s.levels.size(); ++l) {
    // Level L's pixel i is centred on level 0's pixel 2^L i (REDUCE keeps
    // the even samples; label levels take them by nearest): a scale alone,
    // no translation.
    const double f = std::ldexp(1.0, static_cast<int>(l));
    const double sy = physical ? s.mpp_y * f : f, sx = physical ? s.mpp_x * f : f;
    datasets.push_back({{"path", std::to_string(l)},
                        {"coordinateTransformations", json::array({{{"type", "scale"}, {"scale", {1.0, sy, sx}}}})}});
  }
  const bool labels = s.fmt.type == SampleType::kU32;
  json multiscale = {
      {"version", "0.4"},
      {"name", s.name},
      {"axes", json::array({{{"name", "c"}, {"type", "channel"}}, y, x})},
      {"datasets", datasets},
      {"type", labels ? "nearest" : "gaussian"},
      {"metadata",
       {{"description", labels ? "labels taken by nearest (every other pixel)"
                               : "Burt-Adelson REDUCE: 5-tap binomial filter, every other pixel"},
        {"software", "Tilewave 0.1.0"}}},
  };
  json attrs = {
      {"multiscales", json::array({multiscale})},
      {"omero",
       {{"name", s.name},
        {"version", "0.4"},
        {"channels", channels_json(s)},
        {"rdefs", {{"model", s.fmt.channels == 1 ? "greyscale" : "color"}, {"defaultT", 0}, {"defaultZ", 0}}}}},
  };
  // Namespaced, as the NGFF spec leaves keys it does not define to
  // applications.
  json ours = json::object();
  if (s.objective_power > 0) ours["objective_power"] = s.objective_power;
  if (!s.vendor_properties.empty()) {
    json props = json::object();
    for (const auto& [k, v] : s.vendor_properties) props[k] = v;
    ours["properties"] = props;
  }
  if (!ours.empty()) attrs["tilewave"] = ours;
  return attrs;
}

}  // namespace tw
