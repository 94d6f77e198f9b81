// tilewave run as users run it: the output (and each --keep) equals the same
// steps run as separate commands chained through deflate TIFFs; the report's
// per-step figures; bad pipelines refused with one line naming the step
// before any work, leaving nothing behind; one progress line; the memory
// budget held with two wavefront barriers; single-op commands unchanged.
#include <gtest/gtest.h>
#include <tiffio.h>

#include <algorithm>
#include <cstring>
#include <fstream>

#include "engine/op_registry.hpp"
#include "io/open_source.hpp"
#include "tests/support/test_support.hpp"

namespace tw {
namespace {

using Args = std::vector<std::string>;

// "" when both images hold the same bytes; else where they first differ.
std::string bytes_diff(const Image& a, const Image& b) {
  if (a.fmt() != b.fmt()) return "formats differ: " + a.fmt().str() + " vs " + b.fmt().str();
  if (a.rect().w != b.rect().w || a.rect().h != b.rect().h)
    return "sizes differ: " + a.rect().str() + " vs " + b.rect().str();
  int64_t rows = 0, first = -1;
  for (int64_t y = 0; y < a.rect().h; ++y)
    if (std::memcmp(a.row_bytes(a.rect().y + y), b.row_bytes(b.rect().y + y), a.view().row_length_bytes()) != 0) {
      if (first < 0) first = y;
      ++rows;
    }
  if (rows == 0) return "";
  // The first differing sample, through the tests' own comparison (floats
  // rounded: enough to say where).
  const Image ra(a.fmt(), Rect(0, first, a.rect().w, 1)), rb(b.fmt(), Rect(0, first, b.rect().w, 1));
  std::memcpy(ra.row_bytes(first), a.row_bytes(first), a.view().row_length_bytes());
  std::memcpy(rb.row_bytes(first), b.row_bytes(first), b.view().row_length_bytes());
  return std::to_string(rows) + " rows differ, the first row " + std::to_string(first) + ": " +
         test::diff_images(ra.view(), rb.view());
}

size_t lines(const std::string& s) {
  return static_cast<size_t>(std::count(s.begin(), s.end(), '\n'));
}

bool has_ops(std::initializer_list<std::vector<std::string>> commands) {
  for (const auto& c : commands)
    if (!op_registry().find_command(c)) return false;
  return true;
}

class PipelineCli : public ::testing::Test {
 protected:
  // Level 0 of a file (or a synthetic slide) as our reader decodes it.
  Image level0(const std::string& path) {
    const SourcePtr s = open_source(path);
    return s->read(0, s->level(0).bounds());
  }
  test::RunResult cli(const Args& args, const test::RunOptions& opt = {}) { return test::run_cli(args, opt); }
  // Runs commands one by one; "" when all succeeded.
  std::string run_all(const std::vector<Args>& commands) {
    for (const Args& c : commands) {
      const auto r = cli(c);
      if (r.exit_code != 0) return c[0] + " " + c[1] + ": " + r.err;
    }
    return "";
  }
  std::string f(const std::string& name) { return tmp.file(name); }
  test::TempDir tmp;
  const std::string slide = "synthetic:517x389,seed=3";
};

// Otsu (a reduction barrier), then fill-holes and the EDT (two wavefront
// barriers), at a tile size that divides neither side; --keep of a
// streamed and of a barrier result; the report's steps.
TEST_F(PipelineCli, ReductionAndWavefrontBarriersEqualSeparateCommands) {
  const Args deflate = {"--compression", "deflate"};
  const auto step = [&](Args a) {
    a.insert(a.end(), deflate.begin(), deflate.end());
    return a;
  };
  ASSERT_EQ(run_all({step({"filter", "gray", slide, f("1.tif")}),
                     step({"filter", "threshold", f("1.tif"), f("2.tif"), "--otsu"}),
                     step({"filter", "invert", f("2.tif"), f("3.tif")}), step({"fill-holes", f("3.tif"), f("4.tif")}),
                     step({"edt", f("4.tif"), f("5.tif")})}),
            "");
  const auto r =
      cli({"run", slide, f("out.tif"), "filter gray", "mask: filter threshold --otsu", "filter invert", "fill-holes",
           "edt", "--tile", "48", "--keep", "mask=k2.tif", "--keep", "3=" + f("k3.tif"), "--report", f("r.json")},
          {{}, tmp.path()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "") << "no progress line unless asked";
  EXPECT_EQ(bytes_diff(level0(f("out.tif")), level0(f("5.tif"))), "");
  EXPECT_EQ(bytes_diff(level0(f("k2.tif")), level0(f("2.tif"))), "") << "--keep mask";
  EXPECT_EQ(bytes_diff(level0(f("k3.tif")), level0(f("3.tif"))), "") << "--keep 3";
  EXPECT_EQ(test::read_tiff_tags(f("out.tif"), 0).compression, COMPRESSION_ADOBE_DEFLATE) << "op results lossless";
  EXPECT_EQ(test::read_tiff_tags(f("k2.tif"), 0).compression, COMPRESSION_ADOBE_DEFLATE);
  // stdout: the threshold's message under its step, the kept files, the output.
  const auto otsu = cli({"filter", "threshold", f("1.tif"), f("t.tif"), "--otsu"});
  ASSERT_EQ(otsu.exit_code, 0) << otsu.err;
  const std::string t = otsu.out.substr(0, otsu.out.find('\n'));  // "Otsu threshold: N"
  ASSERT_EQ(t.rfind("Otsu threshold: ", 0), 0u) << otsu.out;
  EXPECT_NE(r.out.find("step 2 'mask' (filter threshold): " + t + "\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("wrote k2.tif: "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("kept from step 3 (filter invert)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("5 steps (1 streamed, 2 threshold (barrier), 3 streamed, 4 fill-holes (barrier), 5 edt "
                       "(barrier))"),
            std::string::npos)
      << r.out;

  const nlohmann::json rep = test::read_json(f("r.json"));
  EXPECT_EQ(rep["command"], "run");
  EXPECT_EQ(rep["plan"], "1 streamed, 2 threshold (barrier), 3 streamed, 4 fill-holes (barrier), 5 edt (barrier)");
  ASSERT_EQ(rep["steps"].size(), 5u) << rep.dump();
  const char* kinds[] = {"streamed", "barrier", "streamed", "barrier", "barrier"};
  const char* ops[] = {"filter gray", "filter threshold", "filter invert", "fill-holes", "edt"};
  for (size_t i = 0; i < 5; ++i) {
    const nlohmann::json& s = rep["steps"][i];
    SCOPED_TRACE(s.dump());
    EXPECT_EQ(s["step"], i + 1);
    EXPECT_EQ(s["kind"], kinds[i]);
    EXPECT_EQ(s["op"], ops[i]);
    for (const char* key : {"text", "pixel_type", "tile_visits", "pixels_read", "bytes_spilled", "bytes_uploaded",
                            "bytes_downloaded", "values"})
      EXPECT_TRUE(s.contains(key)) << key;
    EXPECT_TRUE(s.contains(std::string(kinds[i]) == "streamed" ? "busy_seconds" : "seconds"));
    EXPECT_GT(s["tile_visits"].get<int64_t>(), 0);
    EXPECT_GE(s["pixels_read"].get<int64_t>(), 517 * 389);
  }
  EXPECT_EQ(rep["steps"][1]["name"], "mask");
  EXPECT_EQ(rep["steps"][1]["text"], "mask: filter threshold --otsu");
  EXPECT_EQ(rep["steps"][1]["values"]["otsu_threshold"], std::stoi(t.substr(16)));
  EXPECT_EQ(rep["steps"][4]["pixel_type"], "f32 x1 (gray)");
  ASSERT_EQ(rep["kept"].size(), 2u);
  EXPECT_EQ(rep["kept"][0]["step"], 2);
  EXPECT_EQ(rep["kept"][1]["step"], 3);
}

// Steps from a --pipeline file (comments, blank lines) after one given as
// an argument; a named background read by a two-input step.
TEST_F(PipelineCli, PipelineFileWithNamedTwoInputStep) {
  if (!has_ops({{"math", "subtract"}})) GTEST_SKIP() << "math ops not registered";
  {
    std::ofstream p(f("steps.txt"));
    p << "# background subtraction\n"
         "\n"
         "g: filter gray\n"
         "bg: filter gaussian --sigma 4   # the slowly varying background\n"
         "   \n"
         "math subtract g bg\n"
         "filter threshold --value 12\n";
  }
  ASSERT_EQ(run_all({{"filter", "gaussian", slide, f("1.tif"), "--sigma", "1", "--compression", "deflate"},
                     {"filter", "gray", f("1.tif"), f("g.tif"), "--compression", "deflate"},
                     {"filter", "gaussian", f("g.tif"), f("bg.tif"), "--sigma", "4", "--compression", "deflate"},
                     {"math", "subtract", f("g.tif"), f("bg.tif"), f("d.tif"), "--compression", "deflate"},
                     {"filter", "threshold", f("d.tif"), f("5.tif"), "--value", "12", "--compression", "deflate"}}),
            "");
  const auto r = cli({"run", slide, f("out.tif"), "filter gaussian --sigma 1", "--pipeline", f("steps.txt"), "--tile",
                      "64", "--keep", "bg=" + f("kbg.tif"), "--keep", "4=" + f("k4.tif"), "--report", f("r.json")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(bytes_diff(level0(f("out.tif")), level0(f("5.tif"))), "");
  EXPECT_EQ(bytes_diff(level0(f("kbg.tif")), level0(f("bg.tif"))), "");
  EXPECT_EQ(bytes_diff(level0(f("k4.tif")), level0(f("d.tif"))), "");
  const nlohmann::json rep = test::read_json(f("r.json"));
  EXPECT_EQ(rep["plan"], "1-5 streamed");
  ASSERT_EQ(rep["steps"].size(), 5u);
  EXPECT_EQ(rep["steps"][2]["text"], "bg: filter gaussian --sigma 4   # the slowly varying background");
  EXPECT_EQ(rep["steps"][3]["op"], "math subtract");
}

// hed's float densities: a channel picked, converted to 8 bits, then Otsu
// and the EDT; the run at a tile size of 32.
TEST_F(PipelineCli, HedChannelConvertEqualSeparateCommands) {
  if (!has_ops({{"filter", "channel"}, {"filter", "convert"}})) GTEST_SKIP() << "channel, convert not registered";
  ASSERT_EQ(run_all({{"filter", "hed", slide, f("1.tif")},
                     {"filter", "channel", f("1.tif"), f("2.tif"), "--index", "0"},
                     {"filter", "convert", f("2.tif"), f("3.tif"), "--type", "u8", "--from", "0", "--to", "0.25",
                      "--compression", "deflate"},
                     {"filter", "threshold", f("3.tif"), f("4.tif"), "--otsu", "--compression", "deflate"},
                     {"edt", f("4.tif"), f("5.tif")}}),
            "");
  ASSERT_EQ(test::read_tiff_tags(f("1.tif"), 0).compression, COMPRESSION_ADOBE_DEFLATE) << "float: lossless";
  const auto r = cli({"run", slide, f("out.tif"), "filter hed", "filter channel --index 0",
                      "filter convert --type u8 --from 0 --to 0.25", "filter threshold --otsu", "edt", "--tile", "32"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(bytes_diff(level0(f("out.tif")), level0(f("5.tif"))), "");
}

// One-word commands take their options and images inside a step as they
// do on the command line: 'hdome --h 10', 'reconstruct 3 g', 'edt
// --threshold 2'.
TEST_F(PipelineCli, OneWordCommandsWithOptionsAndImages) {
  ASSERT_EQ(run_all({{"filter", "gray", slide, f("1.tif"), "--compression", "deflate"},
                     {"filter", "gaussian", f("1.tif"), f("g.tif"), "--sigma", "1.5", "--compression", "deflate"},
                     {"hdome", f("g.tif"), f("3.tif"), "--h", "10"},
                     {"reconstruct", f("3.tif"), f("g.tif"), f("4.tif"), "--connectivity", "4"},
                     {"edt", f("4.tif"), f("5.tif"), "--threshold", "2"}}),
            "");
  const auto r = cli({"run", slide, f("out.tif"), "filter gray", "g: filter gaussian --sigma 1.5", "hdome --h 10",
                      "reconstruct 3 g --connectivity 4", "edt --threshold 2", "--tile", "64"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(bytes_diff(level0(f("out.tif")), level0(f("5.tif"))), "");
}

// Every bad pipeline: one line on stderr naming the step, the exit status
// of its kind, nothing left in the output's folder — and refused before any
// work: the input is 400 megapixels behind two wavefront steps, which no
// run would finish in the time allowed.
TEST_F(PipelineCli, BadPipelinesOneLineNamingTheStepNothingLeft) {
  test::TempDir out;
  const std::string big = "synthetic:20000x20000,gray", o = out.file("o.tif");
  const Args heavy = {"filter gaussian --sigma 5", "fill-holes", "filter invert", "fill-holes"};
  struct Case {
    Args steps;
    Args options;
    int code;
    std::string says;
  };
  std::vector<Case> cases = {
      {{"nope"}, {}, 2, "step 5: unknown op 'nope'"},
      {{"filter blur"}, {}, 2, "step 5: unknown filter op 'blur'"},
      {{"filter gaussian --sigma 2 --radius 3"}, {}, 2, "step 5 (filter gaussian): unknown option --radius"},
      {{"filter gaussian --sigma 2 --memory 1G"}, {}, 2, "step 5 (filter gaussian): --memory applies to the whole run"},
      {{"filter gaussian --sigma 99"}, {}, 2, "step 5 (filter gaussian): --sigma 99 is out of range"},
      {{"filter gaussian"}, {}, 2, "step 5 (filter gaussian): gaussian needs --sigma"},
      {{"filter gray", "edt", "filter invert"}, {}, 1, "step 7 (filter invert): the result of step 6 (edt) is f32"},
      {{"filter invert nothere"}, {}, 1, "step 5 (filter invert) reads 'nothere', which no step makes"},
      {{"filter invert 7", "filter gray", "filter gray"}, {}, 1, "step 5 (filter invert) reads '7', made by step 7"},
      {{"x: filter invert x"}, {}, 1, "step 5 'x' (filter invert) reads 'x', made by this step itself"},
      {{"a: filter invert", "a: filter invert"}, {}, 2, "step 6 'a' (filter invert): the name 'a' is given twice"},
      {{"stats"}, {}, 1, "step 5 (stats) is the last step and makes numbers, not an image to write"},
      {{"filter gray"}, {"--keep", "9=" + out.file("k.tif")}, 1, "--keep 9: no step has that name or number"},
      {{"filter gray"}, {"--keep", "5=" + o}, 2, "written twice"},
      {{"filter gray"}, {"--keep", "nofile"}, 2, "--keep takes NAME=FILE"},
      {{"edt"}, {"--compression", "jpeg"}, 1, "JPEG stores 8-bit samples only; this image has f32 samples"},
  };
  if (has_ops({{"math", "subtract"}})) {
    cases.push_back({{"math subtract 4"}, {}, 1, "step 5 (math subtract) reads 2 image(s), but 1 are named"});
    cases.push_back({{"math subtract"}, {}, 1, "step 5 (math subtract) reads 2 images: name them"});
    cases.push_back({{"y: math subtract y input"}, {}, 1, "step 5 'y' (math subtract) reads 'y', made by this step"});
  }
  cases.push_back({{"filter hed", "edt"}, {}, 1, "step 2 (edt): the result of step 1 (filter hed) is f32 x3"});
  for (const Case& c : cases) {
    Args args = {"run", c.steps[0] == "filter hed" ? "synthetic:20000x20000" : big, o};
    if (c.steps[0] != "filter hed") args.insert(args.end(), heavy.begin(), heavy.end());
    args.insert(args.end(), c.steps.begin(), c.steps.end());
    args.insert(args.end(), c.options.begin(), c.options.end());
    const auto r = cli(args);
    SCOPED_TRACE(c.steps.back());
    EXPECT_EQ(r.exit_code, c.code) << r.err;
    EXPECT_EQ(r.err.rfind("tilewave: error: ", 0), 0u) << r.err;
    EXPECT_NE(r.err.find(c.says), std::string::npos) << r.err;
    EXPECT_EQ(lines(r.err), 1u) << r.err;
    EXPECT_EQ(r.err.back(), '\n');
    EXPECT_LT(r.seconds, 20.0) << "refused before the work";
    EXPECT_EQ(out.list(), std::vector<std::string>{}) << "left behind";
    EXPECT_EQ(r.out, "");
  }
}

// A step with an open quote is refused like any other bad step: one line
// naming it (here the third, read from a --pipeline file after two steps
// given as arguments).
TEST_F(PipelineCli, OpenQuoteNamesTheStep) {
  {
    std::ofstream p(f("quote.txt"));
    p << "# one step\nfilter gaussian --sigma '2\n";
  }
  for (const Args& steps : {Args{"filter gray", "filter invert", "filter gaussian --sigma \"2"},
                            Args{"filter gray", "filter invert", "--pipeline", f("quote.txt")}}) {
    Args args = {"run", slide, f("o.tif")};
    args.insert(args.end(), steps.begin(), steps.end());
    const auto r = cli(args);
    SCOPED_TRACE(steps.back());
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_EQ(r.err.rfind("tilewave: error: step 3", 0), 0u) << r.err;
    EXPECT_NE(r.err.find("unclosed"), std::string::npos) << r.err;
    EXPECT_EQ(lines(r.err), 1u) << r.err;
  }
}

// The whole run's mistakes: no steps, a --pipeline file that cannot be
// read, --keep onto an input; a failure while running names its step and
// leaves nothing either.
TEST_F(PipelineCli, RunErrors) {
  test::TempDir out;
  const std::string o = out.file("o.tif");
  test::TiffSpec spec;
  spec.compression = COMPRESSION_ADOBE_DEFLATE;
  test::write_tiff(f("in.tif"), level0(slide).view(), spec);
  {
    std::ofstream p(f("comments.txt"));
    p << "# nothing here\n\n";
  }
  {
    std::ofstream p(f("bad.txt"));
    p << "# line 1\nfilter gray\nfilter gaussian --sigma 2 --sigma 3\n";
  }
  struct Case {
    Args args;
    int code;
    std::string says, also = "";
  };
  const Case cases[] = {
      {{"run", slide, o}, 2, "run: no steps"},
      {{"run", slide, o, "--pipeline", f("comments.txt")}, 2, "run: no steps"},
      {{"run", slide, o, "--pipeline", f("missing.txt")}, 1, "missing.txt"},
      {{"run", slide, o, "--pipeline", tmp.path()}, 1, "not a regular file"},
      {{"run", slide, o, "filter invert", "--pipeline", f("bad.txt")},
       2,
       "step 3 (filter gaussian): --sigma given twice"},
      {{"run", slide}, 2, "run takes INPUT OUTPUT.tif STEP"},
      {{"run", f("in.tif"), o, "filter gray", "--keep", "1=" + f("in.tif")}, 1, "refusing to overwrite an input"},
      {{"run", f("in.tif"), o, "filter gray", "--report", out.file("r.json"), "--keep", "1=" + out.file("r.json")},
       2,
       "is the --report file"},
      {{"run", f("in.tif"), o, "filter gray", "--keep", "1=" + out.file("k.tif"), "--keep", "1=" + out.file("k.tif")},
       2,
       "written twice"},
      // Found while running: the marker (the image brightened) above the mask.
      {{"run", f("in.tif"), o, "g: filter gray", "b: filter brightness --add 10", "reconstruct b g"},
       1,
       "step 3 (reconstruct): ",
       "above the mask"},
  };
  for (const Case& c : cases) {
    const auto r = cli(c.args);
    SCOPED_TRACE(c.args.back());
    EXPECT_EQ(r.exit_code, c.code) << r.err;
    EXPECT_NE(r.err.find(c.says), std::string::npos) << r.err;
    EXPECT_NE(r.err.find(c.also), std::string::npos) << r.err;
    EXPECT_EQ(r.err.rfind("tilewave: error: ", 0), 0u) << r.err;
    EXPECT_EQ(lines(r.err), 1u) << r.err;
    EXPECT_EQ(out.list(), std::vector<std::string>{}) << "left behind";
  }
}

// With TW_PROGRESS=1 the run shows its barriers and its writing on one
// line (carriage returns, one newline at the end); without it, nothing.
// Steps that each read the one before twice: the planner stores what a pass
// would compute again and again (2^20 computations of the first step per
// tile otherwise: minutes for a few tiles); the result is the first step's.
TEST_F(PipelineCli, TwentyStepsEachReadingTheLastTwiceRunInLinearTime) {
  if (!has_ops({{"math", "max"}})) GTEST_SKIP() << "math ops not registered";
  std::ofstream p(f("twice.pipeline"));
  p << "s0: filter gray\n";
  for (int i = 1; i <= 20; ++i) p << "s" << i << ": math max s" << i - 1 << " s" << i - 1 << "\n";
  p.close();
  const auto r = cli({"run", slide, f("out.tif"), "--pipeline", f("twice.pipeline"), "--tile", "128", "--report",
                      f("report.json"), "--compression", "deflate"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json report = test::read_json(f("report.json"));
  for (const auto& st : report["steps"])  // 20 tiles of 128^2: at most 2 visits each, and their halos' neighbours
    EXPECT_LE(st["tile_visits"].get<int64_t>(), 4 * 20) << st.dump();
  ASSERT_EQ(cli({"filter", "gray", slide, f("gray.tif"), "--tile", "128", "--compression", "deflate"}).exit_code, 0);
  EXPECT_EQ(bytes_diff(level0(f("out.tif")), level0(f("gray.tif"))), "");
}

// The writer gets what the steps' stores leave of --memory: when that is too
// little, the message speaks of the --memory the user gave (not of the
// remainder as if it were it) and says what to give; what it says works.
TEST_F(PipelineCli, AWriterShortOfMemorySaysWhatToGive) {
  Image mask = test::random_image({SampleType::kU8, 1}, 257, 257, 5);
  for (int64_t y = 0; y < 257; ++y)
    for (int64_t x = 0; x < 257; ++x) *mask.ptr<uint8_t>(x, y) = *mask.ptr<uint8_t>(x, y) > 127 ? 255 : 0;
  test::write_tiff(f("mask.tif"), mask.view(), test::TiffSpec{});
  const auto r = cli({"label", f("mask.tif"), f("labels.tif"), "--memory", "4M"});
  ASSERT_EQ(r.exit_code, 1) << r.err;
  EXPECT_EQ(lines(r.err), 1u) << r.err;
  EXPECT_NE(r.err.find("--memory 4.0 MiB leaves "), std::string::npos) << r.err;
  const size_t at = r.err.find("give --memory ");
  ASSERT_NE(at, std::string::npos) << r.err;
  EXPECT_FALSE(test::path_exists(f("labels.tif")));
  std::string give = r.err.substr(at + 14);
  give = give.substr(0, give.find(" or more"));                        // "5.0 MiB"
  give.erase(std::remove(give.begin(), give.end(), ' '), give.end());  // "5.0MiB"
  const auto again = cli({"label", f("mask.tif"), f("labels.tif"), "--memory", give});
  EXPECT_EQ(again.exit_code, 0) << give << ": " << again.err;
}

TEST_F(PipelineCli, OneProgressLine) {
  const Args run = {"run",        slide, f("o.tif"), "filter gray", "filter threshold --otsu",
                    "fill-holes", "edt", "--tile",   "64"};
  const auto r = cli(run, {{{"TW_PROGRESS", "1"}}, ""});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(lines(r.err), 1u) << r.err;
  EXPECT_EQ(r.err.back(), '\n') << r.err;
  for (const char* label : {"step 2/4 filter threshold", "step 3/4 fill-holes", "step 4/4 edt", "writing "})
    EXPECT_NE(r.err.find(label), std::string::npos) << label << " in " << r.err;
  EXPECT_EQ(r.err.find("step 1/4"), std::string::npos) << "streamed steps run inside the next read: " << r.err;
  EXPECT_NE(r.err.find('\r'), std::string::npos);
  const auto quiet = cli(run);
  ASSERT_EQ(quiet.exit_code, 0) << quiet.err;
  EXPECT_EQ(quiet.err, "");
}

// A chain with two wavefront barriers on an input 8x --memory: every store
// spills, and the process stays within the budget plus the fixed overhead,
// as every single command does (hardening_cli_test's MemoryContract).
TEST_F(PipelineCli, TwoWavefrontBarriersWithinTheBudget) {
  const Args steps = {"filter gray", "filter threshold --otsu", "filter invert", "fill-holes", "edt"};
  Args base = {"run", "synthetic:64x64", f("base.tif")};
  base.insert(base.end(), steps.begin(), steps.end());
  const auto b = cli(base);
  ASSERT_EQ(b.exit_code, 0) << b.err;
  const size_t budget = size_t{4} << 20, overhead = b.peak_rss_bytes + (size_t{24} << 20);
  // 34.7 MB of RGB; a sanitizer build checks no RSS bound and runs an input
  // twice the budget (it still spills) in a quarter of the time.
  const std::string input = test::kSanitizerBuild ? "synthetic:1700x1700" : "synthetic:3400x3400";
  // Tiles of 128, as `edt` alone takes at 4M (its float32 pyramid needs
  // 3.9 MiB for 256-pixel tiles).
  Args big = {"run", input, f("o.tif"), "--memory", "4M", "--tile", "128", "--report", f("r.json")};
  big.insert(big.end(), steps.begin(), steps.end());
  const auto r = cli(big);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  if (!test::kSanitizerBuild) {
    EXPECT_LE(r.peak_rss_bytes, budget + overhead)
        << "peak RSS " << r.peak_rss_bytes / 1048576.0 << " MiB, allowed " << (budget + overhead) / 1048576.0;
  }
  std::printf("[ info     ] run %s (5 steps) --memory 4M: peak RSS %.1f MiB, %.1f s\n", input.c_str(),
              r.peak_rss_bytes / 1048576.0, r.seconds);
  const nlohmann::json rep = test::read_json(f("r.json"));
  // Fill-holes holds its mask as bits where both bit planes fit half its
  // share (the sanitizer build's smaller input), or the device's budget on a
  // GPU host (--device auto): solved whole, nothing to spill. Otherwise its
  // byte stores spill, as the EDT's columns do.
  const bool fill_whole = rep["steps"][3]["values"]["whole_image"].get<bool>();
  const nlohmann::json& fill = rep["steps"][3]["values"];
  const bool on_gpu = fill.value("gpu_device_input", false) || fill.value("gpu_kernel_seconds", 0.0) > 0;
  if (!on_gpu) {
    EXPECT_EQ(fill_whole, test::kSanitizerBuild) << rep["steps"][3].dump();
  }
  if (!fill_whole) {
    EXPECT_GT(rep["steps"][3]["bytes_spilled"].get<uint64_t>(), 0u) << "step 4 kept in memory";
    EXPECT_GT(rep["steps"][3]["values"]["tiles_spilled"].get<int64_t>(), 0);
  }
  EXPECT_GT(rep["steps"][4]["bytes_spilled"].get<uint64_t>(), 0u) << "step 5 kept in memory";
  // The same pixels as a run that fits in memory.
  Args fits = {"run", input, f("fits.tif"), "--memory", "1G", "--tile", "128"};
  fits.insert(fits.end(), steps.begin(), steps.end());
  ASSERT_EQ(cli(fits).exit_code, 0);
  EXPECT_EQ(bytes_diff(level0(f("o.tif")), level0(f("fits.tif"))), "");
}

// The same at a budget where the heap's free pages would show: a seven-step
// chain (a fused Gaussian, Otsu's stored input, two wavefront barriers) on
// 515 MB of RGB under --memory 64M. Without the stores handing glibc's free
// pages back, the peak was a third over the budget (1.39 GB at --memory 1G).
TEST_F(PipelineCli, SevenStepsWithinA64MBudget) {
  if (test::kSanitizerBuild) GTEST_SKIP() << "RSS bounds are not checked under the sanitizers";
  const Args steps = {"filter gray",
                      "filter gaussian --sigma 2",
                      "filter threshold --otsu",
                      "filter invert",
                      "fill-holes",
                      "edt",
                      "filter convert --type u8 --from 0 --to 40"};
  Args base = {"run", "synthetic:64x64", f("base.tif"), "--device", "cpu", "--threads", "2"};
  base.insert(base.end(), steps.begin(), steps.end());
  const auto b = cli(base);
  ASSERT_EQ(b.exit_code, 0) << b.err;
  // Per-step working tiles of every thread come on top of the single
  // commands' 24 MiB.
  const size_t budget = size_t{64} << 20, overhead = b.peak_rss_bytes + (size_t{32} << 20);
  // On the CPU with 2 threads, as CI runs it: a GPU's context and 16
  // threads' working tiles are more fixed overhead than 32 MiB.
  Args big = {"run", "synthetic:13100x13100", f("o.tif"), "--memory", "64M", "--device", "cpu", "--threads", "2"};
  big.insert(big.end(), steps.begin(), steps.end());
  const auto r = cli(big);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_LE(r.peak_rss_bytes, budget + overhead)
      << "peak RSS " << r.peak_rss_bytes / 1048576.0 << " MiB, allowed " << (budget + overhead) / 1048576.0;
  std::printf("[ info     ] run synthetic:13100x13100 (7 steps) --memory 64M: peak RSS %.1f MiB, %.1f s\n",
              r.peak_rss_bytes / 1048576.0, r.seconds);
}

// Where each step runs alone under --memory, so does the chain: every
// barrier takes its share of what the ones before it left, and the writer
// still needs its own at the end. Six fill-holes at the smallest budget
// (fill-holes of a filled image is the same image).
TEST_F(PipelineCli, ManyBarriersRunWhereEachStepRuns) {
  const std::string in = "synthetic:600x500,gray";
  const auto one = cli({"fill-holes", in, f("one.tif"), "--memory", "4M"});
  ASSERT_EQ(one.exit_code, 0) << one.err;
  const auto six = cli({"run", in, f("six.tif"), "fill-holes", "fill-holes", "fill-holes", "fill-holes", "fill-holes",
                        "fill-holes", "--memory", "4M"});
  ASSERT_EQ(six.exit_code, 0) << six.err;
  EXPECT_EQ(bytes_diff(level0(f("six.tif")), level0(f("one.tif"))), "");
}

// The single-op commands run as one-step pipelines and print as before:
// their messages without a step's label, their own summary, their report.
TEST_F(PipelineCli, SingleOpCommandsPrintAsBefore) {
  const auto t = cli({"filter", "threshold", slide, "t.tif", "--otsu", "--report", "t.json"}, {{}, tmp.path()});
  ASSERT_EQ(t.exit_code, 0) << t.err;
  ASSERT_EQ(t.out.rfind("Otsu threshold: ", 0), 0u) << t.out;
  const int otsu = std::stoi(t.out.substr(16));
  const std::string wrote = t.out.substr(t.out.find('\n') + 1);
  EXPECT_EQ(wrote.rfind("wrote t.tif: ", 0), 0u) << t.out;
  EXPECT_NE(wrote.find("threshold on "), std::string::npos) << t.out;
  EXPECT_EQ(wrote.find("step"), std::string::npos) << t.out;
  EXPECT_EQ(lines(t.out), 2u) << t.out;
  EXPECT_EQ(t.err, "");
  const nlohmann::json rep = test::read_json(f("t.json"));
  EXPECT_EQ(rep["command"], "filter threshold");
  EXPECT_EQ(rep["otsu_threshold"], otsu);

  const auto e = cli({"edt", slide, "e.tif"}, {{}, tmp.path()});
  ASSERT_EQ(e.exit_code, 0) << e.err;
  EXPECT_EQ(e.out.rfind("wrote e.tif: ", 0), 0u) << e.out;
  EXPECT_NE(e.out.find("distances "), std::string::npos) << e.out;
  EXPECT_EQ(lines(e.out), 1u) << e.out;

  const auto s = cli({"stats", slide, "--histogram", "4"});
  ASSERT_EQ(s.exit_code, 0) << s.err;
  const nlohmann::json st = nlohmann::json::parse(s.out);
  EXPECT_EQ(st["input"], slide);
  EXPECT_EQ(st["histogram"][0].size(), 4u);

  // Their errors name no step: the command is the step.
  const auto bad = cli({"filter", "hed", "synthetic:64x64,gray", f("h.tif")});
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_EQ(bad.err.find("step"), std::string::npos) << bad.err;
  EXPECT_EQ(lines(bad.err), 1u) << bad.err;
  const auto two = cli({"reconstruct", f("t.tif"), "synthetic:64x64,gray", f("r.tif")});
  EXPECT_EQ(two.exit_code, 1);
  EXPECT_EQ(two.err.find("step"), std::string::npos) << two.err;

  // And `run` with that one step writes the same pixels.
  const auto one = cli({"run", slide, f("r1.tif"), "filter threshold --otsu"});
  ASSERT_EQ(one.exit_code, 0) << one.err;
  EXPECT_EQ(bytes_diff(level0(f("r1.tif")), level0(f("t.tif"))), "");
  EXPECT_EQ(one.out.rfind("step 1 (filter threshold): Otsu threshold: " + std::to_string(otsu) + "\n", 0), 0u)
      << one.out;
}

}  // namespace
}  // namespace tw
