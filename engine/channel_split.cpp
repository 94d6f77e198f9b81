#include "engine/channel_split.hpp"

#include <cstring>

#include "engine/error.hpp"
#include "engine/map_source.hpp"
#include "engine/read_memo.hpp"

namespace tw {
namespace {

// A MapSource that carries channel names.
class NamedMapSource : public OwningMapSource {
 public:
  NamedMapSource(std::vector<std::shared_ptr<const TileSource>> in, PixelFormat fmt, RowFn fn, std::string name,
                 std::vector<std::string> channel_names)
      : OwningMapSource(std::move(in), fmt, std::move(fn), std::move(name)) {
    info_.channel_names = std::move(channel_names);
  }
};

}  // namespace

std::shared_ptr<const TileSource> channel_source(std::shared_ptr<const TileSource> src, int index) {
  const PixelFormat f = src->info().fmt;
  TW_ASSERT(index >= 0 && index < f.channels);
  const size_t sb = sample_bytes(f.type), bpp = f.bytes_per_pixel();
  const size_t off = static_cast<size_t>(index) * sb;
  std::vector<std::string> names;
  if (static_cast<size_t>(index) < src->info().channel_names.size())
    names.push_back(src->info().channel_names[static_cast<size_t>(index)]);
  const std::string name = src->info().path + " channel " + std::to_string(index);
  return std::make_shared<NamedMapSource>(
      std::vector<std::shared_ptr<const TileSource>>{std::move(src)}, PixelFormat{f.type, 1},
      [sb, bpp, off](const std::vector<const uint8_t*>& in, uint8_t* out, int64_t, int64_t, int64_t n) {
        const uint8_t* p = in[0] + off;
        for (int64_t x = 0; x < n; ++x)
          std::memcpy(out + static_cast<size_t>(x) * sb, p + static_cast<size_t>(x) * bpp, sb);
      },
      name, std::move(names));
}

std::shared_ptr<const TileSource> join_channels(std::vector<std::shared_ptr<const TileSource>> parts,
                                                const std::string& name, std::vector<std::string> names) {
  TW_ASSERT(!parts.empty());
  const SampleType type = parts[0]->info().fmt.type;
  std::vector<size_t> bytes;  // bytes per pixel of each part
  int channels = 0;
  for (const auto& p : parts) {
    TW_ASSERT(p->info().fmt.type == type);
    channels += p->info().fmt.channels;
    bytes.push_back(p->info().fmt.bytes_per_pixel());
  }
  const PixelFormat out_fmt{type, channels};
  if (names.size() != static_cast<size_t>(channels)) names.clear();
  const size_t out_bpp = out_fmt.bytes_per_pixel();
  return std::make_shared<NamedMapSource>(
      std::move(parts), out_fmt,
      [bytes, out_bpp](const std::vector<const uint8_t*>& in, uint8_t* out, int64_t, int64_t, int64_t n) {
        size_t off = 0;
        for (size_t k = 0; k < in.size(); ++k) {
          const size_t b = bytes[k];
          for (int64_t x = 0; x < n; ++x)
            std::memcpy(out + static_cast<size_t>(x) * out_bpp + off, in[k] + static_cast<size_t>(x) * b, b);
          off += b;
        }
      },
      name, std::move(names));
}

std::shared_ptr<const TileSource> per_channel(
    const std::shared_ptr<const TileSource>& src,
    const std::function<std::shared_ptr<const TileSource>(const std::shared_ptr<const TileSource>&)>& fn,
    const std::string& name) {
  const int n = src->info().fmt.channels;
  if (n == 1) return fn(src);
  // The channels' ops read the same regions of src one after another: the
  // first decodes, the others copy (engine/read_memo.hpp).
  const auto shared = memoize_last_read(src);
  std::vector<std::shared_ptr<const TileSource>> parts;
  for (int c = 0; c < n; ++c) parts.push_back(fn(channel_source(shared, c)));
  return join_channels(std::move(parts), name, src->info().channel_names);
}

}  // namespace tw
