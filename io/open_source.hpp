#pragma once
// Opens what the user names on the command line: a file path (TIFF via
// libtiff, vendor slides via OpenSlide) or "synthetic:WxH[,...]".
#include <string>

#include "engine/tile_source.hpp"

namespace tw {

enum class ReaderChoice { kAuto, kTiff, kOpenSlide };
ReaderChoice parse_reader(const std::string& s);

// kAuto: libtiff for plain and Aperio TIFFs whose pixels it can decode (raw
// tiles can then pass through), OpenSlide for every other vendor format.
SourcePtr open_source(const std::string& spec, ReaderChoice reader = ReaderChoice::kAuto);

}  // namespace tw
