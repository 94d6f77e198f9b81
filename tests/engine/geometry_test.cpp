#include "engine/geometry.hpp"

#include <gtest/gtest.h>

#include "engine/border.hpp"
#include "engine/error.hpp"
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

}  // namespace
}  // namespace tw
