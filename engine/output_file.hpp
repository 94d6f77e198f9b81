#pragma once
// Files a run writes, made so that no run destroys data and none leaves
// anything behind:
//  * OutputFile: the result, written under a temporary name beside its final
//    path and renamed into place only by commit(). The final path must be
//    new or a regular file that is none of the run's inputs.
//  * ScratchFile: an intermediate raster with no name at all (O_TMPFILE, or
//    unlinked as soon as it is created), so even kill -9 leaves nothing.
// A temporary that a killed process could not remove (its name ends
// ".tw-PID-N.tmp") holds an flock while its owner lives; the next run that
// writes into the same folder removes those whose owner is gone.
#include <string>
#include <vector>

namespace tw {

// Refuses (InputError, naming the path) an output path that a run must not
// write: a folder that does not exist or is not writable, a path that exists
// and is not a regular file (device nodes such as /dev/null, FIFOs, sockets,
// symbolic links, folders), or the same file as one of `inputs` (compared by
// device and inode, so a hard link or another spelling of the path counts).
// Inputs that are not files (e.g. "synthetic:...") never match.
void check_output_path(const std::string& output, const std::vector<std::string>& inputs = {});

// True when both paths name the same existing file.
bool same_file(const std::string& a, const std::string& b);

class OutputFile {
 public:
  // Runs check_output_path(final_path), creates the temporary file and
  // removes stale temporaries of dead processes in the same folder.
  explicit OutputFile(const std::string& final_path);
  ~OutputFile();
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;

  const std::string& temp_path() const { return temp_; }
  const std::string& final_path() const { return final_; }
  int fd() const { return fd_; }  // the temporary, open for reading and writing
  // Renames the file into place, re-checking that the final path is still
  // new or a regular file. (No fsync: a power cut may lose the new file, but
  // never leaves part of it at the final path of a journalled file system.)
  void commit();

 private:
  std::string final_, temp_;
  int fd_ = -1;
  int slot_ = -1;
  bool committed_ = false;
};

// An anonymous scratch file in the folder of near_path (the folder must
// exist): nothing on disk outlives the object or the process.
class ScratchFile {
 public:
  explicit ScratchFile(const std::string& near_path);
  ~ScratchFile();
  ScratchFile(const ScratchFile&) = delete;
  ScratchFile& operator=(const ScratchFile&) = delete;
  int fd() const { return fd_; }
  // For messages: "scratch file in FOLDER".
  const std::string& name() const { return name_; }

 private:
  int fd_ = -1;
  std::string name_;
};

// Writes `content` to path atomically (temporary + rename), for small
// outputs such as --report JSON. Throws InputError.
void write_small_file(const std::string& path, const std::string& content);

// Removes temporaries ("." NAME ".tw-PID-N" + ".tmp", ".raster" or ".store") in `folder`
// whose process has died (not locked, PID gone). Returns how many.
int remove_stale_temporaries(const std::string& folder);

// The naming scheme above, for other outputs that need temporaries (the
// folders of engine/output_folder.hpp): a new name beside final_path ending
// in `suffix`, and the owner's PID in such a name (-1: not one of ours).
std::string temporary_name(const std::string& final_path, const std::string& suffix);
long temporary_owner(const std::string& name);
// Removes `path` (a file, or a folder and all it holds) if the process is
// interrupted or dies of a fatal signal, as OutputFile's temporaries are;
// returns a slot for keep_on_signal (-1: no room, the path is then left
// for a later run's clean-up).
int remove_on_signal(const std::string& path);
void keep_on_signal(int slot);

}  // namespace tw
