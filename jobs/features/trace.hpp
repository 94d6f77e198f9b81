#pragma once
// An object's outline as polygons along its pixels' edges (pixel corners in
// level-0 coordinates), for GeoJSON: every boundary edge of the object's
// mask, directed with the object on its right (y down), linked into rings.
//
// Where two object pixels meet only at a corner, the ring turns towards the
// pixel it came along (the object is taken as 4-connected there), and a ring
// that then passes the same corner twice is cut there into simple rings: an
// outer ring (positive shoelace area, counter-clockwise in the numbers as
// RFC 7946 asks) and a hole (negative) touching it at that one point, which
// OGC/JTS (QuPath) accept, where a self-touching ring they reject. The
// rings' area is exactly the object's pixel count.
#include <cstdint>
#include <utility>
#include <vector>

namespace tw::features {

using Corner = std::pair<int64_t, int64_t>;  // (x, y) of a pixel corner
using Ring = std::vector<Corner>;            // corners only, not repeated at the end

struct Polygon {
  Ring shell;               // positive shoelace area
  std::vector<Ring> holes;  // negative
};

// The polygons of the pixels where mask (w x h, row-major, non-zero = the
// object) is set; (ox, oy) is the level-0 position of the mask's (0, 0).
// Several pieces: one polygon each, in raster order of their first corner.
std::vector<Polygon> trace_polygons(const uint8_t* mask, int64_t w, int64_t h, int64_t ox, int64_t oy);

// Twice the ring's signed (shoelace) area.
int64_t twice_area(const Ring& r);

}  // namespace tw::features
