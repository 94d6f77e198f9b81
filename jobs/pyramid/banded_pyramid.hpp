#pragma once
// One slide's pyramid split over ranks by bands of rows (issue 20: `mpirun
// -np N tilewave pyramid IN OUT`, or several GPUs of one process), writing
// the file a single process writes, byte for byte.
//
// Level 0 is cut into bands of 2^K tiles' rows (K: the shared levels, as
// many as leave every rank at least two bands), handed out in contiguous
// runs. Each rank runs the ordinary streaming pass over its rows plus a few
// ghost rows above and below (2 rows of each level for the 5-tap REDUCE:
// about 2^(K+1) rows of level 0, read again from the shared input rather
// than exchanged), and makes levels 0..K of its rows exactly. Its tiles go
// to rank 0 tagged with the level-0 band (token) whose pass finished them;
// rank 0 keeps them in a scratch file, makes the levels below K from the
// whole level K (small: 1/4^K of the pixels), and writes every tile in the
// order a single pass writes them — token by token, level 0 first, each
// level's band after the one above — so offsets and bytes are identical.
#include "engine/pyramid_sink.hpp"
#include "engine/ranks/ranks.hpp"
#include "engine/tile_source.hpp"
#include "jobs/pyramid/pyramid_job.hpp"

namespace tw {

// Every rank calls it with the same source and options. Rank 0's sink
// writes the output; the others' sinks only encode (their write() is never
// called; the caller gives them one that writes nowhere it matters). A
// failure on any rank ends every rank's call with an error (rank 0's names
// the failing rank); no rank waits forever on another.
PyramidStats run_pyramid_banded(const TileSource& src, PyramidSink& sink, const PyramidJobOptions& opt, Ranks& ranks);

}  // namespace tw
