// Object filters (`tilewave objects`) against scikit-image and scipy
// (remove_small_objects, clear_border, binary_fill_holes per object, through
// tests/oracles/label_oracle.py) on nuclei-like masks and on u32 labels
// whose objects are not connected, at several tile sizes and budgets.
#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <random>
#include <string>

#include "engine/memory_source.hpp"
#include "jobs/label/label_job.hpp"
#include "jobs/label/objects_job.hpp"
#include "tests/support/test_support.hpp"

namespace tw {
namespace {

// A copy of in as a source.
std::shared_ptr<const TileSource> source_of(const Image& in, double mpp = 0) {
  Image c(in.fmt(), in.rect());
  copy_overlap(in.view(), c.view());
  return std::make_shared<MemorySource>(std::move(c), mpp);
}

Image run_objects(const Image& in, const ObjectsParams& p, int64_t tile, size_t memory, ObjectsStats* st,
                  double mpp = 0) {
  ExecContext ctx;
  ctx.tile = tile;
  ctx.memory = memory;
  const auto out = filter_objects(source_of(in, mpp), p, ctx, st);
  return out->read(0, in.rect());
}

Image oracle(const Image& in, const ObjectsParams& p) {
  test::TempDir tmp;
  test::save_npy(tmp.file("in.npy"), in.view());
  const auto r =
      test::run_python(test::oracle("label_oracle.py"),
                       {"objects", tmp.file("in.npy"), std::to_string(p.connectivity), std::to_string(p.min_area),
                        std::isinf(p.max_area) ? "1e300" : std::to_string(p.max_area), p.exclude_border ? "1" : "0",
                        p.fill_holes ? "1" : "0", tmp.file("ref.npy")});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return test::load_npy(tmp.file("ref.npy"));
}

Image nuclei_mask(int64_t w, int64_t h, int seed) {
  test::TempDir tmp;
  EXPECT_EQ(test::run_python(test::oracle("label_oracle.py"), {"nuclei_mask", std::to_string(w), std::to_string(h),
                                                               std::to_string(seed), tmp.file("n.npy")})
                .exit_code,
            0);
  return test::load_npy(tmp.file("n.npy"));
}

// What --mask writes for these labels: 255 where they are not 0.
Image mask_of(const Image& labels) {
  Image m(PixelFormat{SampleType::kU8, 1}, labels.rect());
  const Rect& r = labels.rect();
  for (int64_t y = r.y; y < r.y1(); ++y)
    for (int64_t x = r.x; x < r.x1(); ++x) *m.ptr<uint8_t>(x, y) = *labels.ptr<uint32_t>(x, y) ? 255 : 0;
  return m;
}

TEST(Objects, MaskAgainstScikitImage) {
  if (!test::python_has("skimage.segmentation")) GTEST_SKIP() << "scikit-image missing";
  const Image m = nuclei_mask(333, 271, 4);
  struct Case {
    double mn, mx;
    bool border, fill;
  };
  const Case cases[] = {
      {40, INFINITY, false, false}, {20, 150, true, false}, {0, INFINITY, false, true}, {30, 400, true, true}};
  for (int conn : {4, 8})
    for (const Case& c : cases) {
      ObjectsParams p;
      p.min_area = c.mn, p.max_area = c.mx, p.exclude_border = c.border, p.fill_holes = c.fill;
      p.connectivity = conn;
      const Image ref = oracle(m, p);
      for (int64_t tile : {16, 64, 256}) {
        ObjectsStats st;
        const Image got = run_objects(m, p, tile, tile == 16 ? 512 << 10 : size_t{1} << 30, &st);
        EXPECT_EQ(test::diff_images(got.view(), ref.view()), "")
            << "conn " << conn << " min " << c.mn << " max " << c.mx << " border " << c.border << " fill " << c.fill
            << " tile " << tile;
        EXPECT_GT(st.kept, 0u);
        if (c.fill) {
          EXPECT_GT(st.holes_filled, 0u);
        }
        EXPECT_EQ(st.kept + st.removed_small + st.removed_large + st.removed_border, st.objects);
      }
    }
}

// u32 labels: an object is every pixel of its value, connected or not;
// values need not be in any order.
TEST(Objects, LabelsOfScatteredObjects) {
  if (!test::python_has("skimage.segmentation")) GTEST_SKIP() << "scikit-image missing";
  Image l(PixelFormat{SampleType::kU32, 1}, Rect(0, 0, 150, 97));
  std::mt19937_64 rng(9);
  for (int64_t y = 0; y < 97; ++y)
    for (int64_t x = 0; x < 150; ++x) {
      // Blocks of 5x5 with one of 40 values, a fifth of them background.
      const uint64_t k = ((x / 5) * 7919 + (y / 5) * 104729) % 50;
      *l.ptr<uint32_t>(x, y) = k < 10 ? 0 : static_cast<uint32_t>(k * 85000000u);
    }
  for (const bool border : {false, true}) {
    ObjectsParams p;
    p.min_area = 60, p.max_area = 400, p.exclude_border = border;
    const Image ref = oracle(l, p);
    for (int64_t tile : {16, 32}) {
      ObjectsStats st;
      const Image got = run_objects(l, p, tile, size_t{1} << 30, &st);
      EXPECT_EQ(test::diff_images(got.view(), ref.view()), "") << tile;
    }
  }
}

// u32 labels go another way than a mask (a per-tile scan and per-label
// tables, not one labelling with the filter): the labels of a mask must give
// what the mask gives (itself checked against scikit-image above), with
// tiles and budgets whose stores and tables spill.
TEST(Objects, LabelsOfAMaskGiveWhatTheMaskGives) {
  if (!test::python_has("scipy.ndimage")) GTEST_SKIP() << "scipy missing (the oracle draws the mask)";
  const Image m = nuclei_mask(301, 263, 5);
  for (int conn : {4, 8}) {
    ExecContext lc;
    lc.tile = 32;
    Image lab(m.fmt(), m.rect());
    copy_overlap(m.view(), lab.view());
    const Image labels = label_components(std::make_shared<MemorySource>(std::move(lab)), conn, lc)->read(0, m.rect());
    for (const bool fill : {false, true})
      for (const bool border : {false, true}) {
        ObjectsParams p;
        p.min_area = 35, p.max_area = border ? 300 : INFINITY, p.exclude_border = border, p.fill_holes = fill;
        p.connectivity = conn;
        ObjectsStats want_st;
        const Image want = run_objects(m, p, 64, size_t{1} << 30, &want_st);
        for (const int64_t tile : {16, 48}) {
          ObjectsStats st;
          const Image got = run_objects(labels, p, tile, tile == 16 ? 256 << 10 : size_t{1} << 30, &st);
          EXPECT_EQ(test::diff_images(got.view(), want.view()), "")
              << "conn " << conn << " fill " << fill << " border " << border << " tile " << tile;
          EXPECT_EQ(st.kept, want_st.kept);
          EXPECT_EQ(st.objects, want_st.objects);
          EXPECT_EQ(st.removed_small, want_st.removed_small);
          EXPECT_EQ(st.removed_large, want_st.removed_large);
          EXPECT_EQ(st.removed_border, want_st.removed_border);
        }
      }
  }
}

TEST(Objects, SquareMicronsUseTheImagesMpp) {
  Image m(kGray8, Rect(0, 0, 40, 20));
  m.fill_zero();
  for (int64_t y = 2; y < 6; ++y)
    for (int64_t x = 2; x < 6; ++x) *m.ptr<uint8_t>(x, y) = 1;  // 16 px
  for (int64_t y = 10; y < 18; ++y)
    for (int64_t x = 20; x < 28; ++x) *m.ptr<uint8_t>(x, y) = 1;  // 64 px
  ObjectsParams p;
  p.um2 = true;
  p.min_area = 5;  // at 0.5 um/px: 4 and 16 um2
  ObjectsStats st;
  const Image got = run_objects(m, p, 16, size_t{1} << 30, &st, 0.5);
  EXPECT_EQ(st.objects, 2u);
  EXPECT_EQ(st.kept, 1u);
  EXPECT_EQ(*got.ptr<uint32_t>(3, 3), 0u);
  EXPECT_EQ(*got.ptr<uint32_t>(21, 11), 1u);
  try {
    run_objects(m, p, 16, size_t{1} << 30, &st, 0);
    ADD_FAILURE() << "no error without mpp";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("mpp"), std::string::npos) << e.what();
  }
}

// An area in square microns is rounded: 1000 px at 0.1 um/px is
// 10.000000000000002 um2, and --max-area 10 dropped it. On a bound is kept,
// for a mask (labelled and filtered at once) and for labels (with and
// without holes filled), and counted right when dropped.
TEST(Objects, SquareMicronsOnABoundAreKept) {
  for (const bool labels : {false, true})
    for (const bool fill : {false, true}) {
      Image m(labels ? PixelFormat{SampleType::kU32, 1} : kGray8, Rect(0, 0, 200, 20));
      m.fill_zero();
      for (int64_t y = 0; y < 5; ++y)
        for (int64_t x = 0; x < 200; ++x) {
          if (labels)
            *m.ptr<uint32_t>(x, y) = 1;
          else
            *m.ptr<uint8_t>(x, y) = 1;
        }
      ObjectsParams p;
      p.um2 = true;
      p.fill_holes = fill;
      p.min_area = 10, p.max_area = 10;
      ObjectsStats st;
      const Image got = run_objects(m, p, 64, size_t{1} << 30, &st, 0.1);
      EXPECT_EQ(st.kept, 1u) << labels << fill;
      EXPECT_EQ(*got.ptr<uint32_t>(199, 4), 1u) << labels << fill;
      p.min_area = 10.001, p.max_area = 20;
      run_objects(m, p, 64, size_t{1} << 30, &st, 0.1);
      EXPECT_EQ(st.kept, 0u);
      EXPECT_EQ(st.removed_small, 1u);
      p.min_area = 1, p.max_area = 9.999;
      run_objects(m, p, 64, size_t{1} << 30, &st, 0.1);
      EXPECT_EQ(st.removed_large, 1u);
    }
}

TEST(ObjectsCli, LabelThenObjectsAndBadInput) {
  if (!test::python_has("scipy.ndimage")) GTEST_SKIP() << "scipy missing (the oracle draws the mask)";
  test::TempDir tmp;
  const Image m = nuclei_mask(300, 200, 6);
  test::write_tiff(tmp.file("m.tif"), m.view(), {});
  ASSERT_EQ(test::run_cli({"label", tmp.file("m.tif"), tmp.file("l.tif")}).exit_code, 0);
  const auto r = test::run_cli(
      {"objects", tmp.file("l.tif"), tmp.file("o.tif"), "--min-area", "50", "--tile", "32", "--memory", "4M"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ObjectsParams p;
  p.min_area = 50;
  ObjectsStats st;
  EXPECT_EQ(test::diff_images(test::read_tiff_libtiff(tmp.file("o.tif"), 0).view(),
                              run_objects(m, p, 256, size_t{1} << 30, &st).view()),
            "");
  auto bad = test::run_cli({"objects", tmp.file("m.tif"), tmp.file("x.tif"), "--units", "um2", "--min-area", "3"});
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_NE(bad.err.find("mpp"), std::string::npos) << bad.err;
  // A header whose pixel size is absurd says so (its warning would be lost).
  test::TiffSpec absurd;
  absurd.xres = 1e9;  // 1e-5 um/px
  test::write_tiff(tmp.file("a.tif"), m.view(), absurd);
  bad = test::run_cli({"objects", tmp.file("a.tif"), tmp.file("x.tif"), "--units", "um2", "--min-area", "3"});
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_NE(bad.err.find("a.tif: XResolution/YResolution: 1e-05 x 1e-05 microns per pixel, outside 0.0001..1e+06 "
                         "(pixel size unknown); --units um2 needs one"),
            std::string::npos)
      << bad.err;
  EXPECT_EQ(std::count(bad.err.begin(), bad.err.end(), '\n'), 1) << bad.err;
  test::write_tiff(tmp.file("f.tif"), test::random_image(PixelFormat{SampleType::kF32, 1}, 16, 16, 1).view(), {});
  bad = test::run_cli({"objects", tmp.file("f.tif"), tmp.file("x.tif")});
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_NE(bad.err.find("u32 labels"), std::string::npos) << bad.err;
  EXPECT_EQ(std::count(bad.err.begin(), bad.err.end(), '\n'), 1) << bad.err;
  // A range that keeps nothing is refused (it removed every object, exit 0).
  bad = test::run_cli({"objects", tmp.file("l.tif"), tmp.file("x.tif"), "--min-area", "10", "--max-area", "5"});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("--max-area 5 is below --min-area 10: nothing could be kept"), std::string::npos) << bad.err;
  EXPECT_FALSE(test::path_exists(tmp.file("x.tif")));
}

// With view_of_input (a pipeline's held result), the kept objects are a
// view of the labels through a table of new numbers where the table fits an
// eighth of the budget, else a store filled as it is rewritten: both equal
// the store the filter makes otherwise. Labels of a mask (small values) take
// the view, whatever the tiles, down to a budget whose table does not fit;
// labels up to 4.2e9 never do.
TEST(Objects, ViewOfHeldLabelsEqualsTheStore) {
  if (!test::python_has("scipy.ndimage")) GTEST_SKIP() << "scipy missing (the oracle draws the mask)";
  const Image m = nuclei_mask(301, 263, 9);
  ExecContext lctx;
  const auto labelled = label_components(source_of(m), 8, lctx);
  Image labels = labelled->read(0, m.rect());
  Image scattered(PixelFormat{SampleType::kU32, 1}, Rect(0, 0, 150, 97));
  for (int64_t y = 0; y < 97; ++y)
    for (int64_t x = 0; x < 150; ++x) {
      const uint64_t k = ((x / 5) * 7919 + (y / 5) * 104729) % 50;
      *scattered.ptr<uint32_t>(x, y) = k < 10 ? 0 : static_cast<uint32_t>(k * 85000000u);
    }
  uint32_t top = 0;
  for (int64_t y = 0; y < m.rect().h; ++y)
    for (int64_t x = 0; x < m.rect().w; ++x) top = std::max(top, *labels.ptr<uint32_t>(x, y));
  ASSERT_GT(top, 20u);
  struct Case {
    const Image* in;
    size_t memory;
    bool view;
  };
  // (top + 1) * 4 bytes against memory / 8: 1G and 64K fit, top * 16 does not.
  const Case cases[] = {{&labels, size_t{1} << 30, true},
                        {&labels, size_t{64} << 10, true},
                        {&labels, static_cast<size_t>(top) * 16, false},
                        {&scattered, size_t{1} << 30, false}};
  for (const Case& c : cases)
    for (int64_t tile : {16, 64}) {
      SCOPED_TRACE("memory " + std::to_string(c.memory) + ", tile " + std::to_string(tile));
      ObjectsParams p;
      p.min_area = 30, p.max_area = 300;
      ObjectsStats want_st;
      const Image want = run_objects(*c.in, p, tile, size_t{1} << 30, &want_st);
      ASSERT_GT(want_st.kept, 3u);
      p.view_of_input = true;
      ExecContext ctx;
      ctx.tile = tile, ctx.memory = c.memory;
      bool view = !c.view;
      ObjectsStats st;
      const auto out = filter_objects(source_of(*c.in), p, ctx, &st, &view);
      EXPECT_EQ(view, c.view);
      EXPECT_EQ(st.kept, want_st.kept);
      EXPECT_EQ(test::diff_images(out->read(0, c.in->rect()).view(), want.view()), "");
      // A view reads any rectangle, across tiles.
      const Rect r(7, 11, 100, 60);
      EXPECT_EQ(test::diff_images(out->read(0, r).view(), want.view().sub(r)), "");
    }
}

// In a pipeline, `objects` of a step's labels is a view of them (the report
// says so), also where they spill out of core (labels 8x the budget), and the output equals
// `label` then `objects` as two commands; a later step may still read the
// labels the view reads.
TEST(ObjectsCli, ViewInAPipeline) {
  if (!test::python_has("scipy.ndimage")) GTEST_SKIP() << "scipy missing (the oracle draws the mask)";
  test::TempDir tmp;
  const Image m = nuclei_mask(4096, 2048, 10);  // u32 labels 32 MB: 8x the 4M budget
  test::write_tiff(tmp.file("m.tif"), m.view(), {});
  ASSERT_EQ(test::run_cli({"label", tmp.file("m.tif"), tmp.file("l.tif")}).exit_code, 0);
  ASSERT_EQ(test::run_cli({"objects", tmp.file("l.tif"), tmp.file("o.tif"), "--min-area", "60"}).exit_code, 0);
  const Image want = test::read_tiff_libtiff(tmp.file("o.tif"), 0);
  for (const std::string memory : {"1G", "4M"}) {
    SCOPED_TRACE(memory);
    ::unlink(tmp.file("p.tif").c_str());
    const auto r = test::run_cli({"run", tmp.file("m.tif"), tmp.file("p.tif"), "l: label", "objects l --min-area 60",
                                  "--tile", "64", "--memory", memory, "--report", tmp.file("r.json")});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(test::diff_images(test::read_tiff_libtiff(tmp.file("p.tif"), 0).view(), want.view()), "");
    const nlohmann::json rep = test::read_json(tmp.file("r.json"));
    ASSERT_EQ(rep["steps"].size(), 2u) << rep.dump();
    EXPECT_EQ(rep["steps"][1]["values"]["objects_view"], true) << rep.dump();
    if (memory == "4M") EXPECT_GT(rep["steps"][0]["values"].value("tiles_spilled", 0), 0) << rep.dump();
  }
  // The labels the view reads, read by a later step too (the EDT of all
  // objects), out of core; the view kept to the end.
  ASSERT_EQ(test::run_cli({"edt", tmp.file("l.tif"), tmp.file("e.tif")}).exit_code, 0);
  const auto r = test::run_cli({"run", tmp.file("m.tif"), tmp.file("d.tif"), "l: label", "k: objects l --min-area 60",
                                "edt l", "--tile", "64", "--memory", "4M", "--keep", "k=" + tmp.file("k.tif")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(test::diff_images(test::read_tiff_libtiff(tmp.file("k.tif"), 0).view(), want.view()), "");
  EXPECT_EQ(test::diff_images(test::read_tiff_libtiff(tmp.file("d.tif"), 0).view(),
                              test::read_tiff_libtiff(tmp.file("e.tif"), 0).view()),
            "");
}

// mask_out (`objects --mask` of a mask on the CPU): the labelling keeps no
// u32 labels and labels each tile again for the mask; the same stats, and
// the mask of what the labels path keeps, for both connectivities, every
// filter, tiles smaller than the objects and budgets whose mask spills.
TEST(Objects, MaskOutIsTheMaskOfTheKeptLabels) {
  if (!test::python_has("scipy.ndimage")) GTEST_SKIP() << "scipy missing (the oracle draws the mask)";
  const Image m = nuclei_mask(317, 229, 11);
  struct Case {
    double mn, mx;
    bool border;
  };
  const Case cases[] = {{0, INFINITY, false}, {40, INFINITY, false}, {20, 150, true}};
  for (int conn : {4, 8})
    for (const Case& c : cases)
      for (int64_t tile : {16, 64})
        for (size_t memory : {size_t{1} << 30, size_t{256} << 10}) {
          SCOPED_TRACE("conn " + std::to_string(conn) + ", min " + std::to_string(c.mn) + ", tile " +
                       std::to_string(tile) + ", memory " + std::to_string(memory));
          ObjectsParams p;
          p.connectivity = conn, p.min_area = c.mn, p.max_area = c.mx, p.exclude_border = c.border;
          ObjectsStats want_st;
          const Image want = mask_of(run_objects(m, p, tile, size_t{1} << 30, &want_st));
          p.mask_out = true;
          ObjectsStats st;
          const Image got = run_objects(m, p, tile, memory, &st);
          ASSERT_EQ(got.fmt(), (PixelFormat{SampleType::kU8, 1}));
          EXPECT_EQ(test::diff_images(got.view(), want.view()), "");
          EXPECT_EQ(st.objects, want_st.objects);
          EXPECT_EQ(st.kept, want_st.kept);
          EXPECT_EQ(st.removed_small, want_st.removed_small);
          EXPECT_EQ(st.removed_large, want_st.removed_large);
          EXPECT_EQ(st.removed_border, want_st.removed_border);
          if (memory < (size_t{1} << 20) && tile == 16) EXPECT_GT(st.tiles_spilled, 0u);
        }
}

// A mask that reads as itself for its first `reads` reads, then all set: an
// input rewritten while a job reads it.
class ChangingMask final : public TileSource {
 public:
  ChangingMask(std::shared_ptr<const TileSource> mask, int64_t reads) : mask_(std::move(mask)), left_(reads) {
    info_ = mask_->info();
    info_.path = "changing.tif";
  }

 protected:
  void read_inside(int, const ImageView& dst) const override {
    if (left_-- > 0) return mask_->read(0, dst);
    for (int64_t y = dst.rect.y; y < dst.rect.y1(); ++y) std::memset(dst.row_bytes(y), 255, dst.row_length_bytes());
  }

 private:
  std::shared_ptr<const TileSource> mask_;
  mutable std::atomic<int64_t> left_;
};

// mask_out reads its input twice; an input that changed in between is
// refused in the user's terms (naming it and the tile), not taken.
TEST(Objects, MaskOutRefusesAnInputThatChanged) {
  if (!test::python_has("scipy.ndimage")) GTEST_SKIP() << "scipy missing (the oracle draws the mask)";
  const Image m = nuclei_mask(200, 150, 12);
  ObjectsParams p;
  p.min_area = 30, p.mask_out = true;
  ExecContext ctx;
  ctx.tile = 64;  // 4 x 3 tiles: the first pass reads each once
  try {
    filter_objects(std::make_shared<ChangingMask>(source_of(m), 12), p, ctx);
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("changing.tif changed while it was read: the tile at "), std::string::npos)
        << e.what();
  }
}

// --mask: the kept objects as a u8 mask, 255 on them, from a mask (labelled
// and filtered in one labelling) and from labels, with holes filled, on tiles
// smaller than the objects.
TEST(ObjectsCli, MaskIsTheKeptObjects) {
  if (!test::python_has("scipy.ndimage")) GTEST_SKIP() << "scipy missing (the oracle draws the mask)";
  test::TempDir tmp;
  const Image m = nuclei_mask(300, 200, 7);
  test::write_tiff(tmp.file("m.tif"), m.view(), {});
  ASSERT_EQ(test::run_cli({"label", tmp.file("m.tif"), tmp.file("l.tif")}).exit_code, 0);
  for (const bool holes : {false, true})
    for (const std::string in : {"m.tif", "l.tif"}) {
      SCOPED_TRACE(in + (holes ? " --fill-holes" : ""));
      std::vector<std::string> args = {"objects", tmp.file(in), tmp.file("k.tif"), "--min-area", "60", "--mask",
                                       "--tile",  "32",         "--memory",        "4M"};
      if (holes) args.push_back("--fill-holes");
      ::unlink(tmp.file("k.tif").c_str());
      const auto r = test::run_cli(args);
      ASSERT_EQ(r.exit_code, 0) << r.err;
      ObjectsParams p;
      p.min_area = 60;
      p.fill_holes = holes;
      ObjectsStats st;
      const Image want = mask_of(run_objects(m, p, 256, size_t{1} << 30, &st));
      ASSERT_GT(st.kept, 0u);
      EXPECT_EQ(test::diff_images(test::read_tiff_libtiff(tmp.file("k.tif"), 0).view(), want.view()), "");
    }
}

// --mask out of core: under a budget of an eighth of the labels' 32 MB (and
// half the mask's 8 MB) the labels' store spills, and the mask is exact.
TEST(ObjectsCli, MaskOutOfCore) {
  if (!test::python_has("scipy.ndimage")) GTEST_SKIP() << "scipy missing (the oracle draws the mask)";
  test::TempDir tmp;
  const Image m = nuclei_mask(4096, 2048, 8);
  test::write_tiff(tmp.file("m.tif"), m.view(), {});
  const auto r = test::run_cli({"objects", tmp.file("m.tif"), tmp.file("k.tif"), "--min-area", "60", "--mask", "--tile",
                                "64", "--memory", "4M", "--report", tmp.file("r.json")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ObjectsParams p;
  p.min_area = 60;
  ObjectsStats st;
  const Image want = mask_of(run_objects(m, p, 256, size_t{1} << 30, &st));
  ASSERT_GT(st.kept, 100u);
  EXPECT_EQ(test::diff_images(test::read_tiff_libtiff(tmp.file("k.tif"), 0).view(), want.view()), "");
  EXPECT_GT(test::read_json(tmp.file("r.json")).value("objects_tiles_spilled", 0), 0);
}

}  // namespace
}  // namespace tw
