#pragma once
// The server's URLs, parsed strictly from the decoded request path: slide
// names must be ones the server was given and numbers plain decimal integers
// (no sign, no leading zeros, at most 9 digits), so a request can only name
// something the server holds — nothing in a URL is ever used as a file path.
//   /, /?slide=NAME                    the viewer page of the first slide, or of NAME
//   /list                              the list of slides (HTML)
//   /slides                            the list as JSON (name, dzi, size, mpp)
//   /slides/NAME.dzi                   Deep Zoom descriptor
//   /slides/NAME_files/L/C_R.jpeg|png  a tile
//   /overlays/NAME.dzi, /overlays/NAME_files/L/C_R.png   the outline layer
//   /view/NAME                         the viewer page (as /?slide=NAME)
//   /viewer/FILE, /viewer/images/FILE  the viewer's scripts and button images
#include <cstdint>
#include <string>

#include "tools/serve/tile_encode.hpp"

namespace tw::serve {

struct Route {
  enum Kind { kNotFound, kIndex, kList, kSlideList, kDescriptor, kTile, kViewer, kAsset } kind = kNotFound;
  std::string name;      // slide name (kDescriptor, kTile, kViewer) or asset path (kAsset)
  bool overlay = false;  // /overlays/...
  int64_t level = 0, col = 0, row = 0;
  TileFormat format = TileFormat::kJpeg;
};

// Shape only: the caller checks that the slide exists and the tile is in its grid.
Route parse_route(const std::string& path);

// A non-negative decimal integer of 1..9 digits, no leading zeros; -1 otherwise.
int64_t parse_index(const std::string& s);

}  // namespace tw::serve
