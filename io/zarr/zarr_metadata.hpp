#pragma once
// The JSON of an OME-Zarr 0.4 image (https://ngff.openmicroscopy.org/0.4/)
// in a Zarr v2 store: the group's .zattrs (multiscales, omero) and each
// level's .zarray. Kept apart from the sink so tests check it directly.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "engine/pixel.hpp"
#include "io/zarr/zarr_chunk.hpp"

namespace tw {

struct ZarrImageSpec {
  std::string name;  // multiscales' name (the store's, without .zarr)
  PixelFormat fmt;
  int64_t chunk = 256;                              // the pass's tile: chunks [C, chunk, chunk]
  std::vector<std::pair<int64_t, int64_t>> levels;  // (width, height), level 0 first, each half the one before
  ZarrCompression compression;
  double mpp_x = 0, mpp_y = 0;             // 0: unknown (scales in pixels, no unit)
  std::vector<std::string> channel_names;  // the source's; empty: named here
  // The scanner's metadata, which OME-Zarr 0.4 has no field for: kept in
  // .zattrs under "tilewave" (omitted when both are unknown / empty).
  double objective_power = 0;
  std::vector<std::pair<std::string, std::string>> vendor_properties;
};

// "|u1", "<u2", "<u4", "<i4", "<f4".
const char* zarr_dtype(SampleType t);
// L/.zarray.
nlohmann::json zarr_array_json(const ZarrImageSpec& s, size_t level);
// The group's .zattrs.
nlohmann::json ome_zarr_attrs(const ZarrImageSpec& s);

}  // namespace tw
