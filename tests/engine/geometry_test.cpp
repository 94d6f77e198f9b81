#include "engine/geometry.hpp"

#include <gtest/gtest.h>

#include <cstring>

#include "engine/border.hpp"
#include "engine/error.hpp"
#include "engine/image.hpp"
#include "engine/memory.hpp"

namespace tw {
namespace {

TEST(Rect, IntersectGrowContain) {
  const Rect a(10, 20, 30, 40);
  EXPECT_EQ(a.x1(), 40);
  EXPECT_EQ(a.y1(), 60);
  EXPECT_EQ(a.grown(2), Rect(8, 18, 34, 44));
  EXPECT_EQ(a.intersect(Rect(0, 0, 15, 25)), Rect(10, 20, 5, 5));
  EXPECT_TRUE(a.intersect(Rect(100, 100, 5, 5)).empty());
  EXPECT_TRUE(a.contains(Rect(10, 20, 30, 40)));
  EXPECT_FALSE(a.contains(Rect(9, 20, 30, 40)));
  EXPECT_TRUE(a.contains(39, 59));
  EXPECT_FALSE(a.contains(40, 59));
}

TEST(TileGrid, PartialEdgeTiles) {
  const TileGrid g{1000, 513, 256, 256};
  EXPECT_EQ(g.cols(), 4);
  EXPECT_EQ(g.rows(), 3);
  EXPECT_EQ(g.tile_rect(3, 2), Rect(768, 512, 232, 1));
  EXPECT_EQ(g.tile_full_rect(3, 2), Rect(768, 512, 256, 256));
}

// The mirror rules against numpy.pad's definitions, for any distance.
TEST(Border, IndexMapping) {
  // reflect101 of n=4, i = -6..9: numpy.pad(range(4), mode='reflect').
  const int64_t r101[] = {0, 1, 2, 3, 2, 1, 0, 1, 2, 3, 2, 1, 0, 1, 2, 3};
  for (int i = -6; i < 10; ++i) EXPECT_EQ(border_index(i, 4, BorderMode::kReflect101), r101[i + 6]) << i;
  EXPECT_EQ(border_index(-1, 4, BorderMode::kReflect101), 1);
  EXPECT_EQ(border_index(-2, 4, BorderMode::kReflect101), 2);
  EXPECT_EQ(border_index(-3, 4, BorderMode::kReflect101), 3);
  EXPECT_EQ(border_index(-4, 4, BorderMode::kReflect101), 2);
  EXPECT_EQ(border_index(4, 4, BorderMode::kReflect101), 2);
  EXPECT_EQ(border_index(5, 4, BorderMode::kReflect101), 1);
  EXPECT_EQ(border_index(9, 4, BorderMode::kReflect101), 3);
  EXPECT_EQ(border_index(-7, 1, BorderMode::kReflect101), 0);
  EXPECT_EQ(border_index(-1, 2, BorderMode::kReflect101), 1);
  EXPECT_EQ(border_index(-2, 2, BorderMode::kReflect101), 0);
  EXPECT_EQ(border_index(2, 2, BorderMode::kReflect101), 0);
  // reflect (edge repeated): ... 1 0 | 0 1 2 3 | 3 2 ...
  EXPECT_EQ(border_index(-1, 4, BorderMode::kReflect), 0);
  EXPECT_EQ(border_index(-2, 4, BorderMode::kReflect), 1);
  EXPECT_EQ(border_index(4, 4, BorderMode::kReflect), 3);
  EXPECT_EQ(border_index(9, 4, BorderMode::kReflect), 1);
  EXPECT_EQ(border_index(-3, 1, BorderMode::kReflect), 0);
  EXPECT_EQ(border_index(-5, 4, BorderMode::kReplicate), 0);
  EXPECT_EQ(border_index(50, 4, BorderMode::kReplicate), 3);
  EXPECT_EQ(border_index(-1, 4, BorderMode::kConstant), -1);
}

TEST(Memory, ParseByteSize) {
  EXPECT_EQ(parse_byte_size("1G"), size_t{1} << 30);
  EXPECT_EQ(parse_byte_size("512M"), size_t{512} << 20);
  EXPECT_EQ(parse_byte_size("64MiB"), size_t{64} << 20);
  EXPECT_EQ(parse_byte_size("300k"), size_t{300} << 10);
  EXPECT_EQ(parse_byte_size("1.5G"), size_t{3} << 29);
  EXPECT_EQ(parse_byte_size("4096"), 4096u);
  for (const char* bad : {"", "G", "12Q", "-5M", "0", "1e30G"}) EXPECT_THROW(parse_byte_size(bad), InputError) << bad;
}

// A GPU op's read pieces follow the run's --memory: four lanes' pinned
// buffers in and out (8 pieces) within a quarter of it, 256 KB to 16 MB.
TEST(Memory, GpuReadPiecesFollowTheBudget) {
  const size_t before = gpu_read_piece_bytes();
  set_gpu_piece_budget(size_t{4} << 20);
  EXPECT_EQ(gpu_read_piece_bytes(), size_t{256} << 10);
  set_gpu_piece_budget(size_t{64} << 20);
  EXPECT_EQ(gpu_read_piece_bytes(), size_t{2} << 20);
  EXPECT_LE(8 * gpu_read_piece_bytes(), (size_t{64} << 20) / 4);
  set_gpu_piece_budget(size_t{48} << 30);
  EXPECT_EQ(gpu_read_piece_bytes(), size_t{16} << 20);
  set_gpu_piece_budget(before * 32);
  EXPECT_EQ(gpu_read_piece_bytes(), before);
}

// Freed buffers of 2 MB and more are kept for the next of their size, within
// a 16th of the run's budget (256 MB at most), the oldest going first; none
// before a budget is set; release_free_heap() drops them.
TEST(Memory, BigBuffersAreKeptWithinTheirLimit) {
  const size_t mib = size_t{1} << 20;
  set_big_buffer_budget(0);
  void* a = take_big_buffer(3 * mib);
  give_big_buffer(a, 3 * mib);
  EXPECT_EQ(big_buffers_kept_bytes(), 0u);

  set_big_buffer_budget(64 * mib);  // keeps 4 MB
  a = take_big_buffer(3 * mib);
  std::memset(a, 1, 3 * mib);
  give_big_buffer(a, 3 * mib);
  EXPECT_EQ(big_buffers_kept_bytes(), 3 * mib);
  void* b = take_big_buffer(3 * mib - 100);  // rounds to the same size
  EXPECT_EQ(b, a);
  EXPECT_EQ(big_buffers_kept_bytes(), 0u);
  give_big_buffer(b, 3 * mib - 100);
  void* c = take_big_buffer(2 * mib);  // another size: a new one
  EXPECT_NE(c, a);
  give_big_buffer(c, 2 * mib);  // the oldest (3 MB) goes
  EXPECT_EQ(big_buffers_kept_bytes(), 2 * mib);
  void* big = take_big_buffer(5 * mib);  // over the limit: freed when given
  give_big_buffer(big, 5 * mib);
  EXPECT_EQ(big_buffers_kept_bytes(), 2 * mib);

  // Images take theirs from it: a band made again reuses the last one's memory.
  const uint8_t* first = nullptr;
  {  // 1024 x 2048 u8: 2 MB exactly
    Image img(kGray8, Rect(0, 0, 1024, 2048));
    first = img.ptr<uint8_t>(0, 0);
  }
  {
    Image img(kGray8, Rect(0, 0, 1024, 2048));
    EXPECT_EQ(img.ptr<uint8_t>(0, 0), first);
    Image small(kGray8, Rect(0, 0, 64, 64));  // under 2 MB: plain malloc, not kept
  }
  EXPECT_EQ(big_buffers_kept_bytes(), 2 * mib);  // both images took c's 2 MB and gave it back
  release_free_heap();
  EXPECT_EQ(big_buffers_kept_bytes(), 0u);

  set_big_buffer_budget(size_t{64} << 30);  // capped at 256 MB
  void* d = take_big_buffer(200 * mib);
  give_big_buffer(d, 200 * mib);
  EXPECT_EQ(big_buffers_kept_bytes(), 200 * mib);
  void* e = take_big_buffer(100 * mib);
  give_big_buffer(e, 100 * mib);
  EXPECT_EQ(big_buffers_kept_bytes(), 100 * mib);
  set_big_buffer_budget(0);
  EXPECT_EQ(big_buffers_kept_bytes(), 0u);
}

}  // namespace
}  // namespace tw
