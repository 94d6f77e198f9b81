#pragma once
// An output written under a temporary name beside its final path and renamed
// into place only by commit(): a failed or interrupted run leaves nothing at
// the final path, and no temporary either (removed on destruction or signal).
#include <string>

namespace tw {

class OutputFile {
 public:
  // Checks that the folder exists and is writable; throws InputError if not.
  explicit OutputFile(const std::string& final_path);
  ~OutputFile();
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;

  const std::string& temp_path() const { return temp_; }
  const std::string& final_path() const { return final_; }
  void commit();  // rename temp -> final

 private:
  std::string final_, temp_;
  int slot_ = -1;
  bool committed_ = false;
};

// A scratch file path in the output's folder (or TMPDIR), removed on
// destruction and on SIGINT/SIGTERM.
class TempPath {
 public:
  explicit TempPath(const std::string& near_path, const std::string& suffix);
  ~TempPath();
  TempPath(const TempPath&) = delete;
  TempPath& operator=(const TempPath&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  int slot_ = -1;
};

}  // namespace tw
