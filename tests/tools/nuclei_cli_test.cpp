// tilewave nuclei SLIDE OUTDIR (tools/tilewave/cmd_nuclei.cpp, the default
// pipeline jobs/nuclei/nuclei.pipeline): the micron parameters and pipeline
// variables; the four outputs, joined by their labels; accuracy against the
// ground truth of synthetic H&E slides at two magnifications
// (tools/nuclei/synth_he.py, scored by tools/nuclei/score.py); the same
// result for every tile size and budget; real content; and the errors.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <tiffio.h>

#include <fstream>
#include <set>
#include <sstream>

#include "engine/op_params.hpp"
#include "jobs/nuclei/nuclei_params.hpp"
#include "tests/support/test_support.hpp"

namespace tw {
namespace {

std::string slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

std::string tool(const std::string& name) {
  return test::source_dir() + "/tools/nuclei/" + name;
}

bool have_python_stack() {
  return test::python_has("skimage") && test::python_has("tifffile") && test::python_has("scipy");
}

// A synthetic H&E slide and its ground truth.
void synth(const test::TempDir& tmp, const std::string& name, const std::string& size, const std::string& mpp,
           const std::string& seed) {
  const auto r = test::run_python(tool("synth_he.py"), {tmp.file(name + ".tif"), tmp.file(name + "_gt.tif"), "--size",
                                                        size, "--mpp", mpp, "--seed", seed});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
}

// score.py --json: {"f1": ..., "aji": ...}.
nlohmann::json score(const std::string& pred, const std::string& gt) {
  const auto r = test::run_python(tool("score.py"), {pred, gt, "--json"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return nlohmann::json::parse(r.out);
}

// Ours (out/labels.tif) against the truth, and against the scikit-image
// pipeline of the same steps on the same slide: F1 within 0.005 of it, AJI
// at least its, and good in absolute terms.
void expect_accurate(const test::TempDir& tmp, const std::string& name, const std::string& what) {
  const auto ours = score(tmp.file("out/labels.tif"), tmp.file(name + "_gt.tif"));
  const auto sk = test::run_python(tool("skimage_pipeline.py"), {tmp.file(name + ".tif"), tmp.file("sk.tif")});
  ASSERT_EQ(sk.exit_code, 0) << sk.err;
  const auto theirs = score(tmp.file("sk.tif"), tmp.file(name + "_gt.tif"));
  std::cout << what << ": ours " << ours.dump() << "\n  scikit-image " << theirs.dump() << "\n";
  EXPECT_GE(ours["f1"].get<double>(), 0.95);
  EXPECT_GE(ours["aji"].get<double>(), 0.85);
  EXPECT_GE(ours["f1"].get<double>(), theirs["f1"].get<double>() - 0.005);
  EXPECT_GE(ours["aji"].get<double>(), theirs["aji"].get<double>());
}

TEST(NucleiParams, MicronsBecomePixels) {
  const NucleiParams p;
  auto v = nuclei_variables(p, 0.5);
  EXPECT_EQ(v["SIGMA_PX"], "0.7");
  EXPECT_EQ(v["DIST_SIGMA_PX"], "2");
  EXPECT_EQ(v["MIN_AREA_PX"], "40");
  EXPECT_EQ(v["MAX_AREA_PX"], "1600");
  // The default h (0.05 um = 0.1 px) is one 8-bit step: the distance's
  // regional maxima after its smoothing, as finely as 8 bits hold them.
  EXPECT_EQ(v["MARKER_H"], "1");
  EXPECT_EQ(v["MARKER_LO"], "0");
  // The distance in 8-bit steps: the largest nucleus (400 um2, radius 22.6
  // px) fits in 240 steps of 1/10 px; h = 0.3 um = 0.6 px = 6 steps, and the
  // lift: d = 0 maps to 6.
  NucleiParams q = p;
  q.split_um = 0.3;
  v = nuclei_variables(q, 0.5);
  EXPECT_EQ(v["MARKER_H"], "6");
  EXPECT_EQ(v["MARKER_LO"], "5");
  EXPECT_EQ(v["DIST_FROM"], "-0.6");
  EXPECT_EQ(v["DIST_TO"], "24.9");
  v = nuclei_variables(q, 0.25);
  EXPECT_EQ(v["SIGMA_PX"], "1.4");
  EXPECT_EQ(v["MIN_AREA_PX"], "160");
  EXPECT_EQ(v["MAX_AREA_PX"], "6400");
  EXPECT_EQ(v["MARKER_H"], "6");  // steps of 1/5 px, h = 1.2 px
  EXPECT_THROW(nuclei_variables(p, 0), ParamError);
  EXPECT_THROW(nuclei_variables(p, std::nan("")), ParamError);
  NucleiParams bad = p;
  bad.max_area_um2 = bad.min_area_um2;
  EXPECT_THROW(nuclei_variables(bad, 0.5), ParamError);
}

TEST(NucleiParams, Substitution) {
  const std::map<std::string, std::string> v = {{"A", "1"}, {"BC", "x y"}};
  EXPECT_EQ(substitute_variables("f --a ${A} --b ${BC}${A}", v), "f --a 1 --b x y1");
  EXPECT_EQ(substitute_variables("no variables", v), "no variables");
  try {
    substitute_variables("f ${NOPE}", v);
    FAIL();
  } catch (const ParamError& e) {
    EXPECT_NE(std::string(e.what()).find("unknown variable ${NOPE} (known: A, BC)"), std::string::npos) << e.what();
  }
  EXPECT_THROW(substitute_variables("f ${A", v), ParamError);
  // The built-in pipeline: every variable known, a step named labels.
  const auto steps = nuclei_steps(default_nuclei_pipeline(), nuclei_variables(NucleiParams{}, 0.5));
  ASSERT_GT(steps.size(), 10u);
  bool labels = false;
  for (const auto& s : steps) {
    EXPECT_EQ(s.find("${"), std::string::npos) << s;
    labels = labels || s.rfind("labels:", 0) == 0;
  }
  EXPECT_TRUE(labels);
}

TEST(Nuclei, FourOutputsJoinedByLabelAndAccurate) {
  if (!have_python_stack()) GTEST_SKIP() << "scikit-image, scipy or tifffile missing";
  test::TempDir tmp;
  synth(tmp, "he", "1024x1024", "0.5", "12");
  const auto r = test::run_cli({"nuclei", tmp.file("he.tif"), tmp.file("out"), "--report", tmp.file("r.json")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* f : {"labels.tif", "nuclei.csv", "nuclei.geojson", "overlay.tif"})
    EXPECT_TRUE(std::ifstream(tmp.file(std::string("out/") + f)).good()) << f;
  EXPECT_EQ(tmp.list().size(), 4u) << "he.tif, he_gt.tif, out, r.json and nothing else";

  // labels.tif: u32, numbered 1..N without gaps.
  const Image labels = test::read_tiff_libtiff(tmp.file("out/labels.tif"), 0);
  ASSERT_EQ(labels.fmt(), (PixelFormat{SampleType::kU32, 1}));
  std::set<uint32_t> seen;
  for (int64_t y = 0; y < labels.rect().h; ++y)
    for (int64_t x = 0; x < labels.rect().w; ++x)
      if (const uint32_t v = labels.row<uint32_t>(y)[x]) seen.insert(v);
  ASSERT_FALSE(seen.empty());
  EXPECT_EQ(*seen.begin(), 1u);
  EXPECT_EQ(*seen.rbegin(), seen.size());

  // The CSV's label column and the GeoJSON's label properties are those labels.
  std::istringstream csv(slurp(tmp.file("out/nuclei.csv")));
  std::string line;
  std::getline(csv, line);
  EXPECT_EQ(line.rfind("label,", 0), 0u) << line;
  // The slide's resolution reaches the labels (every step carries it) and
  // so the micron columns.
  EXPECT_NE(line.find(",area_um2,"), std::string::npos) << line;
  const auto ltags = test::read_tiff_tags(tmp.file("out/labels.tif"), 0);
  EXPECT_NEAR(ltags.xres, 20000.0f, 1.0f) << "0.5 um/px is 20000 px/cm";
  std::set<uint32_t> rows;
  while (std::getline(csv, line)) rows.insert(static_cast<uint32_t>(std::stoul(line.substr(0, line.find(',')))));
  EXPECT_EQ(rows, seen);
  const auto geo = nlohmann::json::parse(slurp(tmp.file("out/nuclei.geojson")));
  EXPECT_EQ(geo["type"], "FeatureCollection");
  std::set<uint32_t> features;
  for (const auto& f : geo["features"]) {
    EXPECT_EQ(f["properties"]["objectType"], "detection");
    features.insert(f["properties"]["label"].get<uint32_t>());
  }
  EXPECT_EQ(features, seen);

  // overlay.tif: the slide's size, RGB.
  const auto tags = test::read_tiff_tags(tmp.file("out/overlay.tif"), 0);
  EXPECT_EQ(tags.width, 1024u);
  EXPECT_EQ(tags.height, 1024u);
  EXPECT_EQ(tags.spp, 3);

  const auto report = test::read_json(tmp.file("r.json"));
  EXPECT_EQ(report["features"]["csv"]["objects"].get<size_t>(), seen.size());
  EXPECT_DOUBLE_EQ(report["mpp"].get<double>(), 0.5);

  expect_accurate(tmp, "he", "0.5 um/px");
}

TEST(Nuclei, AnotherMagnification) {
  if (!have_python_stack()) GTEST_SKIP() << "scikit-image, scipy or tifffile missing";
  test::TempDir tmp;
  synth(tmp, "he", "1536x1280", "0.25", "23");
  const auto r = test::run_cli({"nuclei", tmp.file("he.tif"), tmp.file("out")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  expect_accurate(tmp, "he", "0.25 um/px");
}

// The shipped variant with background correction (top-hat by
// reconstruction): runs as a user would run it, and stays accurate.
TEST(Nuclei, TopHatVariant) {
  if (!have_python_stack()) GTEST_SKIP() << "scikit-image, scipy or tifffile missing";
  test::TempDir tmp;
  synth(tmp, "he", "1024x1024", "0.5", "41");
  const auto r = test::run_cli({"nuclei", tmp.file("he.tif"), tmp.file("out"), "--pipeline",
                                test::source_dir() + "/jobs/nuclei/nuclei-tophat.pipeline", "--background-um", "12"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto s = score(tmp.file("out/labels.tif"), tmp.file("he_gt.tif"));
  std::cout << "top-hat variant: " << s.dump() << "\n";
  EXPECT_GE(s["f1"].get<double>(), 0.9);
  EXPECT_GE(s["aji"].get<double>(), 0.78);
  // A disk beyond the erosion's range is refused by the erosion, naming it.
  const auto big = test::run_cli({"nuclei", tmp.file("he.tif"), tmp.file("out2"), "--pipeline",
                                  test::source_dir() + "/jobs/nuclei/nuclei-tophat.pipeline", "--background-um", "40"});
  EXPECT_NE(big.exit_code, 0);
  EXPECT_NE(big.err.find("bgseed"), std::string::npos) << big.err;
  const auto small =
      test::run_cli({"nuclei", tmp.file("he.tif"), tmp.file("out3"), "--pipeline",
                     test::source_dir() + "/jobs/nuclei/nuclei-tophat.pipeline", "--background-um", "0.1"});
  EXPECT_NE(small.exit_code, 0);
  EXPECT_NE(small.err.find("bgseed"), std::string::npos) << small.err;
}

TEST(Nuclei, SameForEveryTileSizeAndBudget) {
  if (!have_python_stack()) GTEST_SKIP() << "scikit-image, scipy or tifffile missing";
  test::TempDir tmp;
  synth(tmp, "he", "900x700", "0.5", "31");
  ASSERT_EQ(test::run_cli({"nuclei", tmp.file("he.tif"), tmp.file("a")}).exit_code, 0);
  const auto r =
      test::run_cli({"nuclei", tmp.file("he.tif"), tmp.file("b"), "--tile", "64", "--memory", "6M", "--threads", "1"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const Image a = test::read_tiff_libtiff(tmp.file("a/labels.tif"), 0);
  const Image b = test::read_tiff_libtiff(tmp.file("b/labels.tif"), 0);
  EXPECT_EQ(test::diff_images(a.view(), b.view()), "");
  EXPECT_EQ(slurp(tmp.file("a/nuclei.csv")), slurp(tmp.file("b/nuclei.csv")));
  // On 8 threads with memory to share, the tables are measured beside the
  // writing of the images (each with half of the budget): the same files.
  const auto c = test::run_cli({"nuclei", tmp.file("he.tif"), tmp.file("c"), "--threads", "8", "--memory", "9G",
                                "--report", tmp.file("c.json")});
  ASSERT_EQ(c.exit_code, 0) << c.err;
  EXPECT_TRUE(test::read_json(tmp.file("c.json"))["measured_beside_writing"].get<bool>());
  for (const std::string file : {"nuclei.csv", "nuclei.geojson", "overlay.tif", "labels.tif"})
    EXPECT_EQ(slurp(tmp.file("a/" + file)), slurp(tmp.file("c/" + file))) << file;
  // The tables are measured from the run's own store of the labels (spilled
  // to disk at 6M): byte for byte what `tilewave features` writes from
  // labels.tif.
  for (const std::string out : {"a", "b"})
    for (const std::string table : {"nuclei.csv", "nuclei.geojson"}) {
      const std::string again = tmp.file(out + "-again-" + table);
      const auto f =
          test::run_cli({"features", tmp.file(out + "/labels.tif"), again, "--intensity", tmp.file("he.tif")});
      ASSERT_EQ(f.exit_code, 0) << f.err;
      EXPECT_EQ(slurp(tmp.file(out + "/" + table)), slurp(again)) << out << "/" << table;
    }
}

TEST(Nuclei, RealContent) {
  if (!have_python_stack() || !test::python_has("skimage.data")) GTEST_SKIP() << "scikit-image missing";
  test::TempDir tmp;
  const auto made = test::run_python(tool("real_ihc_slide.py"), {tmp.file("ihc.tif"), "--repeat", "3"});
  ASSERT_EQ(made.exit_code, 0) << made.err;
  const auto r = test::run_cli({"nuclei", tmp.file("ihc.tif"), tmp.file("out")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto sk = test::run_python(tool("skimage_pipeline.py"), {tmp.file("ihc.tif"), tmp.file("sk.tif")});
  ASSERT_EQ(sk.exit_code, 0) << sk.err;
  // No truth here: the two pipelines should find about as many nuclei.
  const auto s = score(tmp.file("out/labels.tif"), tmp.file("sk.tif"));
  std::cout << "IHC against the scikit-image pipeline: " << s.dump() << "\n";
  const double ours = s["pred_objects"].get<double>(), theirs = s["gt_objects"].get<double>();
  EXPECT_GT(ours, 0.7 * theirs);
  EXPECT_LT(ours, 1.4 * theirs);
}

// Nothing it writes may be an input (the slide, the --pipeline file) or
// another of its outputs: each was replaced, exit 0, before.
TEST(Nuclei, NeverWritesOverAnInputOrAnotherOutput) {
  test::TempDir tmp;
  test::TiffSpec res;
  res.xres = 20000;  // 0.5 um/px
  test::write_tiff(tmp.file("he.tif"), test::pattern_image(kRgb8, 96, 80, 2).view(), res);
  const std::string pipeline = slurp(test::source_dir() + "/jobs/nuclei/nuclei.pipeline");
  ASSERT_FALSE(pipeline.empty());
  std::ofstream(tmp.file("my.pipeline")) << pipeline;
  ASSERT_EQ(::mkdir(tmp.file("out").c_str(), 0777), 0);
  std::ofstream(tmp.file("out/nuclei.csv")) << pipeline;  // a pipeline kept where the table goes
  struct Case {
    std::vector<std::string> args;
    std::string says;
  } cases[] = {
      {{"--pipeline", tmp.file("my.pipeline"), "--report", tmp.file("my.pipeline")}, "refusing to overwrite an input"},
      {{"--pipeline", tmp.file("out/nuclei.csv")}, "refusing to overwrite an input"},
      {{"--report", tmp.file("out/nuclei.geojson")}, "is the --report file"},
      {{"--report", tmp.file("out/overlay.tif")}, "is the OUTPUT file"},
      {{"--report", tmp.file("he.tif")}, "refusing to overwrite an input"},
  };
  for (const auto& c : cases) {
    std::vector<std::string> args = {"nuclei", tmp.file("he.tif"), tmp.file("out")};
    args.insert(args.end(), c.args.begin(), c.args.end());
    const auto r = test::run_cli(args);
    EXPECT_NE(r.exit_code, 0) << c.says;
    EXPECT_NE(r.err.find(c.says), std::string::npos) << r.err;
  }
  EXPECT_EQ(slurp(tmp.file("my.pipeline")), pipeline);
  EXPECT_EQ(slurp(tmp.file("out/nuclei.csv")), pipeline);
  EXPECT_FALSE(test::path_exists(tmp.file("out/nuclei.geojson")));
  EXPECT_FALSE(test::path_exists(tmp.file("out/labels.tif")));
  // A chain of thousands of steps overflowed the stack (exit 139); it is refused.
  std::ofstream longer(tmp.file("long.pipeline"));
  for (int i = 0; i < 1001; ++i) longer << "i" << i << ": filter invert\n";
  longer.close();
  const auto r = test::run_cli({"nuclei", tmp.file("he.tif"), tmp.file("o2"), "--pipeline", tmp.file("long.pipeline")});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("a pipeline of 1001 steps: at most 1000 are taken"), std::string::npos) << r.err;
  EXPECT_FALSE(test::path_exists(tmp.file("o2")));
}

// A run that fails after writing an image takes what it wrote away with the
// folder it made: here the writer of labels.tif, short of memory.
TEST(Nuclei, AFailedRunLeavesNoFolderItMade) {
  test::TempDir tmp;
  const auto r = test::run_cli({"nuclei", "synthetic:12000x64,mpp=0.5", tmp.file("out"), "--memory", "4M"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("give --memory"), std::string::npos) << r.err;
  EXPECT_FALSE(test::path_exists(tmp.file("out")));
}

// The steps are isotropic: a slide of oblong pixels is refused unless --mpp
// says what to take, and --mpp is what labels.tif and overlay.tif then say
// (features of labels.tif gave other areas than nuclei.csv before).
TEST(Nuclei, PixelSizeFromMppOrSquarePixels) {
  test::TempDir tmp;
  test::TiffSpec oblong;
  oblong.xres = 20000, oblong.yres = 40000;  // 0.5 x 0.25 um
  test::write_tiff(tmp.file("oblong.tif"), test::pattern_image(kRgb8, 96, 80, 2).view(), oblong);
  const auto no = test::run_cli({"nuclei", tmp.file("oblong.tif"), tmp.file("a")});
  EXPECT_EQ(no.exit_code, 1);
  EXPECT_NE(no.err.find("has pixels of 0.5 x 0.25 µm, not square"), std::string::npos) << no.err;
  EXPECT_FALSE(test::path_exists(tmp.file("a")));
  const auto yes = test::run_cli({"nuclei", tmp.file("oblong.tif"), tmp.file("b"), "--mpp", "0.25"});
  ASSERT_EQ(yes.exit_code, 0) << yes.err;
  for (const char* f : {"b/labels.tif", "b/overlay.tif"}) {
    const test::TiffDirTags t = test::read_tiff_tags(tmp.file(f), 0);
    ASSERT_TRUE(t.res_unit == RESUNIT_CENTIMETER || t.res_unit == RESUNIT_INCH) << f;
    const double um = t.res_unit == RESUNIT_CENTIMETER ? 1e4 : 25400;
    EXPECT_NEAR(um / t.xres, 0.25, 1e-6) << f;
    EXPECT_NEAR(um / t.yres, 0.25, 1e-6) << f;
  }
}

TEST(Nuclei, Errors) {
  test::TempDir tmp;
  test::write_tiff(tmp.file("nompp.tif"), test::pattern_image(kRgb8, 64, 64, 1).view(), test::TiffSpec{});
  test::TiffSpec with_res;
  with_res.xres = 20000;  // 0.5 um/px
  test::write_tiff(tmp.file("he.tif"), test::pattern_image(kRgb8, 96, 80, 2).view(), with_res);
  test::TiffSpec absurd_res;
  absurd_res.xres = 1e9;  // 1e-5 um/px: a broken header, not "no pixel size"
  test::write_tiff(tmp.file("absurd.tif"), test::pattern_image(kRgb8, 64, 64, 1).view(), absurd_res);
  std::ofstream(tmp.file("file")) << "x";
  std::ofstream(tmp.file("nolabels.pipeline")) << "filter gray\nlabel\n";
  std::ofstream(tmp.file("unknown.pipeline")) << "labels: label --connectivity ${FOO}\n";
  std::ofstream(tmp.file("gray.pipeline")) << "labels: filter gray\n";
  struct Case {
    std::vector<std::string> args;
    std::string says;
  } cases[] = {
      {{"nuclei", tmp.file("nompp.tif"), tmp.file("o1")}, "nompp.tif has no pixel size (mpp); give --mpp F"},
      {{"nuclei", tmp.file("missing.tif"), tmp.file("o2"), "--mpp", "0.5"}, "missing.tif"},
      {{"nuclei", tmp.file("he.tif"), tmp.file("file")}, "exists and is not a folder"},
      {{"nuclei", tmp.file("he.tif"), tmp.file("o3"), "--pipeline", tmp.file("nolabels.pipeline")},
       "no step named 'labels'"},
      {{"nuclei", tmp.file("he.tif"), tmp.file("o4"), "--pipeline", tmp.file("unknown.pipeline")},
       "unknown variable ${FOO}"},
      {{"nuclei", tmp.file("he.tif"), tmp.file("o5"), "--max-area-um2", "5"}, "min < max"},
      // Found before any work (it wrote labels.tif and the overlay, then
      // failed measuring them), and the folder it made is gone again.
      {{"nuclei", tmp.file("he.tif"), tmp.file("o6"), "--pipeline", tmp.file("gray.pipeline")},
       "the step named 'labels' makes u8 x1 (gray); it must make u32 labels"},
      {{"nuclei", tmp.file("he.tif"), tmp.file("o7"), "--mpp", "0.009"}, "out of range 0.01..100"},
      {{"nuclei", tmp.file("he.tif"), tmp.file("o8"), "--mpp", "0.01"},
       "--sigma-um 0.35 is 35 pixels, over the Gaussian's 20: give a smaller --sigma-um"},
      {{"nuclei", tmp.file("he.tif")}, "nuclei takes SLIDE OUTDIR"},
      {{"nuclei", tmp.file("absurd.tif"), tmp.file("o9")},
       "absurd.tif: XResolution/YResolution: 1e-05 x 1e-05 microns per pixel, outside 0.0001..1e+06 (pixel size "
       "unknown); give --mpp F"},
  };
  for (const auto& c : cases) {
    const auto r = test::run_cli(c.args);
    EXPECT_NE(r.exit_code, 0) << c.says;
    EXPECT_NE(r.err.find(c.says), std::string::npos) << r.err;
  }
  // Nothing made for a command refused before it ran.
  for (const char* d : {"o1", "o2", "o3", "o4", "o5", "o6", "o7", "o8", "o9"})
    EXPECT_FALSE(test::path_exists(tmp.file(d))) << d;
  // The range's ends are accepted (0.01 with smoothings it can take).
  const std::vector<std::vector<std::string>> ends = {{"--mpp", "100"},
                                                      {"--mpp", "0.01", "--sigma-um", "0.1", "--dist-sigma-um", "0.1"}};
  for (const auto& extra : ends) {
    std::vector<std::string> args = {"nuclei", tmp.file("he.tif"), tmp.file("ends" + extra[1])};
    args.insert(args.end(), extra.begin(), extra.end());
    const auto r = test::run_cli(args);
    EXPECT_EQ(r.exit_code, 0) << extra[1] << ": " << r.err;
  }
}

}  // namespace
}  // namespace tw
