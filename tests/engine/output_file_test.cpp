// Outputs and scratch files: nothing but a new or regular file is ever
// replaced, inputs never are, scratch files have no name, and temporaries of
// dead processes are removed by the next run.
#include "engine/output_file.hpp"

#include <gtest/gtest.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <functional>
#include <string>

#include "engine/error.hpp"
#include "tests/support/test_support.hpp"

namespace tw {
namespace {

std::string message_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

void touch(const std::string& path, const std::string& text = "x") {
  std::ofstream(path) << text;
}

std::string slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}

// The PID of a process that has exited and been reaped.
pid_t dead_pid() {
  const pid_t p = fork();
  if (p == 0) _exit(0);
  int st = 0;
  waitpid(p, &st, 0);
  return p;
}

TEST(OutputFile, RefusesWhatIsNotARegularFile) {
  test::TempDir tmp;
  ASSERT_EQ(mkfifo(tmp.file("fifo").c_str(), 0600), 0);
  touch(tmp.file("target.tif"));
  ASSERT_EQ(symlink(tmp.file("target.tif").c_str(), tmp.file("link.tif").c_str()), 0);
  ASSERT_EQ(mkdir(tmp.file("folder").c_str(), 0700), 0);
  const struct {
    std::string path, says;
  } cases[] = {{"/dev/null", "is a device"},
               {"/dev/zero", "is a device"},
               {tmp.file("fifo"), "is a FIFO"},
               {tmp.file("link.tif"), "symbolic link"},
               {tmp.file("folder"), "is a folder"},
               {tmp.file("folder/"), "names a folder"},
               {tmp.file("no/such/out.tif"), "does not exist"},
               {"", "empty output path"}};
  for (const auto& c : cases) {
    const std::string m = message_of([&] { OutputFile out(c.path); });
    EXPECT_NE(m.find(c.says), std::string::npos) << c.path << ": " << m;
  }
  struct stat st {};
  ASSERT_EQ(stat("/dev/null", &st), 0);
  EXPECT_TRUE(S_ISCHR(st.st_mode)) << "/dev/null was replaced";
  EXPECT_EQ(slurp(tmp.file("target.tif")), "x");
  EXPECT_EQ(tmp.list().size(), 4u) << "no temporaries left";
}

TEST(OutputFile, RefusesAnInputByAnyName) {
  test::TempDir tmp;
  touch(tmp.file("in.tif"), "input");
  ASSERT_EQ(link(tmp.file("in.tif").c_str(), tmp.file("hard.tif").c_str()), 0);
  ASSERT_EQ(mkdir(tmp.file("d").c_str(), 0700), 0);
  for (const std::string& out :
       {tmp.file("in.tif"), tmp.file("hard.tif"), tmp.file("d/../in.tif"), tmp.path() + "//in.tif"}) {
    const std::string m = message_of([&] { check_output_path(out, {tmp.file("in.tif")}); });
    EXPECT_NE(m.find("is the input file"), std::string::npos) << out << ": " << m;
  }
  EXPECT_NO_THROW(check_output_path(tmp.file("new.tif"), {tmp.file("in.tif"), "synthetic:10x10"}));
  EXPECT_EQ(slurp(tmp.file("in.tif")), "input");
}

TEST(OutputFile, CommitReplacesARegularFileAtomically) {
  test::TempDir tmp;
  touch(tmp.file("out.tif"), "old");
  {
    OutputFile out(tmp.file("out.tif"));
    ASSERT_GE(out.fd(), 0);
    ASSERT_EQ(write(out.fd(), "new", 3), 3);
    EXPECT_EQ(slurp(tmp.file("out.tif")), "old") << "replaced before commit";
    out.commit();
  }
  EXPECT_EQ(slurp(tmp.file("out.tif")), "new");
  {
    OutputFile out(tmp.file("out.tif"));
    ASSERT_EQ(write(out.fd(), "unfinished", 10), 10);
  }  // no commit: a failed run
  EXPECT_EQ(slurp(tmp.file("out.tif")), "new");
  EXPECT_EQ(tmp.list().size(), 1u);
  // Something else put at the path during the run is not replaced either.
  {
    OutputFile out(tmp.file("late.tif"));
    ASSERT_EQ(mkfifo(tmp.file("late.tif").c_str(), 0600), 0);
    EXPECT_NE(message_of([&] { out.commit(); }).find("is a FIFO"), std::string::npos);
  }
  struct stat st {};
  ASSERT_EQ(lstat(tmp.file("late.tif").c_str(), &st), 0);
  EXPECT_TRUE(S_ISFIFO(st.st_mode));
}

TEST(ScratchFile, HasNoNameOnDisk) {
  test::TempDir tmp;
  ScratchFile s(tmp.file("out.tif"));
  ASSERT_GE(s.fd(), 0);
  ASSERT_EQ(pwrite(s.fd(), "abc", 3, 1 << 20), 3);
  char b[3];
  ASSERT_EQ(pread(s.fd(), b, 3, 1 << 20), 3);
  EXPECT_EQ(std::string(b, 3), "abc");
  EXPECT_TRUE(tmp.list().empty()) << "a scratch file shows in the folder";
}

TEST(StaleTemporaries, RemovedWhenTheirOwnerIsGone) {
  test::TempDir tmp;
  const std::string dead = std::to_string(dead_pid()), me = std::to_string(getpid());
  const std::string stale_out = tmp.file(".out.tif.tw-" + dead + "-0.tmp");
  const std::string stale_raster = tmp.file(".out.tif.tw-" + dead + "-3.raster");
  const std::string stale_store = tmp.file(".r.tif.tw-" + dead + "-1.store");
  const std::string mine = tmp.file(".out.tif.tw-" + me + "-0.tmp");
  const std::string locked = tmp.file(".x.tif.tw-" + dead + "-7.tmp");
  const std::string not_ours = tmp.file(".out.tif.tw-" + dead + ".tmp");
  for (const auto& p : {stale_out, stale_raster, stale_store, mine, locked, not_ours}) touch(p);
  touch(tmp.file("keep.tif"));
  // A file whose owner still holds its lock (another host's process on a
  // shared folder) stays, whatever its PID.
  const int fd = open(locked.c_str(), O_RDONLY);
  ASSERT_EQ(flock(fd, LOCK_EX), 0);
  EXPECT_EQ(remove_stale_temporaries(tmp.path()), 3);
  close(fd);
  for (const auto& p : {stale_out, stale_raster, stale_store})
    EXPECT_NE(access(p.c_str(), F_OK), 0) << p << " survived";
  for (const auto& p : {mine, locked, not_ours, tmp.file("keep.tif")})
    EXPECT_EQ(access(p.c_str(), F_OK), 0) << p << " was removed";
  // Opening an output in the folder does the same.
  touch(stale_out);
  { OutputFile out(tmp.file("next.tif")); }
  EXPECT_NE(access(stale_out.c_str(), F_OK), 0);
}

TEST(WriteSmallFile, ReplacesOnlyWhenComplete) {
  test::TempDir tmp;
  write_small_file(tmp.file("r.json"), "{}\n");
  EXPECT_EQ(slurp(tmp.file("r.json")), "{}\n");
  EXPECT_NE(message_of([] { write_small_file("/dev/null", "x"); }).find("is a device"), std::string::npos);
}

}  // namespace
}  // namespace tw
