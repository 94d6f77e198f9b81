#include "engine/read_memo.hpp"

#include <atomic>
#include <cstring>
#include <vector>

namespace tw {
namespace {

// A thread's last read: whose (by id, never reused: an address could be),
// where, and its bytes, packed rows.
struct LastRead {
  uint64_t owner = 0;
  int level = -1;
  Rect rect;
  std::vector<uint8_t> bytes;
};
thread_local LastRead t_last;

std::atomic<uint64_t> g_next_id{1};

class MemoSource final : public TileSource {
 public:
  explicit MemoSource(std::shared_ptr<const TileSource> in) : in_(std::move(in)), id_(g_next_id.fetch_add(1)) {
    info_ = in_->info();
  }
  const RawTiles* raw_tiles() const override { return in_->raw_tiles(); }
  void set_read_cache(size_t bytes) const override { in_->set_read_cache(bytes); }
  size_t read_cache_for_level0() const override { return in_->read_cache_for_level0(); }
  size_t decode_unit_bytes(int level) const override { return in_->decode_unit_bytes(level); }
  void set_decode_budget(size_t bytes) const override { in_->set_decode_budget(bytes); }
  Image read_associated(const std::string& name) const override { return in_->read_associated(name); }

 protected:
  void read_inside(int level, const ImageView& dst) const override {
    const size_t row = static_cast<size_t>(dst.rect.w) * info_.fmt.bytes_per_pixel();
    LastRead& last = t_last;
    if (last.owner == id_ && last.level == level && last.rect == dst.rect) {
      for (int64_t y = 0; y < dst.rect.h; ++y)
        std::memcpy(dst.row_bytes(dst.rect.y + y), last.bytes.data() + static_cast<size_t>(y) * row, row);
      return;
    }
    // Forgotten first: if the read throws, no stale region stays behind.
    last.owner = 0;
    in_->read(level, dst);
    last.bytes.resize(row * static_cast<size_t>(dst.rect.h));
    for (int64_t y = 0; y < dst.rect.h; ++y)
      std::memcpy(last.bytes.data() + static_cast<size_t>(y) * row, dst.row_bytes(dst.rect.y + y), row);
    last.owner = id_, last.level = level, last.rect = dst.rect;
  }

 private:
  std::shared_ptr<const TileSource> in_;
  uint64_t id_;
};

}  // namespace

std::shared_ptr<const TileSource> memoize_last_read(std::shared_ptr<const TileSource> src) {
  return std::make_shared<MemoSource>(std::move(src));
}

}  // namespace tw
