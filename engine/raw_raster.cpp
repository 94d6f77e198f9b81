#include "engine/raw_raster.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "engine/file_io.hpp"

namespace tw {
RawRasterFile::RawRasterFile(const std::string& near_path, PixelFormat fmt, int64_t width, int64_t height)
    : file_(near_path) {
  info_.path = file_.name();
  info_.format = "scratch";
  info_.fmt = fmt;
  LevelInfo li;
  li.width = width, li.height = height;
  li.compression = "none";
  info_.levels.push_back(li);
  fd_ = file_.fd();
}

RawRasterFile::~RawRasterFile() = default;

void RawRasterFile::write(const ImageView& src) {
  const LevelInfo& li = info_.levels[0];
  TW_ASSERT(src.fmt == info_.fmt && li.bounds().contains(src.rect));
  const size_t bpp = info_.fmt.bytes_per_pixel();
  for (int64_t y = src.rect.y; y < src.rect.y1(); ++y) {
    const uint64_t off = (static_cast<uint64_t>(y) * li.width + src.rect.x) * bpp;
    pwrite_all(fd_, src.row_bytes(y), src.row_length_bytes(), off, file_.name());
  }
}

void RawRasterFile::read_inside(int, const ImageView& dst) const {
  const LevelInfo& li = info_.levels[0];
  const size_t bpp = info_.fmt.bytes_per_pixel();
  for (int64_t y = dst.rect.y; y < dst.rect.y1(); ++y) {
    const uint64_t off = (static_cast<uint64_t>(y) * li.width + dst.rect.x) * bpp;
    pread_all(fd_, dst.row_bytes(y), dst.row_length_bytes(), off, file_.name());
  }
}

}  // namespace tw
