// Morphological reconstruction, fill-holes and h-dome on the out-of-core
// wavefront engine, against scikit-image and scipy, across tile sizes that
// cut through structures, on the worst cases (a single seed spreading over
// thousands of tiles, a maze whose corridor crosses tile borders back and
// forth), and out of core.
#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <random>

#include "engine/bit_plane.hpp"
#include "engine/memory_source.hpp"
#include "jobs/pipeline/metered_source.hpp"
#include "jobs/reconstruct/binary_whole.hpp"
#include "jobs/reconstruct/reconstruct_job.hpp"
#include "kernels/reconstruct/bit_planes.hpp"
#include "tests/support/maze.hpp"
#include "tests/support/test_support.hpp"

namespace tw {
namespace {

Image copy_of(const Image& a) {
  Image b(a.fmt(), a.rect());
  copy_overlap(a.view(), b.view());
  return b;
}

// The definition itself: J = min(dilate(J), I) (or the dual) until stable.
template <class T>
Image naive(const Image& seed, const Image& mask, const ReconstructParams& p) {
  Image j = copy_of(seed);
  const int64_t W = j.rect().w, H = j.rect().h;
  const bool dil = p.method == ReconstructMethod::kDilation;
  for (bool changed = true; changed;) {
    changed = false;
    Image next = copy_of(j);
    for (int64_t y = 0; y < H; ++y)
      for (int64_t x = 0; x < W; ++x) {
        T v = j.ptr<T>(x, y)[0];
        for (int dy = -1; dy <= 1; ++dy)
          for (int dx = -1; dx <= 1; ++dx) {
            if (p.connectivity == 4 && dx && dy) continue;
            const int64_t qx = x + dx, qy = y + dy;
            if (qx < 0 || qy < 0 || qx >= W || qy >= H) continue;
            const T q = j.ptr<T>(qx, qy)[0];
            v = dil ? std::max(v, q) : std::min(v, q);
          }
        const T m = mask.ptr<T>(x, y)[0];
        v = dil ? std::min(v, m) : std::max(v, m);
        if (v != next.ptr<T>(x, y)[0]) next.ptr<T>(x, y)[0] = v, changed = true;
      }
    j = std::move(next);
  }
  return j;
}

// The tile wavefront; with `whole`, a binary 8-bit image whose planes fit
// the budget is solved whole on bit rows instead (binary_whole.hpp), and
// *solved_whole says whether it was.
Image run_tiled(const Image& seed, const Image& mask, const ReconstructParams& p, int64_t tile, size_t memory,
                WavefrontStats* st = nullptr, bool whole = false, bool* solved_whole = nullptr) {
  MemorySource s(copy_of(seed)), m(copy_of(mask));
  ReconstructJob job;
  job.params = p;
  job.tile = tile;
  job.memory = memory;
  job.whole_image_on_device = whole;
  job.scratch_near = "/tmp/tilewave-test";
  const ReconstructResult r = reconstruct(s, m, job);
  if (st) *st = r.wavefront;
  if (solved_whole) *solved_whole = r.whole_image;
  EXPECT_FALSE(r.on_gpu);
  return r.image->read(0, Rect(0, 0, mask.rect().w, mask.rect().h));
}

// A random mask and a marker below (above, for erosion) it.
std::pair<Image, Image> random_pair(PixelFormat fmt, int64_t w, int64_t h, bool dilation, uint64_t seed) {
  Image mask = test::pattern_image(fmt, w, h, seed);
  Image marker = copy_of(mask);
  std::mt19937_64 rng(seed);
  for (int64_t y = 0; y < h; ++y)
    for (int64_t x = 0; x < w; ++x) {
      const bool keep = rng() % 50 == 0;
      if (fmt.type == SampleType::kU8) {
        uint8_t& v = marker.ptr<uint8_t>(x, y)[0];
        v = keep ? v : (dilation ? 0 : 255);
      } else {
        uint16_t& v = marker.ptr<uint16_t>(x, y)[0];
        v = keep ? v : (dilation ? 0 : 65535);
      }
    }
  return {std::move(marker), std::move(mask)};
}

TEST(Reconstruct, MatchesDefinitionEveryVariant) {
  for (PixelFormat fmt : {kGray8, kGray16})
    for (ReconstructMethod m : {ReconstructMethod::kDilation, ReconstructMethod::kErosion})
      for (int conn : {4, 8}) {
        ReconstructParams p{m, conn};
        auto [seed, mask] = random_pair(fmt, 93, 71, m == ReconstructMethod::kDilation, 7 + conn);
        const Image want = fmt.type == SampleType::kU8 ? naive<uint8_t>(seed, mask, p) : naive<uint16_t>(seed, mask, p);
        Image whole = copy_of(seed);
        reconstruct_image(whole, mask, p);
        EXPECT_EQ(test::diff_images(whole.view(), want.view()), "") << fmt.str() << " conn " << conn;
        for (int64_t tile : {16, 23, 40, 67, 128}) {
          const Image got = run_tiled(seed, mask, p, tile, size_t{64} << 20);
          EXPECT_EQ(test::diff_images(got.view(), want.view()), "")
              << fmt.str() << " conn " << conn << " tile " << tile;
        }
      }
}

// scikit-image on real microscopy: the DAB channel of its IHC image, as
// grayscale (h-dome style markers) and thresholded (binary).
TEST(Reconstruct, MatchesScikitImageOnMicroscopy) {
  if (!test::python_has("skimage.morphology")) GTEST_SKIP() << "scikit-image missing";
  test::TempDir tmp;
  ASSERT_EQ(test::run_python(test::oracle("morph_oracle.py"), {"ihc", tmp.file("ihc.npy")}).exit_code, 0);
  const Image ihc = test::load_npy(tmp.file("ihc.npy"));
  Image binary = copy_of(ihc);
  for (int64_t y = 0; y < 512; ++y)
    for (int64_t x = 0; x < 512; ++x) binary.ptr<uint8_t>(x, y)[0] = ihc.ptr<uint8_t>(x, y)[0] < 120 ? 255 : 0;
  struct Case {
    const char* name;
    const Image* mask;
    int shift;  // marker = mask - shift (dilation) or + shift (erosion); -1: binary seeds
  };
  for (const Case& c : {Case{"gray h=40", &ihc, 40}, Case{"gray h=5", &ihc, 5}, Case{"binary", &binary, -1}})
    for (ReconstructMethod m : {ReconstructMethod::kDilation, ReconstructMethod::kErosion})
      for (int conn : {4, 8}) {
        const bool dil = m == ReconstructMethod::kDilation;
        Image seed = copy_of(*c.mask);
        for (int64_t y = 0; y < 512; ++y)
          for (int64_t x = 0; x < 512; ++x) {
            uint8_t& v = seed.ptr<uint8_t>(x, y)[0];
            if (c.shift >= 0)
              v = dil ? uint8_t(std::max(0, v - c.shift)) : uint8_t(std::min(255, v + c.shift));
            else
              v = ((x * 7 + y * 13) % 97 == 0) ? v : (dil ? 0 : 255);
          }
        test::save_npy(tmp.file("s.npy"), seed.view());
        test::save_npy(tmp.file("m.npy"), c.mask->view());
        const auto r = test::run_python(test::oracle("morph_oracle.py"),
                                        {"reconstruct", tmp.file("s.npy"), tmp.file("m.npy"),
                                         dil ? "dilation" : "erosion", std::to_string(conn), tmp.file("o.npy")});
        ASSERT_EQ(r.exit_code, 0) << r.err;
        const Image want = test::load_npy(tmp.file("o.npy"));
        ReconstructParams p{m, conn};
        for (int64_t tile : {37, 64, 67, 512}) {
          const Image got = run_tiled(seed, *c.mask, p, tile, size_t{64} << 20);
          EXPECT_EQ(test::diff_images(got.view(), want.view()), "")
              << c.name << (dil ? " dilation" : " erosion") << " conn " << conn << " tile " << tile;
        }
      }
}

// One seed pixel in an all-255 mask: the value must reach every one of
// thousands of tiles.
TEST(Reconstruct, WorstCaseSingleSeed) {
  Image mask(kGray8, Rect(0, 0, 1200, 900));
  for (int64_t y = 0; y < 900; ++y) std::memset(mask.row<uint8_t>(y), 255, 1200);
  Image seed(kGray8, mask.rect());
  seed.fill_zero();
  seed.ptr<uint8_t>(1199, 899)[0] = 77;
  WavefrontStats st;
  const Image got = run_tiled(seed, mask, {ReconstructMethod::kDilation, 8}, 16, size_t{64} << 20, &st);
  int64_t wrong = 0;
  for (int64_t y = 0; y < 900; ++y)
    for (int64_t x = 0; x < 1200; ++x) wrong += got.ptr<uint8_t>(x, y)[0] != 77;
  EXPECT_EQ(wrong, 0);
  EXPECT_EQ(st.tiles, 75 * 57);
  std::printf("[ info     ] single seed over %lld tiles: %lld visits\n", static_cast<long long>(st.tiles),
              static_cast<long long>(st.tile_visits));
}

// A serpentine maze: one corridor, 3 pixels wide, winding back and forth
// across tile borders; the seed at one end must reach the other, and walls
// must stay untouched.
TEST(Reconstruct, WorstCaseMaze) {
  const int64_t W = 403, H = 301;
  const Image mask = test::serpentine_maze(W, H);
  Image seed(kGray8, mask.rect());
  seed.fill_zero();
  seed.ptr<uint8_t>(1, 1)[0] = 150;
  for (int conn : {4, 8}) {
    WavefrontStats st;
    const Image got = run_tiled(seed, mask, {ReconstructMethod::kDilation, conn}, 32, size_t{64} << 20, &st);
    // The one corridor is connected: all of it takes the seed's value, walls stay 0.
    Image want = copy_of(mask);
    for (int64_t y = 0; y < H; ++y)
      for (int64_t x = 0; x < W; ++x) want.ptr<uint8_t>(x, y)[0] = mask.ptr<uint8_t>(x, y)[0] ? 150 : 0;
    EXPECT_EQ(test::diff_images(got.view(), want.view()), "") << "conn " << conn;
    std::printf("[ info     ] maze, %d-connected: %lld visits of %lld tiles\n", conn,
                static_cast<long long>(st.tile_visits), static_cast<long long>(st.tiles));
  }
}

TEST(Reconstruct, WorstCasesSmall) {
  for (auto [w, h] : {std::pair<int64_t, int64_t>{1, 1}, {1, 300}, {300, 1}, {17, 17}}) {
    auto [seed, mask] = random_pair(kGray8, w, h, true, 3);
    const Image want = naive<uint8_t>(seed, mask, {ReconstructMethod::kDilation, 8});
    EXPECT_EQ(
        test::diff_images(run_tiled(seed, mask, {ReconstructMethod::kDilation, 8}, 16, 1 << 24).view(), want.view()),
        "")
        << w << "x" << h;
  }
}

// Binary tiles (0 and the type's maximum only) take the bit-row path
// (kernels/reconstruct/binary_tile.cpp): random masks of every density,
// tiles whose rows end on either side of a 64-bit word, both methods and
// connectivities, 8- and 16-bit, against the definition.
template <class T>
Image random_binary(PixelFormat fmt, int64_t w, int64_t h, int density_pct, uint64_t seed) {
  Image a(fmt, Rect(0, 0, w, h));
  std::mt19937_64 rng(seed);
  for (int64_t y = 0; y < h; ++y)
    for (int64_t x = 0; x < w; ++x)
      a.ptr<T>(x, y)[0] = static_cast<int>(rng() % 100) < density_pct ? std::numeric_limits<T>::max() : T{0};
  return a;
}

template <class T>
void check_binary(PixelFormat fmt) {
  constexpr T kMax = std::numeric_limits<T>::max();
  const int64_t W = 211, H = 133;
  for (ReconstructMethod m : {ReconstructMethod::kDilation, ReconstructMethod::kErosion})
    for (int conn : {4, 8})
      for (int density : {45, 60, 75}) {
        const bool dil = m == ReconstructMethod::kDilation;
        const ReconstructParams p{m, conn};
        const uint64_t seed = static_cast<uint64_t>(density * 10 + conn) + (dil ? 0 : 5);
        Image mask = random_binary<T>(fmt, W, H, dil ? density : 100 - density, seed);
        // Marker: a few pixels of the spreading value where the mask allows it.
        Image marker = copy_of(mask);
        std::mt19937_64 rng(seed + 1);
        for (int64_t y = 0; y < H; ++y)
          for (int64_t x = 0; x < W; ++x) {
            T& v = marker.ptr<T>(x, y)[0];
            if (rng() % 400 != 0) v = dil ? T{0} : kMax;
          }
        const Image want = naive<T>(marker, mask, p);
        const std::string what = fmt.str() + (dil ? " dilation" : " erosion") + " conn " + std::to_string(conn) +
                                 " density " + std::to_string(density);
        for (int64_t tile : {16, 62, 63, 64, 65, 67, 126, 128, 130, 256}) {
          const Image got = run_tiled(marker, mask, p, tile, size_t{64} << 20);
          EXPECT_EQ(test::diff_images(got.view(), want.view()), "") << what << " tile " << tile;
        }
        // Solved whole on bit rows (8-bit only), in bands of 256 rows on
        // every thread: one band here, several on a taller image below.
        bool whole = false;
        const Image got = run_tiled(marker, mask, p, 64, size_t{64} << 20, nullptr, true, &whole);
        EXPECT_EQ(test::diff_images(got.view(), want.view()), "") << what << " (whole)";
        EXPECT_EQ(whole, sizeof(T) == 1) << what;
      }
}

// Whole-image bit rows over several bands (images taller than 256 rows a
// thread): random masks near the percolation threshold, widths on either
// side of a 32-bit word, both methods and connectivities, against the tile
// wavefront; fill-holes' own marker (the border) on blobs with holes.
TEST(ReconstructBinary, WholeImageBitRowsEqualTheTiles) {
  std::mt19937_64 rng(41);
  for (ReconstructMethod m : {ReconstructMethod::kDilation, ReconstructMethod::kErosion})
    for (int conn : {4, 8})
      for (const auto& [w, h] : {std::pair<int64_t, int64_t>{1000, 1900}, {31, 777}, {33, 1200}, {1, 700}, {700, 1}}) {
        const bool dil = m == ReconstructMethod::kDilation;
        const int density = conn == 8 ? 42 : 60;
        Image mask = random_binary<uint8_t>(kGray8, w, h, dil ? density : 100 - density, rng());
        Image marker = copy_of(mask);
        for (int64_t y = 0; y < h; ++y)
          for (int64_t x = 0; x < w; ++x)
            if (rng() % 300 != 0) marker.ptr<uint8_t>(x, y)[0] = dil ? 0 : 255;
        const ReconstructParams p{m, conn};
        const std::string what = std::string(dil ? "dilation " : "erosion ") + std::to_string(w) + "x" +
                                 std::to_string(h) + " conn " + std::to_string(conn);
        const Image tiles = run_tiled(marker, mask, p, 128, size_t{64} << 20);
        bool whole = false;
        const Image got = run_tiled(marker, mask, p, 128, size_t{64} << 20, nullptr, true, &whole);
        EXPECT_TRUE(whole) << what;
        EXPECT_EQ(test::diff_images(got.view(), tiles.view()), "") << what;
      }
  // Fill-holes: the image on its border, the maximum inside, by erosion.
  const int64_t w = 1501, h = 1003;
  Image img = random_binary<uint8_t>(kGray8, w, h, 55, 3), marker(kGray8, img.rect());
  for (int64_t y = 0; y < h; ++y)
    for (int64_t x = 0; x < w; ++x) {
      const bool edge = x == 0 || y == 0 || x == w - 1 || y == h - 1;
      marker.ptr<uint8_t>(x, y)[0] = edge ? img.ptr<uint8_t>(x, y)[0] : 255;
    }
  for (int conn : {4, 8}) {
    const ReconstructParams p{ReconstructMethod::kErosion, conn};
    bool whole = false;
    const Image got = run_tiled(marker, img, p, 128, size_t{64} << 20, nullptr, true, &whole);
    EXPECT_TRUE(whole);
    EXPECT_EQ(test::diff_images(got.view(), run_tiled(marker, img, p, 128, size_t{64} << 20).view()), "")
        << "fill-holes " << conn;
  }
  // Planes over half the budget: the tiles.
  bool whole = true;
  run_tiled(marker, img, {ReconstructMethod::kErosion, 4}, 128, size_t{512} << 10, nullptr, true, &whole);
  EXPECT_FALSE(whole);
}

TEST(ReconstructBinary, MatchesDefinition8Bit) {
  check_binary<uint8_t>(kGray8);
}
TEST(ReconstructBinary, MatchesDefinition16Bit) {
  check_binary<uint16_t>(kGray16);
}

// A serpentine corridor of columns, up one and down the next, within one
// tile needs a raster and an anti-raster pass for every two columns: more
// than the bit rows' passes allow (67 columns), so the byte rule finishes
// from where they stopped. Spreading the maximum keeps the tile binary.
TEST(ReconstructBinary, SerpentineOutlastsThePasses) {
  const int64_t W = 403, H = 301;
  const Image rows = test::serpentine_maze(H, W);
  Image mask(kGray8, Rect(0, 0, W, H));
  for (int64_t y = 0; y < H; ++y)
    for (int64_t x = 0; x < W; ++x) mask.ptr<uint8_t>(x, y)[0] = rows.ptr<uint8_t>(y, x)[0];
  for (int conn : {4, 8})
    for (int64_t tile : {32, 512}) {
      Image seed(kGray8, mask.rect());
      seed.fill_zero();
      seed.ptr<uint8_t>(1, 1)[0] = 255;
      Image bin = copy_of(mask);
      for (int64_t y = 0; y < H; ++y)
        for (int64_t x = 0; x < W; ++x) bin.ptr<uint8_t>(x, y)[0] = mask.ptr<uint8_t>(x, y)[0] ? 255 : 0;
      const Image got = run_tiled(seed, bin, {ReconstructMethod::kDilation, conn}, tile, size_t{64} << 20);
      EXPECT_EQ(test::diff_images(got.view(), bin.view()), "") << "conn " << conn << " tile " << tile;
      // Whole-image bit rows give up after their rounds: the tiles finish.
      bool whole = true;
      const Image w2 =
          run_tiled(seed, bin, {ReconstructMethod::kDilation, conn}, tile, size_t{64} << 20, nullptr, true, &whole);
      EXPECT_FALSE(whole) << "conn " << conn;
      EXPECT_EQ(test::diff_images(w2.view(), bin.view()), "") << "conn " << conn << " tile " << tile << " (whole)";
    }
}

// The GPU's binary rule packs tiles into bit planes on the host and writes
// back what turned on: every layout edge (widths around multiples of 32,
// the ring, a core not at the origin), any nonzero byte read as on; with
// `zeros` (erosion) the zero bytes are the set bits and what turned on is
// written back as 0.
TEST(BitPlanes, PackAndUnpack) {
  std::mt19937_64 rng(17);
  for (bool zeros : {false, true})
    for (int64_t w : {1, 7, 31, 32, 33, 64, 100, 257}) {
      const Rect core(40, 9, w, 5);
      Image j(kGray8, core.grown(1)), i(kGray8, core);
      for (int64_t y = core.y - 1; y <= core.y1(); ++y)
        for (int64_t x = core.x - 1; x <= core.x1(); ++x) {
          const uint64_t r = rng() % 4;
          j.ptr<uint8_t>(x, y)[0] = r == 0 ? 255 : r == 1 ? 3 : 0;
          if (core.contains(x, y)) i.ptr<uint8_t>(x, y)[0] = rng() % 3 ? 200 : 0;
        }
      const int pitch = bit_plane_pitch(w);
      std::vector<uint32_t> on(static_cast<size_t>(pitch * (core.h + 2)), 0xdeadbeef), allowed(on.size(), 0xdeadbeef);
      pack_tile_bits(j.view(), i.view(), core, on.data(), allowed.data(), zeros);
      auto bit = [&](const std::vector<uint32_t>& p, int64_t x, int64_t y) {  // image coordinates
        const int64_t ry = y - core.y + 1, lx = x - core.x;
        const int64_t k = lx < 0 ? 0 : lx / 32 + 1, b = lx < 0 ? 31 : lx % 32;
        return (p[static_cast<size_t>(ry * pitch + k)] >> b) & 1u;
      };
      int64_t set_on = 0, set_allowed = 0;
      for (int64_t y = core.y - 1; y <= core.y1(); ++y)
        for (int64_t x = core.x - 1; x <= core.x1(); ++x) {
          ASSERT_EQ(bit(on, x, y), (j.ptr<uint8_t>(x, y)[0] != 0) != zeros) << w << " " << x << "," << y;
          const bool a = core.contains(x, y) && (i.ptr<uint8_t>(x, y)[0] != 0) != zeros;
          if (x < core.x1()) {
            ASSERT_EQ(bit(allowed, x, y), a) << w << " " << x << "," << y;
          }
          set_on += bit(on, x, y), set_allowed += a;
        }
      int64_t total_on = 0, total_allowed = 0;
      for (size_t k = 0; k < on.size(); ++k)
        total_on += __builtin_popcount(on[k]), total_allowed += __builtin_popcount(allowed[k]);
      EXPECT_EQ(total_on, set_on) << "bits beyond the ring";
      EXPECT_EQ(total_allowed, set_allowed) << "bits outside the core";
      // Turn on some allowed pixels (and, wrongly, the ring's right column:
      // unpacking writes core pixels only).
      std::vector<uint32_t> after = on;
      Image want(kGray8, j.rect());
      copy_overlap(j.view(), want.view());
      int64_t turned = 0;
      for (int64_t y = core.y; y < core.y1(); ++y)
        for (int64_t x = core.x; x < core.x1(); ++x)
          if (bit(allowed, x, y) && !bit(on, x, y) && rng() % 2) {
            const int64_t lx = x - core.x;
            after[static_cast<size_t>((y - core.y + 1) * pitch + lx / 32 + 1)] |= 1u << (lx % 32);
            want.ptr<uint8_t>(x, y)[0] = zeros ? 0 : 255, ++turned;
          }
      if (w % 32) after[static_cast<size_t>(pitch + w / 32 + 1)] |= 1u << (w % 32);
      EXPECT_EQ(unpack_new_bits(on.data(), after.data(), j.view(), core, zeros), turned) << w << " zeros " << zeros;
      EXPECT_EQ(test::diff_images(j.view(), want.view()), "") << w << " zeros " << zeros;
    }
}

// The whole-image GPU path's row helpers (binary_whole.cpp): a row packed
// and read back at any offset and length, both polarities, words past the
// row zero; only 0 and 255 count as binary.
TEST(BitPlanes, RowsPackUnpackAndBinaryCheck) {
  std::mt19937_64 rng(19);
  for (int64_t n : {1, 31, 32, 33, 95, 257})
    for (bool zeros : {false, true}) {
      std::vector<uint8_t> row(static_cast<size_t>(n));
      for (auto& v : row) v = rng() % 2 ? 255 : 0;
      const int64_t words = (n + 31) / 32 + 2;
      std::vector<uint32_t> plane(static_cast<size_t>(words + 1), 0xdeadbeef);
      plane[0] = 0;  // word 0: the ring pixel, left to the caller
      pack_row_bits(row.data(), n, plane.data() + 1, words, zeros);
      int64_t set = 0;
      for (size_t k = 1; k < plane.size(); ++k) set += __builtin_popcount(plane[k]);
      int64_t want = 0;
      for (uint8_t v : row) want += (v != 0) != zeros;
      EXPECT_EQ(set, want) << "n " << n << ": bits past the row";
      // Every start (on and off a byte of bits), to the end and shorter.
      for (int64_t x0 = 0; x0 < n; ++x0)
        for (int64_t len : {n - x0, (n - x0) / 2, std::min<int64_t>(n - x0, 9)}) {
          std::vector<uint8_t> back(static_cast<size_t>(len) + 1, 7);
          unpack_row_bits(plane.data(), x0, len, back.data(), zeros ? 0 : 255, zeros ? 255 : 0);
          EXPECT_TRUE(std::equal(back.begin(), back.end() - 1, row.begin() + x0)) << "n " << n << " x0 " << x0;
          EXPECT_EQ(back.back(), 7) << "n " << n << " x0 " << x0 << " len " << len << ": wrote past the end";
        }
      EXPECT_TRUE(bytes_binary(row.data(), n));
      row[static_cast<size_t>(n - 1)] = 254;
      EXPECT_FALSE(bytes_binary(row.data(), n));
      row[static_cast<size_t>(n - 1)] = 1;
      EXPECT_FALSE(bytes_binary(row.data(), n));
    }
}

// A whole image's bit plane as a source (the whole-image GPU result): it
// reads as its bytes at any rect, in both polarities, and offers its bits
// (engine/bit_plane.hpp) with the values they read as; a pipeline step's
// meter counts a reader taking them as one visit of every pixel, and passes
// them on. A plane of the wrong size is refused.
TEST(BitPlanes, WholeImageSourceReadsAndOffersItsBits) {
  std::mt19937_64 rng(23);
  const int64_t w = 101, h = 37, pitch = bit_plane_pitch(w);
  for (bool zeros : {false, true}) {
    Image bytes(kGray8, Rect(0, 0, w, h));
    std::vector<uint32_t> plane(static_cast<size_t>(pitch * (h + 2)), 0);
    for (int64_t y = 0; y < h; ++y) {
      uint8_t* row = bytes.row<uint8_t>(y);
      for (int64_t x = 0; x < w; ++x) row[x] = rng() % 3 ? 255 : 0;
      pack_row_bits(row, w, plane.data() + (y + 1) * pitch + 1, pitch - 1, zeros);
    }
    const uint32_t* words = plane.data();
    const auto src = make_bit_plane_source(std::move(plane), w, h, zeros, SourceInfo{});
    EXPECT_EQ(src->info().fmt, kGray8);
    EXPECT_EQ(test::diff_images(src->read(0, bytes.rect()).view(), bytes.view()), "");
    const Rect part(33, 5, 40, 20);
    EXPECT_EQ(test::diff_images(src->read(0, part).view(), bytes.view().sub(part)), "");
    const BitPlane* b = src->bit_plane();
    ASSERT_NE(b, nullptr);
    EXPECT_EQ(b->words, words);  // the plane itself, not a copy
    EXPECT_EQ(b->pitch, pitch);
    EXPECT_EQ(b->width, w);
    EXPECT_EQ(b->height, h);
    EXPECT_EQ(b->on, zeros ? 0 : 255);
    EXPECT_EQ(b->off, zeros ? 255 : 0);

    auto meter = std::make_shared<StepMeter>();
    const MeteredSource metered(src, meter);
    EXPECT_EQ(metered.bit_plane(), b);
    EXPECT_EQ(meter->visits.load(), 1);
    EXPECT_EQ(meter->pixels.load(), w * h);
    EXPECT_EQ(metered.device_tiles(), nullptr);
  }
  MemorySource plain(Image(kGray8, Rect(0, 0, 8, 8)));
  EXPECT_EQ(plain.bit_plane(), nullptr);
  EXPECT_THROW(make_bit_plane_source(std::vector<uint32_t>(5), w, h, false, SourceInfo{}), InternalError);
}

TEST(Reconstruct, BadInput) {
  Image mask(kGray8, Rect(0, 0, 40, 30));
  mask.fill_zero();
  Image seed = copy_of(mask);
  seed.ptr<uint8_t>(12, 7)[0] = 9;
  MemorySource s(copy_of(seed)), m(copy_of(mask));
  ReconstructJob job;
  job.scratch_near = "/tmp/tilewave-test";
  try {
    reconstruct(s, m, job);
    ADD_FAILURE() << "no error for a marker above the mask";
  } catch (const InputError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("(12, 7)"), std::string::npos) << msg;
    EXPECT_NE(msg.find("--clip"), std::string::npos) << msg;
  }
  job.clip = true;
  const ReconstructResult r = reconstruct(s, m, job);
  EXPECT_EQ(r.image->read(0, Rect(12, 7, 1, 1)).ptr<uint8_t>(12, 7)[0], 0);
  MemorySource rgb(Image(kRgb8, Rect(0, 0, 40, 30)));
  EXPECT_THROW(reconstruct(rgb, rgb, ReconstructJob{}), InputError);
  MemorySource small(Image(kGray8, Rect(0, 0, 20, 30)));
  EXPECT_THROW(reconstruct(small, m, job), InputError);
  ReconstructJob bad;
  bad.params.connectivity = 6;
  EXPECT_THROW(reconstruct(s, m, bad), InputError);
}

}  // namespace
}  // namespace tw
