#pragma once
// Reads of one source shared by the consumers that ask for the same region
// one after another on one thread: the channels of an op run per channel
// (engine/channel_split.hpp) each read the input over the same rects, and
// without this a computed input was computed once per channel — for a
// chain of per-channel steps on 8 channels, 8 x 8 x 8 times per region (a
// file's reader has a tile cache of its own). Each thread keeps its last
// read (level, rect, pixels); a read of that exact region again is a copy.
// Pixels are the source's own, so results are unchanged; memory is one
// region per thread that reads (reads come in pieces of a few MB:
// engine/read_pieces.hpp).
#include <memory>

#include "engine/tile_source.hpp"

namespace tw {

std::shared_ptr<const TileSource> memoize_last_read(std::shared_ptr<const TileSource> src);

}  // namespace tw
