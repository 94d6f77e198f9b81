#pragma once
// What the TIFF reader takes from an OME-TIFF's OME-XML (the first
// ImageDescription): how many images it holds, the plane sizes, which IFD
// holds which plane, and the channel names. Parsed with libxml2; the rules
// follow the OME data model's TiffData element (OME 2016-06 schema).
// (io/tiff/ome_xml_writer.hpp writes the OME-XML of our outputs.)
#include <cstdint>
#include <string>
#include <vector>

namespace tw {

struct OmeChannel {
  std::string name;  // "" where the file gives none
  int samples_per_pixel = 1;
};

// An <Image> after the first: a label or macro image (as Bio-Formats and
// our OME-TIFF writer store them), or another series.
struct OmeOtherImage {
  std::string name;
  int64_t ifd = -1;  // its first TiffData's IFD; -1 when none is given
};

struct OmePixels {
  int images = 0;                     // <Image> elements: series of the file
  std::vector<OmeOtherImage> others;  // the Images after the first
  int64_t size_x = 0, size_y = 0;
  int64_t size_c = 1, size_z = 1, size_t_ = 1;
  std::string dimension_order = "XYCZT";
  std::string type;  // "uint8", "uint16", "float", ...
  std::vector<OmeChannel> channels;
  // IFD of each plane, planes in DimensionOrder (SizeC / samples, Z, T);
  // -1 where no TiffData maps the plane.
  std::vector<int64_t> plane_ifd;
  // A TiffData that points into another file (a multi-file OME-TIFF set):
  // that file's name (or UUID); empty when all planes are in this file.
  std::string other_file;
};

// True when a description is OME-XML (an <OME element near its start).
bool looks_like_ome(const std::string& description);

// Parses the OME-XML of `path` (for messages, and to tell this file's own
// name from another file's) and maps planes to IFDs for images of
// `samples_per_pixel` samples per IFD. InputError, naming the file, for XML
// that is malformed or a Pixels element whose sizes are missing or absurd.
OmePixels parse_ome_xml(const std::string& xml, const std::string& path, int samples_per_pixel);

}  // namespace tw
