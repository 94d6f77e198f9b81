#pragma once
// The Deep Zoom sink: re-tiles the pyramid pass's tiles (its grid, e.g.
// 256 x 256, levels numbered from full size) into Deep Zoom's grid (any tile
// size, an overlap, levels numbered from 1x1: io/dzi/dzi_geometry.hpp) and
// writes each tile as a JPEG or PNG file, or all of them as one zip.
//
// Memory stays bounded: a pass tile is kept only until every Deep Zoom tile
// that overlaps it has been cut (each Deep Zoom tile counts the pass tiles
// it still lacks, each pass tile the Deep Zoom tiles still to be cut from
// it), so a level holds about two rows of pass tiles. Cutting and encoding
// run as TBB tasks on all threads; write() helps with them when too many
// wait, which bounds the queue without blocking a thread.
#include <memory>

#include "engine/pyramid_sink.hpp"
#include "io/open_sink.hpp"

namespace tw {

// InputError now (before any work) for what Deep Zoom cannot hold.
std::unique_ptr<PyramidSink> make_dzi_sink(const SinkRequest& r);

// What the sink holds at most (pass tiles waiting for their neighbours, the
// task queue), for the budget check before it is made.
size_t dzi_sink_memory_bytes(const SinkRequest& r);

}  // namespace tw
