#pragma once
// Channels apart and together again: how an op defined per channel takes an
// image of any number of channels (multiplex slides of 5 to 64) without a
// kernel instantiated for each count. The op runs on each channel as a
// single-channel image and the results are interleaved, so an N-channel
// result equals the op run on each channel alone, by construction.
// Costs: each channel's op reads the input over the same regions, one
// after another on one thread, and all but the first copy the first's read
// (engine/read_memo.hpp): each input tile is decoded once; memory is the
// op's, per channel, while a tile is computed.
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "engine/tile_source.hpp"

namespace tw {

// Channel `index` of src as a single-channel image of its sample type (a
// copy of the samples: the same bits on every backend).
std::shared_ptr<const TileSource> channel_source(std::shared_ptr<const TileSource> src, int index);

// The channels of `parts` (all of one size and sample type) interleaved in
// order: channel 0 of parts[0], ..., then parts[1]'s. `names`: the result's
// channel names (empty: none).
std::shared_ptr<const TileSource> join_channels(std::vector<std::shared_ptr<const TileSource>> parts,
                                                const std::string& name, std::vector<std::string> names = {});

// fn on each channel of src alone, the results joined (src itself when it
// has one channel). The result keeps src's channel names when fn keeps one
// channel per channel.
std::shared_ptr<const TileSource> per_channel(
    const std::shared_ptr<const TileSource>& src,
    const std::function<std::shared_ptr<const TileSource>(const std::shared_ptr<const TileSource>&)>& fn,
    const std::string& name);

}  // namespace tw
