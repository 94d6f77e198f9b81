#pragma once
// Reads of one source shared by the consumers that ask for the same region
// one after another on one thread: the channels of an op run per channel
// (engine/channel_split.hpp) each read the whole input over the same rect,
// and without this each decoded every input tile once per channel (an
// 8-channel deflate TIFF dilated: eight inflations of every tile). Each
// thread keeps its last read (level, rect, pixels); a read of that exact
// region again is a copy. Pixels are the source's own, so results are
// unchanged; memory is one region per thread that reads.
#include <memory>

#include "engine/tile_source.hpp"

namespace tw {

std::shared_ptr<const TileSource> memoize_last_read(std::shared_ptr<const TileSource> src);

}  // namespace tw
