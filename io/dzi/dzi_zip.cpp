#include "io/dzi/dzi_zip.hpp"

#include <dirent.h>
#include <zip.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "engine/error.hpp"

namespace tw {
namespace {

std::vector<std::string> entries_of(const std::string& dir) {
  std::vector<std::string> names;
  DIR* d = ::opendir(dir.c_str());
  if (!d) throw InputError("cannot read " + dir + " to zip it: " + std::strerror(errno));
  while (const dirent* e = ::readdir(d))
    if (e->d_name[0] != '.') names.emplace_back(e->d_name);
  ::closedir(d);
  std::sort(names.begin(), names.end());
  return names;
}

std::string zip_message(zip_t* z) {
  return z ? zip_strerror(z) : "unknown error";
}

}  // namespace

void write_dzi_zip(const std::string& zip_path, const std::string& base, const std::string& descriptor_xml,
                   const std::string& files_dir) {
  int err = 0;
  zip_t* z = zip_open(zip_path.c_str(), ZIP_CREATE | ZIP_EXCL, &err);
  if (!z) {
    zip_error_t ze;
    zip_error_init_with_code(&ze, err);
    const std::string msg = zip_error_strerror(&ze);
    zip_error_fini(&ze);
    throw InputError("cannot create " + zip_path + ": " + msg);
  }
  // zip_discard frees everything without writing; called on any failure.
  auto fail = [&](const std::string& what) {
    const std::string msg = what + ": " + zip_message(z);
    zip_discard(z);
    throw InputError(msg);
  };
  auto add = [&](const std::string& name, zip_source_t* src) {
    if (!src) fail("cannot add " + name + " to " + zip_path);
    const zip_int64_t i = zip_file_add(z, name.c_str(), src, ZIP_FL_ENC_UTF_8);
    if (i < 0) {
      zip_source_free(src);
      fail("cannot add " + name + " to " + zip_path);
    }
    // Tiles are JPEG or PNG already: deflating them again gains nothing.
    if (zip_set_file_compression(z, static_cast<zip_uint64_t>(i), ZIP_CM_STORE, 0) < 0)
      fail("cannot store " + name + " in " + zip_path);
  };
  // The descriptor's bytes must outlive zip_close, which reads every source.
  add(base + "/" + base + ".dzi", zip_source_buffer(z, descriptor_xml.data(), descriptor_xml.size(), 0));
  // Levels in numeric order, tiles by name: the order vips's zip does not
  // promise either, but a stable one.
  std::vector<std::string> levels = entries_of(files_dir);
  std::sort(levels.begin(), levels.end(),
            [](const std::string& a, const std::string& b) { return std::atoll(a.c_str()) < std::atoll(b.c_str()); });
  for (const std::string& level : levels)
    for (const std::string& tile : entries_of(files_dir + "/" + level)) {
      const std::string path = files_dir + "/" + level + "/" + tile;
      add(base + "/" + base + "_files/" + level + "/" + tile, zip_source_file(z, path.c_str(), 0, -1));
    }
  if (zip_close(z) < 0) fail("cannot write " + zip_path);
}

}  // namespace tw
