#pragma once
// A Deep Zoom output as one zip (libzip): entries "BASE/BASE.dzi" and
// "BASE/BASE_files/LEVEL/COL_ROW.ext" as vips dzsave lays out its zip,
// tiles stored (they are JPEG or PNG already), with zip64 where needed.
#include <string>

namespace tw {

// Zips the descriptor and the tree under files_dir (BASE_files) into
// zip_path, which must not exist. Throws InputError.
void write_dzi_zip(const std::string& zip_path, const std::string& base, const std::string& descriptor_xml,
                   const std::string& files_dir);

}  // namespace tw
