#pragma once
// The OME-XML an OME-TIFF we write carries in its first ImageDescription (schema
// 2016-06): one Image per series, its Pixels, Channels and the TiffData that
// map its planes to the file's directories. Written with libxml2's
// xmlTextWriter, which escapes names and descriptions for us.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "engine/pixel.hpp"

namespace tw {

struct OmeImage {
  std::string name;  // Image Name ("label", "macro", or the pyramid's)
  std::string description;
  int64_t width = 0, height = 0;
  PixelFormat fmt;
  // One directory of fmt.channels samples (an RGB plane: one Channel with
  // SamplesPerPixel 3) rather than one directory per channel.
  bool interleaved = false;
  double mpp_x = 0, mpp_y = 0;             // 0: unknown, no PhysicalSize
  std::vector<std::string> channel_names;  // empty, or one per channel
  int first_ifd = 0;                       // index of its first directory in the main chain
  // Written as an Instrument's Objective (NominalMagnification) that the
  // Image references, and as a MapAnnotation of the Image: 0 / empty = none.
  double objective_power = 0;
  std::vector<std::pair<std::string, std::string>> vendor_properties;
};

const char* ome_pixel_type(SampleType t);  // "uint8", "uint16", "uint32", "float"

// The whole document, UTF-8. Throws InternalError if libxml2 fails.
std::string ome_xml(const std::vector<OmeImage>& images, const std::string& creator);

}  // namespace tw
