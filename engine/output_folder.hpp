#pragma once
// Outputs that are folders (an OME-Zarr store, a Deep Zoom tile folder),
// made as engine/output_file.hpp makes files: everything is written under a
// temporary name beside the final path (".NAME.tw-PID-N.tmp", a folder
// flock'ed while its owner lives) and renamed into place only by commit(),
// so a failed or killed run leaves nothing at the final path. A temporary
// folder left by a killed run is removed by the next run that writes a
// folder beside it.
#include <functional>
#include <string>
#include <vector>

namespace tw {

// What may be replaced at a folder output's path: an existing folder of the
// same kind (e.g. an earlier run's Zarr store), told by `is_one`; never a
// file, a link or another folder.
struct FolderKind {
  std::string name;                                // for messages: "an OME-Zarr store"
  std::function<bool(const std::string&)> is_one;  // empty: no existing folder is replaced
};

// Refuses (InputError, naming the path) a folder output that a run must not
// write: its parent missing or not writable; the path a file, a link, a
// device, or a folder that is not `kind`; or one of `inputs`, or a folder
// holding one of them (replacing it would delete an input).
void check_output_folder(const std::string& output, const FolderKind& kind,
                         const std::vector<std::string>& inputs = {});

class OutputFolder {
 public:
  // Runs check_output_folder(final_path, kind), removes stale temporary
  // folders of dead runs beside it and creates the temporary folder.
  OutputFolder(const std::string& final_path, FolderKind kind);
  ~OutputFolder();  // removes the temporary folder unless committed
  OutputFolder(const OutputFolder&) = delete;
  OutputFolder& operator=(const OutputFolder&) = delete;

  const std::string& temp_path() const { return temp_; }
  const std::string& final_path() const { return final_; }
  // Puts the folder at its final path. An existing folder of the kind is
  // swapped out in one step (renameat2 RENAME_EXCHANGE: the path always
  // holds a complete store) and then deleted; anything else there now is
  // refused.
  void commit();

 private:
  std::string final_, temp_;
  FolderKind kind_;
  int fd_ = -1;    // the temporary folder, holding its flock
  int slot_ = -1;  // engine/output_file.hpp remove_on_signal
  bool committed_ = false;
};

// Removes a folder and everything in it, never following links (also when
// they point outside). Returns false if something could not be removed.
bool remove_tree(const std::string& path);

// Removes temporary folders (".NAME.tw-PID-N.tmp") in `folder` whose run has
// died (PID gone and no flock held). Returns how many.
int remove_stale_temporary_folders(const std::string& folder);

}  // namespace tw
