// `tilewave features` against scikit-image's regionprops on the same labels
// (tests/oracles/features_oracle.py): real content (the immunohistochemistry
// image's hematoxylin, thresholded and labelled by scipy), touching ellipses
// across 16-pixel tiles, worst cases (pinches, rings, islands in holes,
// pieces, image borders); the GeoJSON's outlines filled back into pixels and
// compared with the labels; identical bytes for every tile size, budget and
// thread count; bad inputs; a label image 8x the memory budget; sparse label
// values up to 2^32 - 1 in memory by their count, not their values.
#include <gtest/gtest.h>
#include <tbb/global_control.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <numeric>
#include <optional>
#include <random>
#include <set>
#include <sstream>

#include "engine/error.hpp"
#include "engine/memory_source.hpp"
#include "io/open_source.hpp"
#include "jobs/features/features_job.hpp"
#include "jobs/features/label_set.hpp"
#include "tests/support/test_support.hpp"

namespace tw {
namespace {

struct Table {
  std::vector<std::string> cols;
  std::vector<std::vector<double>> rows;
  int col(const std::string& name) const {
    for (size_t i = 0; i < cols.size(); ++i)
      if (cols[i] == name) return static_cast<int>(i);
    return -1;
  }
};

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ',')) out.push_back(item);
  return out;
}

Table read_csv(const std::string& path) {
  std::ifstream f(path);
  Table t;
  std::string line;
  if (!std::getline(f, line)) return t;
  t.cols = split(line);
  while (std::getline(f, line)) {
    std::vector<double> row;
    for (const std::string& v : split(line)) row.push_back(std::stod(v));
    t.rows.push_back(row);
  }
  return t;
}

std::string slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}

bool have_oracle() {
  return test::python_has("skimage") && test::python_has("tifffile") && test::python_has("scipy");
}

void make_inputs(const std::string& kind, const test::TempDir& dir) {
  const auto r = test::run_python(test::oracle("features_inputs.py"), {kind, dir.path()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
}

test::RunResult features(std::vector<std::string> args) {
  args.insert(args.begin(), "features");
  return test::run_cli(args);
}

// Columns compared exactly (integers), the rest within `rel` of max(1, |ref|);
// hematoxylin within 1e-6 (ours is `filter hed`'s float32, skimage's float64).
// Rows are joined by label; ours must hold exactly the oracle's labels.
void expect_matches_oracle(const Table& ours, const Table& ref, const std::string& what) {
  ASSERT_EQ(ours.rows.size(), ref.rows.size()) << what;
  std::map<int64_t, const std::vector<double>*> by_label;
  for (const auto& r : ours.rows) by_label[static_cast<int64_t>(r[0])] = &r;
  const std::set<std::string> exact = {"label", "area", "bbox_x0", "bbox_y0", "bbox_x1", "bbox_y1", "area_convex"};
  int checked = 0;
  for (const auto& rr : ref.rows) {
    const int64_t label = static_cast<int64_t>(rr[0]);
    ASSERT_TRUE(by_label.count(label)) << what << ": label " << label << " missing";
    const std::vector<double>& o = *by_label[label];
    for (size_t c = 0; c < ref.cols.size(); ++c) {
      const std::string& name = ref.cols[c];
      const int oc = ours.col(name);
      ASSERT_GE(oc, 0) << what << ": no column " << name;
      const double a = o[static_cast<size_t>(oc)], b = rr[c];
      if (exact.count(name)) {
        EXPECT_EQ(a, b) << what << ": label " << label << " " << name;
      } else if (name.rfind("hematoxylin", 0) == 0) {
        EXPECT_NEAR(a, b, 1e-6) << what << ": label " << label << " " << name;
      } else if (name == "orientation" && std::fabs(std::fabs(a) - M_PI / 4) < 1e-12 &&
                 std::fabs(std::fabs(b) - M_PI / 4) < 1e-9) {
        // a == c in exact arithmetic: skimage's sign there follows its
        // float rounding of a - c (docs/features.md).
      } else {
        EXPECT_NEAR(a, b, 1e-9 * std::max(1.0, std::fabs(b))) << what << ": label " << label << " " << name;
      }
      ++checked;
    }
  }
  EXPECT_GT(checked, 0);
}

void compare_with_regionprops(const test::TempDir& dir, const std::string& intensity, const std::string& what) {
  std::vector<std::string> args = {dir.file("labels.tif"), dir.file("ours.csv")};
  if (!intensity.empty()) args.insert(args.end(), {"--intensity", dir.file(intensity)});
  const auto r = features(args);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::vector<std::string> o = {dir.file("labels.tif"), dir.file("ref.csv")};
  if (!intensity.empty()) o.push_back(dir.file(intensity));
  const auto p = test::run_python(test::oracle("features_oracle.py"), o);
  ASSERT_EQ(p.exit_code, 0) << p.err;
  expect_matches_oracle(read_csv(dir.file("ours.csv")), read_csv(dir.file("ref.csv")), what);
}

// Every feature of the GeoJSON: a detection with the CSV row's label, in the
// CSV's order; rings closed, along pixel corners (integer, axis-aligned
// steps); shoelace area (shells minus holes) = the area column; and the
// outline filled back (pixel centres inside by the even-odd rule) = exactly
// the label's pixels in its bounding box.
void check_geojson(const std::string& geojson, const Table& csv, const std::string& labels_path) {
  const nlohmann::json j = test::read_json(geojson);
  ASSERT_EQ(j["type"], "FeatureCollection");
  const auto& feats = j["features"];
  ASSERT_EQ(feats.size(), csv.rows.size());
  const SourcePtr src = open_source(labels_path);
  const Image lab = src->read(0, src->level(0).bounds());
  const int area_col = csv.col("area"), x0c = csv.col("bbox_x0");
  for (size_t i = 0; i < feats.size(); ++i) {
    const auto& f = feats[i];
    const std::vector<double>& row = csv.rows[i];
    const uint32_t label = static_cast<uint32_t>(row[0]);
    ASSERT_EQ(f["type"], "Feature");
    ASSERT_EQ(f["properties"]["objectType"], "detection");
    ASSERT_EQ(f["properties"]["label"].get<uint32_t>(), label) << "feature " << i;
    ASSERT_EQ(f["properties"]["measurements"]["area"].get<int64_t>(), static_cast<int64_t>(row[area_col]));
    const auto& g = f["geometry"];
    std::vector<nlohmann::json> polys;
    if (g["type"] == "Polygon") {
      polys.push_back(g["coordinates"]);
    } else {
      ASSERT_EQ(g["type"], "MultiPolygon");
      for (const auto& p : g["coordinates"]) polys.push_back(p);
      EXPECT_GE(polys.size(), 2u);
    }
    std::vector<std::vector<std::pair<int64_t, int64_t>>> rings;
    int64_t twice = 0;
    for (const auto& p : polys)
      for (size_t k = 0; k < p.size(); ++k) {
        std::vector<std::pair<int64_t, int64_t>> ring;
        for (const auto& c : p[k]) {
          ASSERT_TRUE(c[0].is_number_integer() && c[1].is_number_integer());
          ring.emplace_back(c[0].get<int64_t>(), c[1].get<int64_t>());
        }
        ASSERT_GE(ring.size(), 5u);
        ASSERT_EQ(ring.front(), ring.back()) << "label " << label << ": ring not closed";
        int64_t s = 0;
        for (size_t e = 0; e + 1 < ring.size(); ++e) {
          const auto a = ring[e], b = ring[e + 1];
          ASSERT_TRUE((a.first == b.first) != (a.second == b.second)) << "label " << label << ": not a pixel edge";
          s += a.first * b.second - b.first * a.second;
        }
        // Outer rings counter-clockwise in the numbers (positive), holes not.
        if (k == 0)
          EXPECT_GT(s, 0) << "label " << label;
        else
          EXPECT_LT(s, 0) << "label " << label;
        twice += s;
        rings.push_back(ring);
      }
    EXPECT_EQ(twice, 2 * static_cast<int64_t>(row[area_col])) << "label " << label;
    const int64_t bx0 = static_cast<int64_t>(row[x0c]), by0 = static_cast<int64_t>(row[x0c + 1]);
    const int64_t bx1 = static_cast<int64_t>(row[x0c + 2]), by1 = static_cast<int64_t>(row[x0c + 3]);
    int64_t wrong = 0;
    for (int64_t y = by0; y < by1; ++y)
      for (int64_t x = bx0; x < bx1; ++x) {
        bool in = false;  // the centre (x + .5, y + .5) against vertical edges
        for (const auto& ring : rings)
          for (size_t e = 0; e + 1 < ring.size(); ++e) {
            const auto a = ring[e], b = ring[e + 1];
            if (a.first == b.first && a.first > x && (std::min(a.second, b.second) <= y) &&
                (std::max(a.second, b.second) > y))
              in = !in;
          }
        if (in != (lab.ptr<uint32_t>(x, y)[0] == label)) ++wrong;
      }
    EXPECT_EQ(wrong, 0) << "label " << label << ": outline differs from its pixels";
  }
}

TEST(Features, ImmunohistochemistryAgainstRegionprops) {
  if (!have_oracle()) GTEST_SKIP() << "needs scikit-image, scipy and tifffile";
  test::TempDir dir;
  make_inputs("ihc", dir);
  compare_with_regionprops(dir, "rgb.tif", "ihc rgb");
  // scipy numbers labels in raster order: the rows come in label order.
  const Table ours = read_csv(dir.file("ours.csv")), ref = read_csv(dir.file("ref.csv"));
  ASSERT_GT(ref.rows.size(), 300u);
  for (size_t i = 0; i < ref.rows.size(); ++i) ASSERT_EQ(ours.rows[i][0], ref.rows[i][0]) << "row " << i;
  compare_with_regionprops(dir, "gray16.tif", "ihc gray16");
}

TEST(Features, TouchingEllipsesAgainstRegionprops) {
  if (!have_oracle()) GTEST_SKIP() << "needs scikit-image, scipy and tifffile";
  test::TempDir dir;
  make_inputs("ellipses", dir);
  compare_with_regionprops(dir, "rgb.tif", "ellipses rgb");
  compare_with_regionprops(dir, "", "ellipses");
}

TEST(Features, WorstCasesAgainstRegionpropsAndOutlines) {
  if (!have_oracle()) GTEST_SKIP() << "needs scikit-image, scipy and tifffile";
  test::TempDir dir;
  make_inputs("worst", dir);
  compare_with_regionprops(dir, "", "worst");
  ASSERT_EQ(features({dir.file("labels.tif"), dir.file("w.geojson")}).exit_code, 0);
  const Table csv = read_csv(dir.file("ours.csv"));
  check_geojson(dir.file("w.geojson"), csv, dir.file("labels.tif"));
  const nlohmann::json j = test::read_json(dir.file("w.geojson"));
  std::map<uint32_t, nlohmann::json> geo;
  for (const auto& f : j["features"]) geo[f["properties"]["label"].get<uint32_t>()] = f["geometry"];
  EXPECT_EQ(geo[4]["type"], "MultiPolygon");  // a diagonal chain: 8 squares meeting at corners
  EXPECT_EQ(geo[4]["coordinates"].size(), 8u);
  EXPECT_EQ(geo[8]["coordinates"].size(), 2u);  // two pieces side by side
  EXPECT_EQ(geo[6]["type"], "MultiPolygon");    // a square with a hole, an island in it
  EXPECT_EQ(geo[6]["coordinates"][0].size(), 2u);
  EXPECT_EQ(geo[5]["type"], "Polygon");  // a ring whose hole meets the outside at a corner
  EXPECT_EQ(geo[5]["coordinates"].size(), 2u);
}

TEST(Features, OutlinesOfRealContentJoinTheCsv) {
  if (!have_oracle()) GTEST_SKIP() << "needs scikit-image, scipy and tifffile";
  test::TempDir dir;
  make_inputs("ihc", dir);
  ASSERT_EQ(features({dir.file("labels.tif"), dir.file("a.csv"), "--mpp", "0.5"}).exit_code, 0);
  const auto r = features({dir.file("labels.tif"), dir.file("a.geojson"), "--mpp", "0.5"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const Table csv = read_csv(dir.file("a.csv"));
  ASSERT_GE(csv.col("area_um2"), 0);
  check_geojson(dir.file("a.geojson"), csv, dir.file("labels.tif"));
  const nlohmann::json j = test::read_json(dir.file("a.geojson"));
  const auto& m = j["features"][0]["properties"]["measurements"];
  EXPECT_DOUBLE_EQ(m["area_um2"].get<double>(), m["area"].get<double>() * 0.25);
  // Without a pixel size (the TIFF has none) there are no µm columns.
  ASSERT_EQ(features({dir.file("labels.tif"), dir.file("b.csv")}).exit_code, 0);
  EXPECT_EQ(read_csv(dir.file("b.csv")).col("area_um2"), -1);
}

TEST(Features, SameBytesForEveryTileSizeBudgetAndThreadCount) {
  if (!have_oracle()) GTEST_SKIP() << "needs scikit-image, scipy and tifffile";
  test::TempDir dir;
  make_inputs("ellipses", dir);
  for (const std::string ext : {".csv", ".geojson"}) {
    std::string first;
    for (const std::vector<std::string>& extra :
         std::vector<std::vector<std::string>>{{"--tile", "16"},
                                               {"--tile", "32"},
                                               {"--tile", "64", "--threads", "1"},
                                               {"--tile", "256"},
                                               {"--memory", "4M"},
                                               {"--memory", "4M", "--tile", "16"}}) {
      std::vector<std::string> args = {dir.file("labels.tif"), dir.file("o" + ext), "--intensity", dir.file("rgb.tif")};
      args.insert(args.end(), extra.begin(), extra.end());
      const auto r = features(args);
      ASSERT_EQ(r.exit_code, 0) << r.err;
      const std::string got = slurp(dir.file("o" + ext));
      if (first.empty())
        first = got;
      else
        EXPECT_TRUE(got == first) << ext << " differs with " << extra[0] << " " << extra[1];
    }
  }
}

// A budget so small that the label rows kept for outlines cannot hold the
// tallest objects: those are outlined from a re-read of their bounding box,
// with the same result.
TEST(Features, OutlinesFromReReadsWhenTheWindowIsShort) {
  if (!have_oracle()) GTEST_SKIP() << "needs scikit-image, scipy and tifffile";
  test::TempDir dir;
  make_inputs("ellipses", dir);
  const SourcePtr labels = open_source(dir.file("labels.tif"));
  const SourcePtr rgb = open_source(dir.file("rgb.tif"));
  ExecContext big, tiny;
  tiny.memory = 96 << 10;
  const FeaturesStats a = write_features(labels, rgb, dir.file("a.geojson"), {}, big);
  const FeaturesStats b = write_features(labels, rgb, dir.file("b.geojson"), {}, tiny);
  EXPECT_EQ(a.outlines_reread, 0);
  EXPECT_GT(b.outlines_reread, 0);
  EXPECT_LT(b.band_rows, a.band_rows);
  EXPECT_TRUE(slurp(dir.file("a.geojson")) == slurp(dir.file("b.geojson")));
}

// Both tables from one pass (what `tilewave nuclei` does): byte for byte
// what the one-output calls write, under a budget that cuts the rows into
// many bands and one that does not, on one thread and on all.
TEST(Features, OnePassWritesBothTablesAsTheSingleCallsDo) {
  if (!have_oracle()) GTEST_SKIP() << "needs scikit-image, scipy and tifffile";
  test::TempDir dir;
  make_inputs("ellipses", dir);
  const SourcePtr labels = open_source(dir.file("labels.tif"));
  const SourcePtr rgb = open_source(dir.file("rgb.tif"));
  ExecContext one;
  write_features(labels, rgb, dir.file("one.csv"), {}, one);
  write_features(labels, rgb, dir.file("one.geojson"), {}, one);
  for (const size_t memory : {size_t{96} << 10, size_t{1} << 30}) {
    for (const int threads : {1, 0}) {
      std::optional<tbb::global_control> limit;
      if (threads > 0) limit.emplace(tbb::global_control::max_allowed_parallelism, static_cast<size_t>(threads));
      ExecContext ctx;
      ctx.memory = memory;
      const FeaturesStats st = write_features(
          labels, rgb, std::vector<std::string>{dir.file("both.csv"), dir.file("both.geojson")}, {}, ctx);
      ASSERT_EQ(st.output_bytes.size(), 2u);
      EXPECT_EQ(st.read_ahead, memory > (size_t{1} << 20)) << "two bands fit only the larger budget";
      EXPECT_EQ(st.output_bytes[0], slurp(dir.file("one.csv")).size());
      EXPECT_EQ(st.bytes, st.output_bytes[0] + st.output_bytes[1]);
      EXPECT_TRUE(slurp(dir.file("both.csv")) == slurp(dir.file("one.csv"))) << memory << " " << threads;
      EXPECT_TRUE(slurp(dir.file("both.geojson")) == slurp(dir.file("one.geojson"))) << memory << " " << threads;
    }
  }
}

// An image whose level-0 reads reaching past `limit` (a row, or with
// `columns` a column) throw what a damaged tile would: for the errors of
// bands read ahead, and for proving what is never read.
class RefusesReadsPast final : public TileSource {
 public:
  RefusesReadsPast(std::shared_ptr<const TileSource> in, int64_t limit, bool columns)
      : in_(std::move(in)), limit_(limit), columns_(columns) {
    info_ = in_->info();
  }

 protected:
  void read_inside(int level, const ImageView& dst) const override {
    if (level == 0 && (columns_ ? dst.rect.x1() : dst.rect.y1()) > limit_)
      throw InputError(std::string(columns_ ? "a read past column " : "a damaged tile at row ") +
                       std::to_string(limit_));
    in_->read(level, dst);
  }

 private:
  std::shared_ptr<const TileSource> in_;
  int64_t limit_;
  bool columns_;
};

TEST(Features, AReadErrorOfABandReadAheadReachesTheCaller) {
  if (!have_oracle()) GTEST_SKIP() << "needs scikit-image, scipy and tifffile";
  test::TempDir dir;
  make_inputs("ellipses", dir);  // 157 x 203
  const SourcePtr rgb = open_source(dir.file("rgb.tif"));
  const auto labels = std::make_shared<RefusesReadsPast>(open_source(dir.file("labels.tif")), 150, false);
  for (const size_t memory : {size_t{96} << 10, size_t{1} << 30}) {
    ExecContext ctx;
    ctx.memory = memory;
    ctx.tile = 16;  // bands of 16 rows: the failing one is read while another is scanned
    try {
      write_features(labels, rgb, dir.file("o.geojson"), {}, ctx);
      ADD_FAILURE() << "no error with --memory " << memory;
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find("a damaged tile at row 150"), std::string::npos) << e.what();
    }
  }
}

// The intensity is read only where a band's labels have objects: pieces of
// glass are never decoded, and the table is the same.
// Infinities and NaN in a float intensity: the mean is what numpy gives
// (inf for an object with one +inf pixel, NaN for +inf and -inf together),
// the spread NaN, and NaN is written one way. The pairwise merge of runs made
// inf - inf of the first (a mean of -nan), and the sign of NaN reached the CSV.
TEST(Features, InfinitiesInTheIntensity) {
  Image lab(PixelFormat{SampleType::kU32, 1}, Rect(0, 0, 40, 30));
  lab.fill_zero();
  Image in(PixelFormat{SampleType::kF32, 1}, Rect(0, 0, 40, 30));
  for (int64_t y = 0; y < 30; ++y)
    for (int64_t x = 0; x < 40; ++x) *in.ptr<float>(x, y) = 1.f;
  for (int64_t y = 2; y < 8; ++y)
    for (int64_t x = 2; x < 8; ++x) *lab.ptr<uint32_t>(x, y) = 1;  // finite: mean 1, std 0
  for (int64_t y = 10; y < 20; ++y)
    for (int64_t x = 10; x < 20; ++x) *lab.ptr<uint32_t>(x, y) = 2;
  *in.ptr<float>(12, 14) = std::numeric_limits<float>::infinity();  // a later row than the object's first
  for (int64_t y = 22; y < 28; ++y)
    for (int64_t x = 30; x < 36; ++x) *lab.ptr<uint32_t>(x, y) = 3;
  *in.ptr<float>(31, 23) = std::numeric_limits<float>::infinity();
  *in.ptr<float>(33, 26) = -std::numeric_limits<float>::infinity();
  test::TempDir dir;
  ExecContext ctx;
  ctx.tile = 16;
  write_features(std::make_shared<MemorySource>(std::move(lab)), std::make_shared<MemorySource>(std::move(in)),
                 std::vector<std::string>{dir.file("f.csv")}, {}, ctx);
  const Table t = read_csv(dir.file("f.csv"));
  ASSERT_EQ(t.rows.size(), 3u);
  const int mean = t.col("intensity_mean"), sd = t.col("intensity_std");
  ASSERT_GE(mean, 0);
  ASSERT_GE(sd, 0);
  EXPECT_EQ(t.rows[0][mean], 1.0);
  EXPECT_EQ(t.rows[0][sd], 0.0);
  EXPECT_EQ(t.rows[1][mean], std::numeric_limits<double>::infinity());
  EXPECT_TRUE(std::isnan(t.rows[1][sd]));
  EXPECT_TRUE(std::isnan(t.rows[2][mean]));
  EXPECT_TRUE(std::isnan(t.rows[2][sd]));
  EXPECT_EQ(slurp(dir.file("f.csv")).find("-nan"), std::string::npos);
}

TEST(Features, IntensityReadOnlyWhereThereAreObjects) {
  const int64_t w = 3000, h = 700;
  Image lab(PixelFormat{SampleType::kU32, 1}, Rect(0, 0, w, h));
  lab.fill_zero();  // a new Image is not cleared (ASan's malloc fills it)
  uint32_t next = 0;
  for (int64_t y0 = 5; y0 + 12 < h; y0 += 40)  // discs of 6 px in the first 1000 columns only
    for (int64_t x0 = 5; x0 + 12 < 1000; x0 += 37) {
      ++next;
      for (int64_t y = 0; y < 13; ++y)
        for (int64_t x = 0; x < 13; ++x)
          if ((x - 6) * (x - 6) + (y - 6) * (y - 6) <= 36) *lab.ptr<uint32_t>(x0 + x, y0 + y) = next;
    }
  const auto labels = std::make_shared<MemorySource>(std::move(lab));
  const auto rgb = std::make_shared<MemorySource>(test::pattern_image(kRgb8, w, h, 11));
  test::TempDir dir;
  for (const int64_t tile : {16, 256}) {
    ExecContext a, b;
    a.tile = b.tile = tile;
    write_features(labels, rgb, std::vector<std::string>{dir.file("a.csv"), dir.file("a.geojson")}, {}, a);
    write_features(labels, std::make_shared<RefusesReadsPast>(rgb, 1024, true),
                   std::vector<std::string>{dir.file("b.csv"), dir.file("b.geojson")}, {}, b);
    EXPECT_TRUE(slurp(dir.file("a.csv")) == slurp(dir.file("b.csv"))) << tile;
    EXPECT_TRUE(slurp(dir.file("a.geojson")) == slurp(dir.file("b.geojson"))) << tile;
    EXPECT_EQ(read_csv(dir.file("a.csv")).rows.size(), next);
  }
}

void expect_refused(const test::RunResult& r, const std::string& says, const std::string& what) {
  EXPECT_EQ(r.exit_code, 1) << what << ": " << r.err;
  EXPECT_EQ(r.err.rfind("tilewave: error: ", 0), 0u) << what << ": " << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << what << ": not one line: " << r.err;
  EXPECT_NE(r.err.find(says), std::string::npos) << what << ": " << r.err;
}

TEST(Features, BadInput) {
  if (!have_oracle()) GTEST_SKIP() << "needs scikit-image, scipy and tifffile";
  test::TempDir dir, gap;
  make_inputs("ellipses", dir);
  make_inputs("gap", gap);
  expect_refused(features({dir.file("rgb.tif"), dir.file("o.csv")}), "u32", "RGB labels");
  expect_refused(features({dir.file("labels.tif"), dir.file("o.csv"), "--intensity", "synthetic:100x100"}),
                 "is 100 x 100, the labels", "intensity of another size");
  expect_refused(features({dir.file("labels.tif"), dir.file("o.txt")}), "must end in .csv or .geojson", "extension");
  expect_refused(features({gap.file("labels.tif"), gap.file("o.csv")}),
                 "label 1 has pixels again at (2, 20) after a row without any", "a label in two runs of rows");
  EXPECT_EQ(features({dir.file("labels.tif")}).exit_code, 2);
  // Nothing left behind by the failed runs.
  for (const std::string& n : dir.list()) EXPECT_EQ(n.find(".tw-"), std::string::npos) << n;
  for (const std::string& n : gap.list()) EXPECT_EQ(n.find("o.csv"), std::string::npos) << n;
}

TEST(Features, LabelImage8xTheBudgetThroughTheCli) {
  if (!have_oracle()) GTEST_SKIP() << "needs scikit-image, scipy and tifffile";
  test::TempDir dir;
  make_inputs("big", dir);  // 3072 x 3072 u32: 36 MiB, 9x a 4M budget
  const auto base = test::run_cli({"pyramid", "synthetic:64x64", dir.file("base.tif")});
  ASSERT_EQ(base.exit_code, 0) << base.err;
  const size_t budget = size_t{4} << 20, overhead = base.peak_rss_bytes + (size_t{24} << 20);
  for (const std::string ext : {".csv", ".geojson"}) {
    const auto small = features({dir.file("labels.tif"), dir.file("s" + ext), "--memory", "4M"});
    ASSERT_EQ(small.exit_code, 0) << small.err;
    if (!test::kSanitizerBuild) {
      EXPECT_LE(small.peak_rss_bytes, budget + overhead) << ext << ": peak RSS " << small.peak_rss_bytes;
    }
    std::printf("[ info     ] features %s --memory 4M: peak RSS %.1f MiB, %.2f s\n", ext.c_str(),
                small.peak_rss_bytes / 1048576.0, small.seconds);
    const auto large = features({dir.file("labels.tif"), dir.file("l" + ext), "--memory", "1G"});
    ASSERT_EQ(large.exit_code, 0) << large.err;
    EXPECT_TRUE(slurp(dir.file("s" + ext)) == slurp(dir.file("l" + ext))) << ext;
  }
  const Table t = read_csv(dir.file("s.csv"));
  EXPECT_GT(t.rows.size(), 20000u);
  check_geojson(dir.file("s.geojson"), t, dir.file("labels.tif"));
}

std::vector<std::string> lines(const std::string& path) {
  std::ifstream f(path);
  std::vector<std::string> out;
  for (std::string line; std::getline(f, line);) out.push_back(line);
  return out;
}

// The ellipses labelled with sparse values (2^32 - 1, 2^31, 7, 1000003 and
// random ones): every row is the row of the same object numbered 1..N, with
// its own label, and memory does not follow the largest value (a bitmap of
// one bit per value up to 2^32 - 1 took 512 MiB to 1.5 GiB).
TEST(Features, SparseHugeLabelsAsTheirDenseNumbering) {
  if (!have_oracle()) GTEST_SKIP() << "needs scikit-image, scipy and tifffile";
  test::TempDir dir;
  make_inputs("sparse", dir);
  std::map<uint32_t, uint32_t> sparse_of;
  for (const std::string& line : lines(dir.file("map.csv"))) {
    const auto f = split(line);
    sparse_of[static_cast<uint32_t>(std::stoul(f[0]))] = static_cast<uint32_t>(std::stoul(f[1]));
  }
  ASSERT_GT(sparse_of.size(), 50u);
  const auto base = test::run_cli({"pyramid", "synthetic:64x64", dir.file("base.tif")});
  ASSERT_EQ(base.exit_code, 0) << base.err;
  const size_t budget = size_t{16} << 20, overhead = base.peak_rss_bytes + (size_t{48} << 20);
  for (const std::string ext : {".csv", ".geojson"}) {
    for (const std::string name : {"labels", "dense"}) {
      const auto r = features({dir.file(name + ".tif"), dir.file(name + ext), "--intensity", dir.file("rgb.tif"),
                               "--memory", "16M", "--threads", "1", "--tile", "16"});
      ASSERT_EQ(r.exit_code, 0) << r.err;
      if (!test::kSanitizerBuild) {
        EXPECT_LE(r.peak_rss_bytes, budget + overhead) << name << ext << ": peak RSS " << r.peak_rss_bytes;
      }
    }
  }
  const std::vector<std::string> sparse = lines(dir.file("labels.csv")), dense = lines(dir.file("dense.csv"));
  ASSERT_EQ(sparse.size(), sparse_of.size() + 1);
  ASSERT_EQ(dense.size(), sparse.size());
  EXPECT_EQ(sparse[0], dense[0]);
  std::set<uint32_t> seen;
  for (size_t i = 1; i < sparse.size(); ++i) {
    const size_t a = sparse[i].find(','), b = dense[i].find(',');
    const uint32_t label = static_cast<uint32_t>(std::stoul(sparse[i].substr(0, a)));
    const uint32_t number = static_cast<uint32_t>(std::stoul(dense[i].substr(0, b)));
    EXPECT_EQ(label, sparse_of[number]) << "row " << i;
    EXPECT_EQ(sparse[i].substr(a), dense[i].substr(b)) << "row " << i << ", label " << label;
    seen.insert(label);
  }
  for (const uint32_t v : {4294967295u, 2147483648u, 7u, 1000003u}) EXPECT_EQ(seen.count(v), 1u) << v;
  check_geojson(dir.file("labels.geojson"), read_csv(dir.file("labels.csv")), dir.file("labels.tif"));
  // A huge label coming back after its record is written is still refused.
  expect_refused(features({dir.file("gap.tif"), dir.file("g.csv")}),
                 "label 4294967295 has pixels again at (2, 25) after a row without any", "a huge label in two pieces");
}

// The set of written labels against std::set: dense values in raster or
// shuffled order, sparse ones over the whole u32 range (increasing, or not),
// and a mixture, probed at every member and at neighbours and random values;
// its size follows the count, not the largest value.
TEST(Features, LabelSetAgainstStdSet) {
  std::mt19937 rng(11);
  auto check = [&](const std::vector<uint32_t>& values, size_t max_bytes, const std::string& what) {
    features::LabelSet set;
    std::set<uint32_t> ref;
    for (size_t i = 0; i < values.size(); ++i) {
      set.insert(values[i]);
      ref.insert(values[i]);
      if (i % 997 == 0)
        for (int k = 0; k < 300; ++k) {
          const uint32_t member = values[rng() % (i + 1)];
          for (const uint32_t v : {member, member + 1, member - 1, static_cast<uint32_t>(rng())})
            ASSERT_EQ(set.contains(v), ref.count(v) != 0) << what << ": " << v << " after " << i;
        }
    }
    for (const uint32_t v : ref) ASSERT_TRUE(set.contains(v)) << what << ": " << v;
    EXPECT_EQ(set.size(), ref.size()) << what;
    EXPECT_LE(set.bytes(), max_bytes) << what << ": " << ref.size() << " labels";
    std::printf("[ info     ] %s: %zu labels in %zu bytes\n", what.c_str(), ref.size(), set.bytes());
  };
  const uint32_t n = 200000;
  std::vector<uint32_t> dense(n);
  std::iota(dense.begin(), dense.end(), 1u);
  check(dense, n / 4 + 4096, "dense in order");  // a bit per label (x2: growth by doubling)
  std::shuffle(dense.begin(), dense.end(), rng);
  check(dense, n + (64 << 10), "dense shuffled");
  std::vector<uint32_t> sparse(n);
  for (uint32_t& v : sparse) v = static_cast<uint32_t>(rng()) | 1u << 31;
  check(sparse, 16 * n, "sparse");
  std::sort(sparse.begin(), sparse.end());
  check(sparse, 8 * n, "sparse increasing");
  std::vector<uint32_t> mixed;
  for (uint32_t i = 0; i < n; ++i) mixed.push_back(i % 3 ? i + 1 : static_cast<uint32_t>(rng()));
  check(mixed, 16 * n, "mixed");
  check({4294967295u}, 64 << 10, "one huge label");
  check({4294967295u, 2147483648u, 7u, 1000003u, 0u, 4294967294u}, 64 << 10, "a few huge labels");
}

}  // namespace
}  // namespace tw
