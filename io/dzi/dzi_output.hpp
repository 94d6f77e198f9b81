#pragma once
// Where a Deep Zoom output is written, so that it appears only complete
// (engine/output_folder.hpp, engine/output_file.hpp): the tiles go into a
// temporary folder beside OUT_files, renamed into place at the end, then
// OUT.dzi is written under a temporary name and renamed; or, for OUT.zip
// (OUT/OUT.dzi and OUT/OUT_files/... as vips dzsave's zip), the tiles go
// into a scratch folder, are zipped beside them and the zip renamed into
// place. A failed or interrupted run leaves nothing at the final paths; a
// killed one leaves a temporary that the next run in the folder removes.
#include <memory>
#include <string>

#include "engine/output_folder.hpp"

namespace tw {

class DziOutput {
 public:
  // path: OUT.dzi, OUT.zip (zip container) or OUT (then OUT.dzi, as vips).
  // Refuses now (InputError) what commit() would refuse: an unwritable
  // folder, a final path that is a folder, link or device, an OUT_files that
  // is not an earlier Deep Zoom output beside its OUT.dzi.
  explicit DziOutput(const std::string& path);
  DziOutput(const DziOutput&) = delete;
  DziOutput& operator=(const DziOutput&) = delete;

  bool zip() const { return zip_; }
  // The temporary OUT_files folder (tiles go into LEVEL/COL_ROW.ext below it).
  const std::string& files_dir() const { return files_dir_; }
  // Writes the descriptor, zips where asked, and renames into place.
  void commit(const std::string& descriptor_xml);

 private:
  std::string dir_, base_, files_dir_;
  bool zip_ = false;
  std::unique_ptr<OutputFolder> folder_;  // OUT_files; for a zip, the scratch folder of its tiles
};

// True for an earlier Deep Zoom output's OUT_files, which may be replaced: it
// holds only level folders (and vips's vips-properties.xml), and the OUT.dzi
// beside it is a Deep Zoom descriptor. A user's folder of that name is not.
bool is_deep_zoom_files_folder(const std::string& files_dir);

}  // namespace tw
