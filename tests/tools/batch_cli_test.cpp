// tilewave batch: every slide of a list written exactly as `tilewave
// pyramid` / `tilewave run` write it, failures isolated and summarised,
// --resume, and (where this build has MPI and mpirun exists) the same over
// 2 and 3 ranks, and a rank killed mid-batch.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <set>

#include "tests/support/mpi_run.hpp"
#include "tests/support/test_support.hpp"

namespace tw {
namespace {

void write_list(const std::string& path, const std::vector<std::string>& lines) {
  std::ofstream f(path);
  f << "# slides\n\n";
  for (const auto& l : lines) f << l << "\n";
}

struct Slides {
  test::TempDir tmp;
  std::vector<std::string> inputs;
  Slides() {
    test::TiffSpec spec;
    spec.tile_w = spec.tile_h = 64;
    test::write_tiff(tmp.file("gray one.tif"), test::pattern_image(kGray8, 300, 220, 5).view(), spec);
    inputs = {"synthetic:700x500", tmp.file("gray one.tif"), "synthetic:900x400,seed=4"};
  }
};

const std::vector<std::string> kSteps = {"filter gaussian --sigma 1.5", "filter threshold --otsu"};

// What the single commands write, for comparison.
std::string reference(const Slides& s, const std::string& input, bool steps, const std::string& out) {
  std::vector<std::string> c = {steps ? "run" : "pyramid", input, out, "--compression", "deflate"};
  if (steps) c.insert(c.begin() + 3, kSteps.begin(), kSteps.end());
  const auto r = test::run_cli(c);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  (void)s;
  return test::file_bytes(out);
}

TEST(BatchCli, OneProcessWritesWhatTheCommandsWrite) {
  Slides s;
  write_list(s.tmp.file("list.txt"), s.inputs);
  const std::vector<std::string> names = {"synthetic_700x500", "gray one", "synthetic_900x400_seed_4"};
  for (bool steps : {false, true}) {
    const std::string out = s.tmp.file(steps ? "chain" : "pyr");
    std::vector<std::string> c = {"batch", s.tmp.file("list.txt"), out, "--compression", "deflate"};
    if (steps) c.insert(c.begin() + 3, kSteps.begin(), kSteps.end());
    const auto r = test::run_cli(c);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    for (size_t i = 0; i < names.size(); ++i)
      EXPECT_TRUE(test::file_bytes(out + "/" + names[i] + ".tif") ==
                  reference(s, s.inputs[i], steps, s.tmp.file("ref.tif")))
          << names[i] << (steps ? " (steps)" : "");
    const auto sum = test::read_json(out + "/batch-summary.json");
    EXPECT_EQ(sum["ranks"], 1);
    EXPECT_EQ(sum["ok"], 3);
    ASSERT_EQ(sum["slides"].size(), 3u);
    for (const auto& sl : sum["slides"]) {
      EXPECT_EQ(sl["outcome"], "ok");
      EXPECT_EQ(sl["rank"], 0);
      EXPECT_GT(sl["seconds"].get<double>(), 0.0);
      EXPECT_TRUE(sl["report"].contains("levels")) << sl.dump();
    }
    // Only the outputs and the summary: the per-slide reports are gone.
    EXPECT_EQ(test::run({"bash", "-c", "ls -A '" + out + "' | wc -l"}).out, "4\n");
  }
}

TEST(BatchCli, AFailingSlideIsReportedAndTheOthersFinish) {
  Slides s;
  // A truncated TIFF and a missing file between good slides.
  const std::string good = test::file_bytes(s.tmp.file("gray one.tif"));
  std::ofstream(s.tmp.file("cut.tif"), std::ios::binary) << good.substr(0, good.size() / 2);
  write_list(s.tmp.file("list.txt"), {s.inputs[0], s.tmp.file("cut.tif"), s.tmp.file("missing.svs"), s.inputs[2]});
  const std::string out = s.tmp.file("out");
  const auto r = test::run_cli({"batch", s.tmp.file("list.txt"), out});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("missing.svs failed: cannot open"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("cut.tif failed: "), std::string::npos) << r.err;
  EXPECT_TRUE(test::path_exists(out + "/synthetic_700x500.tif"));
  EXPECT_TRUE(test::path_exists(out + "/synthetic_900x400_seed_4.tif"));
  EXPECT_FALSE(test::path_exists(out + "/cut.tif"));
  EXPECT_FALSE(test::path_exists(out + "/missing.tif"));
  const auto sum = test::read_json(out + "/batch-summary.json");
  EXPECT_EQ(sum["ok"], 2);
  EXPECT_EQ(sum["failed"], 2);
  // In list order, each failure with its one-line error.
  EXPECT_EQ(sum["slides"][1]["outcome"], "failed");
  EXPECT_EQ(sum["slides"][2]["outcome"], "failed");
  EXPECT_EQ(sum["slides"][2]["error"].get<std::string>().find('\n'), std::string::npos);
}

TEST(BatchCli, ResumeSkipsWhatIsDone) {
  Slides s;
  write_list(s.tmp.file("list.txt"), s.inputs);
  const std::string out = s.tmp.file("out");
  ASSERT_EQ(test::run_cli({"batch", s.tmp.file("list.txt"), out}).exit_code, 0);
  const std::string before = test::file_bytes(out + "/gray one.tif");
  ASSERT_EQ(::unlink((out + "/synthetic_700x500.tif").c_str()), 0);
  const auto r = test::run_cli({"batch", s.tmp.file("list.txt"), out, "--resume"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto sum = test::read_json(out + "/batch-summary.json");
  EXPECT_EQ(sum["ok"], 1);
  EXPECT_EQ(sum["skipped"], 2);
  EXPECT_EQ(sum["slides"][0]["outcome"], "ok");
  EXPECT_TRUE(test::file_bytes(out + "/gray one.tif") == before);
  EXPECT_TRUE(test::path_exists(out + "/synthetic_700x500.tif"));
}

TEST(BatchCli, BadUseIsOneLineAndNothingWritten) {
  test::TempDir tmp;
  write_list(tmp.file("dup.txt"), {"a/x.svs", "b/x.tif"});
  write_list(tmp.file("empty.txt"), {});
  write_list(tmp.file("ok.txt"), {"synthetic:300x200"});
  std::ofstream(tmp.file("afile")) << "x";
  struct Case {
    std::vector<std::string> args;
    int code;
    std::string says;
  };
  const std::vector<Case> cases = {
      {{"batch", tmp.file("dup.txt"), tmp.file("o1")}, 1, "would both write"},
      {{"batch", tmp.file("empty.txt"), tmp.file("o2")}, 1, "names no slides"},
      {{"batch", tmp.file("nolist.txt"), tmp.file("o3")}, 1, "cannot open slide list"},
      {{"batch", "/dev/null", tmp.file("o4")}, 1, "not a regular file"},
      {{"batch", tmp.file("ok.txt"), tmp.file("afile")}, 1, "is not a folder"},
      {{"batch", tmp.file("ok.txt"), tmp.file("o5"), "--report", tmp.file("r.json")}, 2, "use --summary"},
      {{"batch", tmp.file("ok.txt"), tmp.file("o6"), "filter gray", "--recompress"}, 2, "option of pyramids"},
      {{"batch", tmp.file("ok.txt"), tmp.file("o7"), "--memory", "1K"}, 2, "--memory"},
      {{"batch", tmp.file("ok.txt")}, 2, "LIST OUTDIR"},
      // The device is checked after MPI's start (CUDA starts beside it),
      // still before anything is made.
      {{"batch", tmp.file("ok.txt"), tmp.file("o9"), "--device", "cuda:99"}, 1, "--device cuda:99: "},
      {{"batch", tmp.file("ok.txt"), tmp.file("o10"), "--device", "gpu"}, 1, "unknown device 'gpu'"},
  };
  for (const Case& c : cases) {
    const auto r = test::run_cli(c.args);
    EXPECT_EQ(r.exit_code, c.code) << c.args[1] << ": " << r.err;
    EXPECT_NE(r.err.find(c.says), std::string::npos) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    // A refused list leaves no OUTDIR behind either.
    if (c.args.size() > 2 && c.args[2] != tmp.file("afile")) {
      EXPECT_FALSE(test::path_exists(c.args[2])) << c.args[2] << " was made";
    }
  }
  // A bad step fails each slide with the step's message, as `run` would.
  const auto r = test::run_cli({"batch", tmp.file("ok.txt"), tmp.file("o8"), "filter nosuch"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("nosuch"), std::string::npos) << r.err;
  EXPECT_FALSE(test::path_exists(tmp.file("o8/synthetic_300x200.tif")));
}

// ---- MPI ----

using test::mpi_ready;
using test::mpirun;

TEST(BatchMpi, TwoAndThreeRanksWriteWhatOneProcessWrites) {
  std::string why;
  if (!mpi_ready(&why)) GTEST_SKIP() << why;
  Slides s;
  std::vector<std::string> list = s.inputs;
  list.push_back("synthetic:500x300,seed=9");
  list.push_back(s.tmp.file("missing.tif"));
  write_list(s.tmp.file("list.txt"), list);
  const std::string one = s.tmp.file("one");
  ASSERT_EQ(test::run_cli({"batch", s.tmp.file("list.txt"), one, "--threads", "1"}).exit_code, 1);
  for (int np : {2, 3}) {
    const std::string out = s.tmp.file("np" + std::to_string(np));
    const auto r = mpirun(np, {"batch", s.tmp.file("list.txt"), out, "--threads", "1"});
    EXPECT_NE(r.exit_code, 0);  // the missing slide
    EXPECT_NE(r.err.find("missing.tif failed"), std::string::npos) << r.err;
    for (const char* n : {"synthetic_700x500", "gray one", "synthetic_900x400_seed_4", "synthetic_500x300_seed_9"})
      EXPECT_TRUE(test::file_bytes(out + "/" + n + ".tif") == test::file_bytes(one + "/" + n + ".tif"))
          << np << " ranks: " << n;
    const auto sum = test::read_json(out + "/batch-summary.json");
    EXPECT_EQ(sum["ranks"], np);
    EXPECT_EQ(sum["ok"], 4);
    EXPECT_EQ(sum["failed"], 1);
    std::set<int> ranks;
    for (const auto& sl : sum["slides"]) ranks.insert(sl["rank"].get<int>());
    EXPECT_EQ(static_cast<int>(ranks.size()), np) << "every rank took a slide";
  }
}

// A device no rank can use: every rank says so and stops, none waits for
// the others, nothing is made.
TEST(BatchMpi, AnUnusableDeviceStopsEveryRank) {
  std::string why;
  if (!mpi_ready(&why)) GTEST_SKIP() << why;
  test::TempDir tmp;
  write_list(tmp.file("list.txt"), {"synthetic:300x200"});
  const auto r = mpirun(2, {"batch", tmp.file("list.txt"), tmp.file("out"), "--device", "cuda:99"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("tilewave: error: --device cuda:99: "), std::string::npos) << r.err;
  EXPECT_FALSE(test::path_exists(tmp.file("out")));
}

TEST(BatchMpi, AKilledRankLeavesNoPartialOutputAndResumeCompletes) {
  std::string why;
  if (!mpi_ready(&why)) GTEST_SKIP() << why;
  test::TempDir tmp;
  const int n = 6;
  std::vector<std::string> list, refs;
  for (int i = 0; i < n; ++i) {
    list.push_back("synthetic:2000x1600,seed=" + std::to_string(i));
    refs.push_back(tmp.file("ref" + std::to_string(i) + ".tif"));
    ASSERT_EQ(test::run_cli({"pyramid", list.back(), refs.back(), "--compression", "deflate"}).exit_code, 0);
  }
  write_list(tmp.file("list.txt"), list);
  const std::string out = tmp.file("out");
  auto output = [&](int i) { return out + "/synthetic_2000x1600_seed_" + std::to_string(i) + ".tif"; };
  // Two ranks; once the first slide is written, one rank's process is
  // killed (SIGKILL: no handler runs) and mpirun takes the job down.
  const std::string script =
      "export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1\n"
      "mpirun --oversubscribe -np 2 '" +
      test::cli_path() + "' batch '" + tmp.file("list.txt") + "' '" + out +
      "' --threads 1 --compression deflate > /dev/null 2>&1 &\n"
      "m=$!\n"
      "for i in $(seq 600); do ls '" +
      out +
      "'/*.tif > /dev/null 2>&1 && break; sleep 0.05; done\n"
      "victim=$(pgrep -P $m -f batch | tail -1)\n"
      "[ -n \"$victim\" ] && kill -9 $victim\n"
      "wait $m; echo mpirun=$?\n";
  const auto k = test::run({"bash", "-c", script});
  ASSERT_NE(k.out.find("mpirun="), std::string::npos) << k.err;
  EXPECT_EQ(k.out.find("mpirun=0"), std::string::npos) << "the killed job still succeeded?";
  // Whatever is at a final path is complete: the same bytes as the reference.
  int complete = 0;
  for (int i = 0; i < n; ++i) {
    if (!test::path_exists(output(i))) continue;
    ++complete;
    EXPECT_TRUE(test::file_bytes(output(i)) == test::file_bytes(refs[static_cast<size_t>(i)])) << output(i);
  }
  EXPECT_LT(complete, n) << "the kill came after the whole batch";
  const auto r =
      mpirun(2, {"batch", tmp.file("list.txt"), out, "--threads", "1", "--compression", "deflate", "--resume"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto sum = test::read_json(out + "/batch-summary.json");
  EXPECT_EQ(sum["skipped"], complete);
  EXPECT_EQ(sum["ok"], n - complete);
  for (int i = 0; i < n; ++i)
    EXPECT_TRUE(test::file_bytes(output(i)) == test::file_bytes(refs[static_cast<size_t>(i)])) << output(i);
  // The killed rank's temporaries were cleared by the next run in the folder.
  EXPECT_EQ(test::run({"bash", "-c", "ls -A '" + out + "' | grep -v '\\.tif$' | grep -v batch-summary.json"}).out, "");
}

}  // namespace
}  // namespace tw
