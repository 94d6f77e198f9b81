#include "io/dzi/dzi_output.hpp"

#include <dirent.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

#include "engine/error.hpp"
#include "engine/output_file.hpp"
#include "engine/text.hpp"
#include "io/dzi/dzi_zip.hpp"

namespace tw {
namespace {

bool is_dir(const std::string& p) {
  struct stat st {};
  return ::lstat(p.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

const FolderKind kFilesKind{"an earlier Deep Zoom output's tile folder (beside its .dzi)", is_deep_zoom_files_folder};

// The zip's scratch folder is never put in place: nothing may be replaced.
const FolderKind kScratchKind{"a Deep Zoom scratch folder", nullptr};

}  // namespace

bool is_deep_zoom_files_folder(const std::string& files) {
  const std::string suffix = "_files";
  if (files.size() <= suffix.size() || files.compare(files.size() - suffix.size(), suffix.size(), suffix) != 0)
    return false;
  std::ifstream in(files.substr(0, files.size() - suffix.size()) + ".dzi");
  std::stringstream head;
  head << in.rdbuf();
  if (head.str().find("schemas.microsoft.com/deepzoom") == std::string::npos) return false;
  DIR* d = ::opendir(files.c_str());
  if (!d) return false;
  bool ok = true;
  while (const dirent* e = ::readdir(d)) {
    const std::string n = e->d_name;
    if (n == "." || n == ".." || n == "vips-properties.xml") continue;
    ok = ok && n.find_first_not_of("0123456789") == std::string::npos && is_dir(files + "/" + n);
  }
  ::closedir(d);
  return ok;
}

DziOutput::DziOutput(const std::string& path) {
  if (path.empty() || path.back() == '/') throw InputError("output path '" + path + "' names a folder, not a file");
  const auto slash = path.find_last_of('/');
  dir_ = slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
  base_ = slash == std::string::npos ? path : path.substr(slash + 1);
  zip_ = ends_with_nocase(base_, ".zip");
  if (zip_ || ends_with_nocase(base_, ".dzi")) base_.resize(base_.size() - 4);
  if (base_.empty()) throw InputError("output path '" + path + "' has no name before its suffix");
  const std::string stem = dir_ + "/" + base_;
  if (zip_) {
    check_output_path(stem + ".zip");
    folder_ = std::make_unique<OutputFolder>(stem + ".zip.tiles", kScratchKind);
    files_dir_ = folder_->temp_path() + "/" + base_ + "_files";
    if (::mkdir(files_dir_.c_str(), 0755) != 0)
      throw InputError("cannot create " + files_dir_ + ": " + std::strerror(errno));
  } else {
    check_output_path(stem + ".dzi");
    folder_ = std::make_unique<OutputFolder>(stem + "_files", kFilesKind);
    files_dir_ = folder_->temp_path();
  }
}

void DziOutput::commit(const std::string& descriptor_xml) {
  const std::string stem = dir_ + "/" + base_;
  if (zip_) {
    const std::string zip = folder_->temp_path() + "/" + base_ + ".zip";
    write_dzi_zip(zip, base_, descriptor_xml, files_dir_);
    check_output_path(stem + ".zip");  // again: the path may have changed during the run
    if (std::rename(zip.c_str(), (stem + ".zip").c_str()) != 0)
      throw InputError("cannot rename " + zip + " to " + stem + ".zip: " + std::strerror(errno));
    folder_.reset();  // removes the scratch tiles
    return;
  }
  // The tiles first, the descriptor last: a viewer opens OUT.dzi, so it never
  // finds a descriptor whose tiles are missing. (An earlier output's OUT.dzi
  // is still in place while its OUT_files is swapped: it stays the
  // "earlier output" that the exchange checks for.)
  folder_->commit();
  write_small_file(stem + ".dzi", descriptor_xml);
}

}  // namespace tw
