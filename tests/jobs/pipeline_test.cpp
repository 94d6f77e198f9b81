// Pipelines (jobs/pipeline/): a step's words and options, the planner's
// checks (every one before any pixel is read, each message naming its step),
// and the executor's result equal — byte for byte — to the same steps run as
// separate commands with lossless intermediates, at tile sizes 64, 67, 256
// and the whole image, and out of core.
#include "jobs/pipeline/pipeline.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <map>

#include "io/open_source.hpp"
#include "jobs/nuclei/nuclei_params.hpp"
#include "jobs/pipeline/executor.hpp"
#include "jobs/pipeline/plan.hpp"
#include "tests/jobs/pipeline_chains.hpp"
#include "tests/support/nested_reads.hpp"
#include "tests/support/test_support.hpp"

namespace tw {
namespace {

using Words = std::vector<std::string>;

// The message of the error that parsing (and planning, on an RGB input)
// `steps` throws, "" for none; *param: whether it was a ParamError (exit 2).
std::string pipeline_error(const Words& steps, bool* param = nullptr, PixelFormat input = kRgb8) {
  try {
    const Pipeline p = parse_pipeline(steps);
    plan_pipeline(p, {{"input", {input, "slide.tif"}}});
  } catch (const ParamError& e) {
    if (param) *param = true;
    return e.what();
  } catch (const InputError& e) {
    if (param) *param = false;
    return e.what();
  }
  return "";
}

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

TEST(SplitWords, AsAShellWould) {
  EXPECT_EQ(split_words("filter gaussian --sigma 2"), (Words{"filter", "gaussian", "--sigma", "2"}));
  EXPECT_EQ(split_words("  a\t b  "), (Words{"a", "b"}));
  EXPECT_EQ(split_words("a 'b c' \"d e\""), (Words{"a", "b c", "d e"}));
  EXPECT_EQ(split_words("a'b c'd"), (Words{"ab cd"})) << "quoted parts join their word";
  EXPECT_EQ(split_words("'it''s'"), (Words{"its"}));
  EXPECT_EQ(split_words(R"("say \"hi\" \\ \n")"), (Words{R"(say "hi" \ \n)"}))
      << "in double quotes only \\\" and \\\\ are escapes";
  EXPECT_EQ(split_words(R"('a\b')"), (Words{R"(a\b)"})) << "no escapes in single quotes";
  EXPECT_EQ(split_words(R"(a\ b c\'d)"), (Words{"a b", "c'd"}));
  EXPECT_EQ(split_words("a '' b"), (Words{"a", "", "b"}));
  EXPECT_EQ(split_words("edt # the distances"), (Words{"edt"}));
  EXPECT_EQ(split_words("a#b '#c'"), (Words{"a#b", "#c"})) << "# starts a comment only at a word's start";
  EXPECT_EQ(split_words("# all comment"), Words{});
  EXPECT_EQ(split_words(""), Words{});
  EXPECT_THROW(split_words("a 'b"), ParamError);
  EXPECT_THROW(split_words("a \"b"), ParamError);
  EXPECT_THROW(split_words(R"("a\")"), ParamError);
}

TEST(ParseStep, OpOptionsNameAndImages) {
  const PipelineStep g = parse_step("filter gaussian --sigma 2", 3);
  ASSERT_NE(g.op, nullptr);
  EXPECT_EQ(g.op->name, "gaussian");
  EXPECT_EQ(g.number, 3);
  EXPECT_EQ(g.text, "filter gaussian --sigma 2");
  EXPECT_EQ(g.name, "");
  EXPECT_TRUE(g.refs.empty());
  EXPECT_EQ(g.params.real("sigma"), 2);
  EXPECT_EQ(g.label(), "step 3 (filter gaussian)");
  EXPECT_EQ(g.where("x"), "step 3 (filter gaussian): x");

  const PipelineStep eq = parse_step("smooth: filter gaussian --sigma=1.25", 2);
  EXPECT_EQ(eq.name, "smooth");
  EXPECT_EQ(eq.params.real("sigma"), 1.25);
  EXPECT_EQ(eq.label(), "step 2 'smooth' (filter gaussian)");

  const PipelineStep t = parse_step("filter threshold --otsu", 1);
  EXPECT_TRUE(t.params.flag("otsu"));
  EXPECT_FALSE(t.params.has("value"));

  const PipelineStep quoted = parse_step("'filter' \"gaussian\" '--sigma' 3 # soft", 1);
  ASSERT_NE(quoted.op, nullptr);
  EXPECT_EQ(quoted.op->name, "gaussian");
  EXPECT_EQ(quoted.params.real("sigma"), 3);

  const PipelineStep b = parse_step("filter brightness --add -5", 1);
  EXPECT_EQ(b.params.integer("add"), -5) << "a negative value is a value, not an option";

  const PipelineStep plain = parse_step("fill-holes", 4);
  ASSERT_NE(plain.op, nullptr);
  EXPECT_EQ(plain.op->name, "fill-holes");
  EXPECT_TRUE(plain.refs.empty());
  EXPECT_EQ(plain.label(), "step 4 (fill-holes)");

  if (op_registry().find_command({"math", "subtract"})) {
    const PipelineStep m = parse_step("d: math subtract smooth 2", 5);
    EXPECT_EQ(m.op->name, "subtract");
    EXPECT_EQ(m.refs, (Words{"smooth", "2"}));
    const PipelineStep in = parse_step("math subtract input input", 1);
    EXPECT_EQ(in.refs, (Words{"input", "input"}));
  }
}

// A one-word command (hdome, edt, fill-holes, reconstruct, stats) followed
// by an option or an image: the word after the op is the op's first option
// or image, not a part of the op's name.
TEST(ParseStep, OneWordOpsTakeOptionsAndImages) {
  const PipelineStep h = parse_step("hdome --h 20", 1);
  ASSERT_NE(h.op, nullptr);
  EXPECT_EQ(h.op->name, "hdome");
  EXPECT_TRUE(h.refs.empty());
  EXPECT_EQ(h.params.given(), (std::map<std::string, std::string>{{"h", "20"}}));

  const PipelineStep e = parse_step("edt --threshold 5", 1);
  EXPECT_EQ(e.params.given(), (std::map<std::string, std::string>{{"threshold", "5"}}));
  EXPECT_TRUE(e.refs.empty());

  const PipelineStep f = parse_step("fill-holes --connectivity=8", 1);
  EXPECT_EQ(f.params.choice("connectivity"), "8");

  const PipelineStep s = parse_step("stats --histogram 256", 1);
  EXPECT_EQ(s.params.integer("histogram"), 256);

  const PipelineStep r = parse_step("rec: reconstruct seeds mask --method erosion", 2);
  EXPECT_EQ(r.name, "rec");
  EXPECT_EQ(r.refs, (Words{"seeds", "mask"}));
  EXPECT_EQ(r.params.choice("method"), "erosion");
  EXPECT_EQ(parse_step("reconstruct 1 input", 2).refs, (Words{"1", "input"}));
}

TEST(ParseStep, ErrorsNameTheStep) {
  struct Case {
    std::string text;
    std::string says;
  };
  const Case cases[] = {
      {"nope", "step 4: unknown op 'nope' (see tilewave ops)"},
      {"filter blur", "step 4: unknown filter op 'blur' (see tilewave filter --help)"},
      {"filter", "step 4: unknown filter op"},
      {"filter gaussian --radius 2", "step 4 (filter gaussian): unknown option --radius"},
      {"filter gaussian --sigma 2 --memory 4M",
       "step 4 (filter gaussian): --memory applies to the whole run; give it outside the steps"},
      {"filter gaussian --sigma 2 --tile 64", "step 4 (filter gaussian): --tile applies to the whole run"},
      {"filter gaussian --sigma 2 --keep 1=a.tif", "step 4 (filter gaussian): --keep applies to the whole run"},
      {"filter gaussian --sigma", "step 4 (filter gaussian): --sigma needs a value (S)"},
      {"filter gaussian", "step 4 (filter gaussian): gaussian needs --sigma"},
      {"filter gaussian --sigma abc", "step 4 (filter gaussian): --sigma 'abc' is not a number"},
      {"filter gaussian --sigma 99", "step 4 (filter gaussian): --sigma 99 is out of range"},
      {"filter threshold --otsu=yes", "step 4 (filter threshold): --otsu takes no value"},
      {"filter threshold --otsu --value 3", "step 4 (filter threshold): threshold needs one of --value T and --otsu"},
      {"filter gaussian --sigma 1 --sigma 2", "step 4 (filter gaussian): --sigma given twice"},
      {"filter gaussian --sigma=1 --sigma 1", "step 4 (filter gaussian): --sigma given twice"},
      {"1st: filter gray", "step 4: '1st' cannot name a result"},
      {"a.b: filter gray", "step 4: 'a.b' cannot name a result"},
      {"input: filter gray", "step 4: 'input' cannot name a result"},
      {"x:", "step 4 is empty after its name"},
      {"", "step 4 is empty"},
      {"   # only a comment", "step 4 is empty"},
  };
  for (const Case& c : cases) {
    try {
      parse_step(c.text, 4);
      ADD_FAILURE() << "'" << c.text << "' was accepted";
    } catch (const ParamError& e) {
      EXPECT_TRUE(contains(e.what(), c.says)) << "'" << c.text << "': " << e.what();
      EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << e.what();
    }
  }
}

// An open quote is the step's mistake like any other: its message names it.
TEST(ParseStep, OpenQuoteNamesTheStep) {
  for (const char* text : {"filter gaussian --sigma '2", "filter gray \"x"}) {
    try {
      parse_step(text, 7);
      ADD_FAILURE() << text << " was accepted";
    } catch (const ParamError& e) {
      EXPECT_TRUE(contains(e.what(), "step 7")) << e.what();
      EXPECT_TRUE(contains(e.what(), "unclosed")) << e.what();
    }
  }
}

TEST(PipelineFile, EditorsLineEndsAndByteOrderMarkBinaryAndOverlongLinesRefused) {
  test::TempDir tmp;
  auto write = [&](const std::string& name, const std::string& bytes) {
    std::ofstream(tmp.file(name), std::ios::binary) << bytes;
    return tmp.file(name);
  };
  const Words want = {"filter gray", "edt"};
  EXPECT_EQ(read_pipeline_file(write("crlf.txt", "filter gray\r\n\r\nedt\r\n")), want);
  EXPECT_EQ(read_pipeline_file(write("cr.txt", "filter gray\redt\r")), want) << "old Mac line ends";
  EXPECT_EQ(read_pipeline_file(write("bom.txt",
                                     "\xEF\xBB\xBF"
                                     "filter gray\nedt")),
            want);
  try {
    read_pipeline_file(write("bin.txt", std::string("II*\0\x08\0\0\0", 8) + "filter gray"));
    ADD_FAILURE() << "binary data taken";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("holds binary data (a NUL byte at offset 3)"), std::string::npos) << e.what();
  }
  try {
    read_pipeline_file(write("long.txt", "filter gray\nfilter " + std::string(100000, 'x') + "\n"));
    ADD_FAILURE() << "an overlong line taken";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("line 2 has 100007 characters"), std::string::npos) << e.what();
    EXPECT_LT(std::string(e.what()).size(), 300u) << "the line is not echoed";
  }
}

TEST(PipelineFile, StepsOneALineCommentsAndBlankLinesSkipped) {
  test::TempDir tmp;
  {
    std::ofstream f(tmp.file("p.txt"));
    f << "# nuclei\n\nfilter gray   # luma\n  \t\ng: filter gaussian --sigma '2'\n# done\nedt";
  }
  EXPECT_EQ(read_pipeline_file(tmp.file("p.txt")),
            (Words{"filter gray   # luma", "g: filter gaussian --sigma '2'", "edt"}));
  EXPECT_THROW(read_pipeline_file(tmp.file("missing.txt")), InputError);
  EXPECT_THROW(read_pipeline_file(tmp.path()), InputError) << "a folder";
  // The line as written is the step's text (for messages and the report).
  const Pipeline p = parse_pipeline(read_pipeline_file(tmp.file("p.txt")));
  ASSERT_EQ(p.steps.size(), 3u);
  EXPECT_EQ(p.steps[0].op->name, "gray");
  EXPECT_EQ(p.steps[1].name, "g");
  EXPECT_EQ(p.steps[1].params.real("sigma"), 2);
  EXPECT_EQ(p.steps[2].number, 3);
}

TEST(Plan, ResolvesNamesNumbersAndInput) {
  const Pipeline p = parse_pipeline({"g: filter gray", "filter gaussian --sigma 2", "filter sobel", "filter invert 2",
                                     "filter threshold --otsu", "stats", "filter gray input", "edt"});
  const PipelinePlan plan = plan_pipeline(p, {{"input", {kRgb8, "slide.tif"}}});
  ASSERT_EQ(plan.steps.size(), 8u);
  const std::vector<std::vector<int>> reads = {{0}, {1}, {2}, {2}, {4}, {5}, {0}, {7}};
  for (size_t i = 0; i < reads.size(); ++i) EXPECT_EQ(plan.steps[i].reads, reads[i]) << "step " << i + 1;
  EXPECT_EQ(plan.steps[0].out, kGray8);
  EXPECT_EQ(plan.steps[7].out, (PixelFormat{SampleType::kF32, 1}));
  EXPECT_FALSE(plan.steps[5].image) << "stats makes numbers";
  EXPECT_TRUE(plan.steps[4].barrier && plan.steps[4].stores_input) << "Otsu reads its computed input twice";
  EXPECT_FALSE(plan.steps[1].barrier);
  EXPECT_EQ(plan.output_slot, 8);
  EXPECT_EQ(plan.describe(), "1-4 streamed, 5 threshold (barrier), 6 stats (reduction), 7 streamed, 8 edt (barrier)");
  EXPECT_EQ(find_result(p, plan, "g"), 1);
  EXPECT_EQ(find_result(p, plan, "3"), 3);
  EXPECT_EQ(find_result(p, plan, "8"), 8);
}

TEST(Plan, AStreamedResultThatTwoPassesReadIsStoredOnce) {
  // s feeds fill-holes' pass (through t) and the writer's (math mask): it is
  // stored once rather than computed, with the gray before it, in each.
  const Pipeline p = parse_pipeline({"g: filter gray", "s: filter gaussian --sigma 2",
                                     "t: filter threshold --value 100", "f: fill-holes", "math mask s f"});
  const PipelinePlan plan = plan_pipeline(p, {{"input", {kRgb8, "slide.tif"}}});
  EXPECT_TRUE(plan.steps[1].shared && plan.steps[1].barrier);
  EXPECT_FALSE(plan.steps[0].shared) << "g is read by s alone";
  EXPECT_FALSE(plan.steps[2].shared) << "t is read by fill-holes alone";
  EXPECT_EQ(plan.describe(),
            "1 streamed, 2 gaussian (stored: read more than once), 3 streamed, 4 fill-holes (barrier), 5 streamed");
  // Read twice in one pass (here the writer's): streamed, a tile carried through both.
  const Pipeline q = parse_pipeline({"g: filter gray", "s: filter gaussian --sigma 2", "math max g s"});
  EXPECT_EQ(plan_pipeline(q, {{"input", {kRgb8, "slide.tif"}}}).describe(), "1-3 streamed");
  // Read by two barriers: stored.
  const Pipeline r = parse_pipeline({"g: filter gray", "filter threshold --otsu g", "edt g"});
  const PipelinePlan pr = plan_pipeline(r, {{"input", {kRgb8, "slide.tif"}}});
  EXPECT_TRUE(pr.steps[0].shared);
  EXPECT_EQ(pr.describe(), "1 gray (stored: read more than once), 2 threshold (barrier), 3 edt (barrier)");
}

TEST(Plan, ReadsThatMultiplyWithinAPassAreStored) {
  if (!op_registry().find_command({"math", "max"})) GTEST_SKIP() << "math ops not registered";
  // Each step reads the one before twice: streamed all the way, the first
  // step would be computed 2^20 times per tile.
  std::vector<std::string> lines = {"s0: filter gray"};
  for (int i = 1; i <= 20; ++i)
    lines.push_back("s" + std::to_string(i) + ": math max s" + std::to_string(i - 1) + " s" + std::to_string(i - 1));
  const PipelinePlan plan = plan_pipeline(parse_pipeline(lines), {{"input", {kRgb8, "slide.tif"}}});
  // Walking back from the writer: a streamed step is computed as often as
  // the streamed steps after it read it (a stored one once); none more than
  // twice per tile.
  std::vector<int> computes(plan.steps.size(), 0);
  computes.back() = 1;
  for (size_t j = plan.steps.size(); j-- > 0;) {
    if (!plan.steps[j].barrier) {
      EXPECT_LE(computes[j], 2) << "step " << j + 1 << ": " << plan.describe();
    }
    const int times = plan.steps[j].barrier ? 1 : computes[j];
    for (int s : plan.steps[j].reads)
      if (s >= 1) computes[static_cast<size_t>(s - 1)] += times;
  }
  EXPECT_TRUE(plan.steps[18].shared) << plan.describe();
  EXPECT_FALSE(plan.steps[19].shared) << "read twice by the last step: carried through both reads";
}

TEST(Plan, TwoInputStepsNameTheirImages) {
  if (!op_registry().find_command({"math", "subtract"})) GTEST_SKIP() << "math ops not registered";
  const Pipeline p = parse_pipeline(
      {"g: filter gray", "s: filter gaussian --sigma 3", "math subtract g s", "math max 3 g", "math min input input"});
  const PipelinePlan plan = plan_pipeline(p, {{"input", {kRgb8, "slide.tif"}}});
  EXPECT_EQ(plan.steps[2].reads, (std::vector<int>{1, 2}));
  EXPECT_EQ(plan.steps[3].reads, (std::vector<int>{3, 1}));
  EXPECT_EQ(plan.steps[4].reads, (std::vector<int>{0, 0}));
  EXPECT_EQ(plan.steps[4].out, kRgb8);
  EXPECT_EQ(plan.describe(), "1-5 streamed");
  // A one-step pipeline of a two-input command: its images by the command's names.
  const Pipeline one = parse_pipeline({"math subtract image1 image2"});
  const PipelinePlan p1 = plan_pipeline(one, {{"image1", {kGray8, "a.tif"}}, {"image2", {kGray8, "b.tif"}}});
  EXPECT_EQ(p1.steps[0].reads, (std::vector<int>{0, 1}));
  EXPECT_EQ(p1.output_slot, 2);
}

// Every bad pipeline is refused by the planner (no pixel read yet) with one
// line that names the step at fault.
TEST(Plan, BadPipelinesNameTheStep) {
  struct Case {
    Words steps;
    std::string says;
    bool param;  // ParamError (exit 2) rather than InputError (exit 1)
  };
  const Case cases[] = {
      {{"filter gray", "nope"}, "step 2: unknown op 'nope'", true},
      {{"filter gray", "filter gaussian --sigma 2 --radius 3"},
       "step 2 (filter gaussian): unknown option --radius",
       true},
      {{"filter hed", "edt"},
       "step 2 (edt): the result of step 1 (filter hed) is f32 x3 (RGB); edt reads one channel of that type",
       false},
      {{"filter hed", "filter gaussian --sigma 2"},
       "step 2 (filter gaussian): the result of step 1 (filter hed) is f32 x3 (RGB)",
       false},
      {{"filter gray", "filter gray", "filter hed"},
       "step 3 (filter hed): the result of step 2 (filter gray) is",
       false},
      {{"edt", "fill-holes"}, "the result of step 1 (edt) is f32 x1 (gray); this needs 8- or 16-bit", false},
      {{"filter gray", "filter invert nothere"},
       "step 2 (filter invert) reads 'nothere', which no step makes (results so far: input",
       false},
      {{"g: filter gray", "filter invert 9"}, "step 2 (filter invert) reads '9', which no step makes", false},
      {{"g: filter gray", "filter invert 0"}, "step 2 (filter invert) reads '0', which no step makes", false},
      {{"filter invert 2", "filter gray"},
       "step 1 (filter invert) reads '2', made by step 2 (filter gray), after it: a step reads only earlier results",
       false},
      {{"filter invert later", "later: filter gray"},
       "step 1 (filter invert) reads 'later', made by step 2 'later'",
       false},
      {{"x: filter invert x"}, "step 1 'x' (filter invert) reads 'x', made by this step itself", false},
      {{"filter gray", "filter invert 2"}, "step 2 (filter invert) reads '2', made by this step itself", false},
      {{"a: filter gray", "a: filter invert"}, "step 2 'a' (filter invert): the name 'a' is given twice", true},
      {{"filter gray", "stats", "filter invert 2"},
       "step 3 (filter invert) reads '2', but step 2 (stats) makes numbers, not an image",
       false},
      {{"filter gray", "stats"}, "step 2 (stats) is the last step and makes numbers, not an image to write", false},
      {{"filter gray", "filter invert 1 1"}, "step 2 (filter invert) reads 1 image(s), but 2 are named", false},
      {{"filter gray", "filter threshold --value 300"}, "step 2 (filter threshold): --value 300 is out of range", true},
  };
  for (const Case& c : cases) {
    bool param = false;
    const std::string e = pipeline_error(c.steps, &param);
    EXPECT_TRUE(contains(e, c.says)) << c.steps.back() << ": '" << e << "'";
    EXPECT_EQ(e.compare(0, 5, "step "), 0) << "names the step first: " << e;
    EXPECT_EQ(param, c.param) << e;
    EXPECT_EQ(e.find('\n'), std::string::npos) << e;
  }
  bool param = false;
  EXPECT_EQ(pipeline_error({}, &param), "the pipeline has no steps");
  EXPECT_TRUE(param);
  // Without an output to write, a reduction may end the pipeline.
  const Pipeline p = parse_pipeline({"filter gray", "stats"});
  EXPECT_NO_THROW(plan_pipeline(p, {{"input", {kRgb8, "slide.tif"}}}, false));
}

TEST(Plan, TwoInputErrorsNameTheStep) {
  if (!op_registry().find_command({"math", "subtract"})) GTEST_SKIP() << "math ops not registered";
  struct Case {
    Words steps;
    std::string says;
  };
  const Case cases[] = {
      {{"filter gray", "math subtract"}, "step 2 (math subtract) reads 2 images: name them (subtract A B"},
      {{"filter gray", "math subtract 1"}, "step 2 (math subtract) reads 2 image(s), but 1 are named"},
      {{"g: filter gray", "math subtract g input"}, "step 2 (math subtract)"},  // gray minus RGB
      {{"x: math subtract x input"}, "step 1 'x' (math subtract) reads 'x', made by this step itself"},
      {{"a: math subtract input b", "b: filter gray"},
       "step 1 'a' (math subtract) reads 'b', made by step 2 'b' (filter gray), after it"},
  };
  for (const Case& c : cases) {
    const std::string e = pipeline_error(c.steps);
    EXPECT_TRUE(contains(e, c.says)) << c.steps.back() << ": '" << e << "'";
    EXPECT_EQ(e.find('\n'), std::string::npos) << e;
  }
}

// A reconstruct naming itself, or a later step, is a cycle: refused.
TEST(Plan, ReconstructCyclesRefused) {
  EXPECT_TRUE(contains(pipeline_error({"filter gray", "x: reconstruct x 1"}),
                       "step 2 'x' (reconstruct) reads 'x', made by this step itself"))
      << pipeline_error({"filter gray", "x: reconstruct x 1"});
  EXPECT_TRUE(contains(pipeline_error({"filter gray", "reconstruct 3 1", "filter invert"}),
                       "step 2 (reconstruct) reads '3', made by step 3 (filter invert), after it"))
      << pipeline_error({"filter gray", "reconstruct 3 1", "filter invert"});
  EXPECT_EQ(pipeline_error({"g: filter gray", "h: hdome --h 5", "reconstruct h g"}), "");
}

TEST(Plan, FindResultForKeep) {
  const Pipeline p = parse_pipeline({"g: filter gray", "stats", "filter invert"});
  const PipelinePlan plan = plan_pipeline(p, {{"input", {kRgb8, "slide.tif"}}});
  EXPECT_EQ(find_result(p, plan, "g"), 1);
  EXPECT_EQ(find_result(p, plan, "1"), 1);
  EXPECT_EQ(find_result(p, plan, "3"), 3);
  struct Case {
    std::string name, says;
  };
  for (const Case& c :
       {Case{"2", "--keep 2: step 2 (stats) makes no image"},
        Case{"x", "--keep x: no step has that name or number (results: input, g)"},
        Case{"0", "--keep 0: no step has that name or number"}, Case{"4", "--keep 4: no step has that name or number"},
        Case{"input", "--keep input: no step has that name or number"}}) {
    try {
      find_result(p, plan, c.name);
      ADD_FAILURE() << c.name << " was found";
    } catch (const InputError& e) {
      EXPECT_TRUE(contains(e.what(), c.says)) << e.what();
    }
  }
}

// The chains' pixels equal the steps run one by one, every intermediate
// stored losslessly, at every tile size (odd image size: partial tiles on
// both edges), and so does every intermediate the run holds (--keep's).
class PipelineChains : public ::testing::TestWithParam<test::Chain> {
 protected:
  void SetUp() override {
    const std::string missing = test::missing_ops(GetParam());
    if (!missing.empty()) GTEST_SKIP() << "not registered: " << missing;
  }
};

TEST_P(PipelineChains, EqualTheStepsRunSeparately) {
  const test::Chain& c = GetParam();
  const auto input = test::slide(301, 257, 5);
  const test::Reference ref = test::run_separately(c, input);
  ASSERT_TRUE(test::varies(ref.images.back())) << "a constant result tests little";
  for (int64_t tile : {64, 67, 256, 301}) {
    SCOPED_TRACE("tile " + std::to_string(tile));
    ExecContext ctx;
    ctx.tile = tile;
    const test::ChainRun r = test::run_chain(c, input, ctx);
    EXPECT_EQ(test::plan_mismatch(c, r.plan), "");
    EXPECT_EQ(test::results_diff(c, r.run, ref, tile), "");
    EXPECT_EQ(test::bytes_diff(test::read_tiled(*r.run.output()).view(), ref.images.back().view()), "") << "read whole";
    for (size_t i = 0; i < c.steps.size(); ++i) {
      const nlohmann::json& v = r.run.results[i].values;
      EXPECT_EQ(r.run.results[i].messages, ref.messages[i]) << "step " << i + 1;
      for (const char* key : {"otsu_threshold", "min", "max", "mean", "sum", "foreground_pixels"})
        if (ref.values[i].contains(key)) {
          EXPECT_EQ(v.value(key, nlohmann::json()), ref.values[i][key]) << key;
        }
    }
  }
}

// Out of core: the input 8x --memory or more, so every barrier's store
// spills; the pixels are still the same.
TEST_P(PipelineChains, EqualOutOfCore) {
  const test::Chain& c = GetParam();
  bool wavefront = false;  // a whole-image step: its store must spill
  for (const auto& s : c.steps) wavefront |= parse_step(s.text, 1).op->category == OpCategory::kWholeImage;
  // A sanitizer build runs a quarter of the pixels (still 9x the budget).
  const int64_t w = test::kSanitizerBuild ? 700 : 1400, h = test::kSanitizerBuild ? 555 : 1111;
  const auto input = test::slide(w, h, 9);
  const test::Reference ref = test::run_separately(c, input);
  ExecContext ctx;
  ctx.memory = static_cast<size_t>(w * h * 3) / 9;  // the RGB input 9x the budget
  ctx.tile = 128;
  const test::ChainRun r = test::run_chain(c, input, ctx);
  EXPECT_EQ(test::results_diff(c, r.run, ref, 128), "");
  const nlohmann::json report = pipeline_report(*r.pipeline, r.plan, r.run);
  uint64_t spilled = 0;
  for (const auto& s : report) spilled += s["bytes_spilled"].get<uint64_t>();
  if (wavefront) {
    EXPECT_GT(spilled, 0u) << report.dump();
  }
  for (size_t i = 0; i < c.steps.size(); ++i) {
    if (r.run.results[i].values.contains("tiles_spilled")) {
      EXPECT_GT(r.run.results[i].values["tiles_spilled"].get<int64_t>(), 0) << "step " << i + 1 << " kept in memory";
    }
  }
}

// Inputs whose reads run parallel loops, on 16 threads
// (tests/support/nested_reads.hpp): a step must not lend what a tile's work
// holds to other work its thread takes up while it waits.
TEST_P(PipelineChains, EqualOnSixteenThreadsWithNestedReads) {
  const test::Chain& c = GetParam();
  const auto input = test::slide(301, 257, 5);
  const test::Reference ref = test::run_separately(c, input);
  const auto nested = test::nested_loop_reads(input);
  for (int64_t tile : {64, 67}) {
    SCOPED_TRACE("tile " + std::to_string(tile));
    ExecContext ctx;
    ctx.tile = tile;
    test::on_sixteen_threads([&] {
      const test::ChainRun r = test::run_chain(c, nested, ctx);
      EXPECT_EQ(test::results_diff(c, r.run, ref, tile), "");
    });
  }
}

INSTANTIATE_TEST_SUITE_P(Chains, PipelineChains, ::testing::ValuesIn(test::pipeline_chains()),
                         [](const auto& info) { return info.param.name; });

// The report's figures per step: kinds, pixel types, visits; streamed steps
// are timed by their reads, barriers by their run.
TEST(PipelineReport, PerStepFigures) {
  const auto input = test::slide(301, 257, 2);
  test::Chain c{"report",
                {{"filter gray", {0}},
                 {"filter gaussian --sigma 2", {1}},
                 {"t: filter threshold --otsu", {2}},
                 {"stats", {3}},
                 {"fill-holes", {3}},
                 {"edt", {5}}},
                {},
                ""};
  ExecContext ctx;
  ctx.tile = 64;
  const test::ChainRun r = test::run_chain(c, input, ctx);
  test::read_tiled(*r.run.output(), 64);  // as the writer reads it
  const nlohmann::json rep = pipeline_report(*r.pipeline, r.plan, r.run);
  ASSERT_EQ(rep.size(), 6u);
  const char* kinds[] = {"streamed", "streamed", "barrier", "reduction", "barrier", "barrier"};
  const char* types[] = {"u8 x1 (gray)", "u8 x1 (gray)", "u8 x1 (gray)", "", "u8 x1 (gray)", "f32 x1 (gray)"};
  for (size_t i = 0; i < 6; ++i) {
    const nlohmann::json& s = rep[i];
    SCOPED_TRACE(s.dump());
    EXPECT_EQ(s["step"], i + 1);
    EXPECT_EQ(s["text"], c.steps[i].text);
    EXPECT_EQ(s["kind"], kinds[i]);
    EXPECT_EQ(s["pixel_type"], types[i]);
    for (const char* key : {"tile_visits", "result_reads", "pixels_read", "bytes_spilled", "bytes_uploaded",
                            "bytes_downloaded", "values"})
      EXPECT_TRUE(s.contains(key)) << key;
    EXPECT_EQ(s.contains("busy_seconds"), i < 2) << "streamed steps: busy_seconds";
    EXPECT_EQ(s.contains("seconds"), i >= 2) << "barriers: seconds";
  }
  EXPECT_EQ(rep[0]["op"], "filter gray");
  EXPECT_EQ(rep[2]["name"], "t");
  EXPECT_FALSE(rep[0].contains("name"));
  // Every pixel of each streamed result is read at least once, and the
  // gaussian's result (read with no halo by the threshold's store) once.
  for (size_t i : {0, 1}) EXPECT_GE(rep[i]["pixels_read"].get<int64_t>(), 301 * 257) << i;
  EXPECT_EQ(rep[1]["pixels_read"], 301 * 257);
  EXPECT_GT(rep[0]["pixels_read"].get<int64_t>(), 301 * 257) << "the gaussian reads the gray with its halo";
  EXPECT_EQ(rep[2]["values"]["otsu_threshold"], r.run.results[2].values["otsu_threshold"]);
  EXPECT_TRUE(rep[3]["values"].contains("mean"));
  EXPECT_TRUE(rep[2]["stored_input"].get<bool>());
}

// An input that records the read cache it is given.
class CacheRecorder final : public TileSource {
 public:
  explicit CacheRecorder(std::shared_ptr<const TileSource> in) : in_(std::move(in)) { info_ = in_->info(); }
  void set_read_cache(size_t bytes) const override { cache = bytes; }
  size_t read_cache_for_level0() const override {
    return static_cast<size_t>(level(0).width * level(0).height) * info().fmt.bytes_per_pixel();
  }
  mutable size_t cache = 0;

 protected:
  void read_inside(int level, const ImageView& dst) const override { in_->read(level, dst); }

 private:
  std::shared_ptr<const TileSource> in_;
};

// An input that several steps read (the nuclei pipeline's slide: Otsu's
// chain, then the overlay) keeps its whole level 0 decoded where that fits
// a quarter of the budget, so that it is decoded once; an input one step
// reads keeps the usual eighth. The outputs are the same either way.
TEST(PipelineInputCache, AnInputSeveralStepsReadIsKeptWhole) {
  const int64_t w = 301, h = 257;
  const size_t whole = static_cast<size_t>(w * h * 3);
  const test::Chain once{"once", {{"filter gray", {0}}, {"filter gaussian --sigma 2", {1}}}, {}, ""};
  const test::Chain twice{
      "twice",
      {{"filter gray", {0}}, {"filter threshold --otsu", {1}}, {"g: filter gray input", {0}}, {"math max 2 g", {2, 3}}},
      {{"math", "max"}},
      ""};
  Image first;
  for (const size_t memory : {whole * 5, size_t{1} << 30}) {
    SCOPED_TRACE("memory " + std::to_string(memory));
    for (const test::Chain* c : {&once, &twice}) {
      SCOPED_TRACE(c->name);
      const auto input = std::make_shared<CacheRecorder>(test::slide(w, h, 2));
      ExecContext ctx;
      ctx.tile = 64;
      ctx.memory = memory;
      const test::ChainRun r = test::run_chain(*c, input, ctx);
      const size_t eighth = std::min<size_t>(memory / 8, size_t{256} << 20);
      if (c == &once) {
        EXPECT_EQ(input->cache, eighth);
        continue;
      }
      EXPECT_EQ(input->cache, std::max(eighth, whole));
      Image out = r.run.output()->read(0, Rect(0, 0, w, h));
      if (first.empty())
        first = std::move(out);
      else
        EXPECT_EQ(test::bytes_diff(out.view(), first.view()), "");
    }
  }
}

}  // namespace
}  // namespace tw

namespace tw {
namespace {

// The default nuclei pipeline's steps (labelling, object filters, EDT,
// h-dome, watershed) the same on 16 threads over inputs whose reads run
// parallel loops, in core and out of core, as on the default threads.
TEST(PipelineThreads, NucleiStepsWithNestedReads) {
  if (!test::python_has("skimage") || !test::python_has("tifffile")) GTEST_SKIP() << "no python stack";
  const test::TempDir tmp;
  const auto made =
      test::run_python(test::source_dir() + "/tools/nuclei/synth_he.py",
                       {tmp.file("he.tif"), tmp.file("gt.tif"), "--size", "900x700", "--mpp", "0.5", "--seed", "31"});
  ASSERT_EQ(made.exit_code, 0) << made.err;
  std::vector<std::string> steps = nuclei_steps(default_nuclei_pipeline(), nuclei_variables(NucleiParams{}, 0.5));
  ASSERT_EQ(steps.back().rfind("overlay", 0), 0u) << steps.back();
  steps.pop_back();  // the labels are the result compared
  const SourcePtr input = open_source(tmp.file("he.tif"));
  auto run = [&](const SourcePtr& in, int64_t tile, size_t memory) {
    const Pipeline p = parse_pipeline(steps);
    const PipelinePlan plan = plan_pipeline(p, {{"input", {in->info().fmt, "input"}}});
    ExecContext ctx;
    ctx.tile = tile;
    if (memory) ctx.memory = memory;
    const PipelineRun r = run_pipeline(p, plan, {in}, ctx, false, {});
    return test::read_tiled(*r.output(), 256);
  };
  const Image want = run(input, 256, 0);
  uint32_t most = 0;
  for (int64_t y = 0; y < want.rect().h; ++y)
    for (int64_t x = 0; x < want.rect().w; ++x) most = std::max(most, *want.ptr<uint32_t>(x, y));
  ASSERT_GT(most, 50u) << "nuclei found";
  const auto nested = test::nested_loop_reads(input);
  for (const auto& tm : {std::pair<int64_t, size_t>{64, 0}, {67, size_t{1} << 20}}) {
    const int64_t tile = tm.first;
    const size_t memory = tm.second;  // (a structured binding: clang 14 cannot capture it)
    Image got;
    test::on_sixteen_threads([&] { got = run(nested, tile, memory); });
    EXPECT_EQ(test::bytes_diff(got.view(), want.view()), "") << "tile " << tile << " memory " << memory;
  }
}

}  // namespace
}  // namespace tw
