// Folder outputs (engine/output_folder.hpp): nothing at the final path
// before commit(), an earlier folder of the kind swapped out whole, anything
// else refused, links never followed when removing, and temporary folders
// of dead runs removed while a live run's are kept.
#include "engine/output_folder.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>

#include "engine/error.hpp"
#include "engine/output_file.hpp"
#include "tests/support/test_support.hpp"

namespace tw {
namespace {

bool exists(const std::string& p) {
  struct stat st {};
  return ::lstat(p.c_str(), &st) == 0;
}

const FolderKind kStore{"a test store (a folder with a MARK file)",
                        [](const std::string& p) { return exists(p + "/MARK"); }};

std::string message_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(OutputFolder, AppearsOnlyOnCommit) {
  test::TempDir tmp;
  const std::string out = tmp.file("out.store");
  {
    OutputFolder f(out, kStore);
    std::ofstream(f.temp_path() + "/MARK") << "1";
    EXPECT_FALSE(exists(out));
    f.commit();
  }
  EXPECT_TRUE(exists(out + "/MARK"));
  {
    OutputFolder f(out + "/", kStore);  // the same folder, spelled with a slash
    std::ofstream(f.temp_path() + "/MARK") << "2";
    ::mkdir((f.temp_path() + "/sub").c_str(), 0755);
    // Destroyed without commit(): the earlier folder stays, no temporary is left.
  }
  EXPECT_EQ(tmp.list(), std::vector<std::string>{"out.store"});
  {
    OutputFolder f(out, kStore);
    std::ofstream(f.temp_path() + "/MARK") << "3";
    f.commit();  // replaces the earlier store
  }
  std::ifstream in(out + "/MARK");
  std::string mark;
  in >> mark;
  EXPECT_EQ(mark, "3");
  EXPECT_EQ(tmp.list(), std::vector<std::string>{"out.store"});
}

TEST(OutputFolder, RefusesWhatIsNotOfItsKind) {
  test::TempDir tmp;
  std::ofstream(tmp.file("file")) << "x";
  ::mkdir(tmp.file("other").c_str(), 0755);
  ::symlink(tmp.file("other").c_str(), tmp.file("link").c_str());
  EXPECT_NE(message_of([&] { OutputFolder f(tmp.file("file"), kStore); }).find("is a file"), std::string::npos);
  EXPECT_NE(message_of([&] { OutputFolder f(tmp.file("other"), kStore); }).find("not a test store"), std::string::npos);
  EXPECT_NE(message_of([&] { OutputFolder f(tmp.file("link"), kStore); }).find("symbolic link"), std::string::npos);
  EXPECT_NE(message_of([&] { OutputFolder f(tmp.file("no/such"), kStore); }).find("does not exist"), std::string::npos);
  // An input inside the folder, or the folder itself as an input.
  ::mkdir(tmp.file("s").c_str(), 0755);
  std::ofstream(tmp.file("s/MARK")) << "1";
  std::ofstream(tmp.file("s/in.tif")) << "x";
  EXPECT_NE(message_of([&] {
              check_output_folder(tmp.file("s"), kStore, {tmp.file("s/in.tif")});
            }).find("lies inside the output"),
            std::string::npos);
  EXPECT_NO_THROW(check_output_folder(tmp.file("s"), kStore, {tmp.file("file"), "synthetic:10x10"}));
  // A folder created meanwhile at the final path is not replaced by commit().
  OutputFolder f(tmp.file("late"), kStore);
  ::mkdir(tmp.file("late").c_str(), 0755);
  std::ofstream(tmp.file("late/keep")) << "x";
  EXPECT_NE(message_of([&] { f.commit(); }).find("not a test store"), std::string::npos);
  EXPECT_TRUE(exists(tmp.file("late/keep")));
}

TEST(OutputFolder, RemoveTreeDoesNotFollowLinks) {
  test::TempDir tmp, outside;
  std::ofstream(outside.file("precious")) << "x";
  ::mkdir(tmp.file("t").c_str(), 0755);
  ::mkdir(tmp.file("t/a").c_str(), 0755);
  ::symlink(outside.path().c_str(), tmp.file("t/a/out").c_str());
  EXPECT_TRUE(remove_tree(tmp.file("t")));
  EXPECT_FALSE(exists(tmp.file("t")));
  EXPECT_TRUE(exists(outside.file("precious")));
}

TEST(OutputFolder, StaleTemporariesOfDeadRunsOnly) {
  test::TempDir tmp;
  // A PID that is surely gone: a child that has exited and been reaped.
  const pid_t child = ::fork();
  if (child == 0) ::_exit(0);
  ::waitpid(child, nullptr, 0);
  const std::string dead = tmp.file(".x.zarr.tw-" + std::to_string(child) + "-0.tmp");
  const std::string live = tmp.file(".y.zarr.tw-1-0.tmp");  // PID 1 lives
  for (const std::string& d : {dead, live}) {
    ::mkdir(d.c_str(), 0755);
    ::mkdir((d + "/0").c_str(), 0755);
    std::ofstream(d + "/0/chunk") << "x";
  }
  std::ofstream(tmp.file("user.txt")) << "x";
  EXPECT_EQ(remove_stale_temporary_folders(tmp.path()), 1);
  EXPECT_FALSE(exists(dead));
  EXPECT_TRUE(exists(live + "/0/chunk"));
  EXPECT_TRUE(exists(tmp.file("user.txt")));
}

}  // namespace
}  // namespace tw
