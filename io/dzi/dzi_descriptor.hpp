#pragma once
// The Deep Zoom descriptor (OUT.dzi): Microsoft's DZI schema, as OpenSeadragon
// and vips dzsave read and write it.
#include <cstdint>
#include <string>

namespace tw {

// <Image xmlns=".../deepzoom/2008" Format TileSize Overlap><Size Width Height/></Image>,
// written with libxml2's xmlTextWriter.
std::string dzi_descriptor(int64_t width, int64_t height, int64_t tile, int overlap, const std::string& format);

}  // namespace tw
