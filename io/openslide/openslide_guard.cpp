#include "io/openslide/openslide_guard.hpp"

#include <fcntl.h>
#include <openslide.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <tiffio.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <memory>
#include <thread>
#include <vector>

#include "engine/error.hpp"
#include "io/tiff/tiff_error.hpp"

namespace tw {
namespace {

// The largest tile OpenSlide is let decode: 8192 x 8192 (256 MiB as ARGB).
// Scanners write 240..2048-pixel tiles.
constexpr uint64_t kMaxTilePixels = uint64_t{1} << 26;
constexpr int kMaxDirectories = 4096;

// One directory's problem, or "".
std::string directory_problem(TIFF* t, uint64_t file_size) {
  uint32_t w = 0, h = 0;
  TIFFGetField(t, TIFFTAG_IMAGEWIDTH, &w);
  TIFFGetField(t, TIFFTAG_IMAGELENGTH, &h);
  if (w == 0 || h == 0) return "an image of " + std::to_string(w) + "x" + std::to_string(h) + " pixels";
  uint16_t bits = 8, spp = 1, fmt = SAMPLEFORMAT_UINT;
  TIFFGetFieldDefaulted(t, TIFFTAG_BITSPERSAMPLE, &bits);
  TIFFGetFieldDefaulted(t, TIFFTAG_SAMPLESPERPIXEL, &spp);
  TIFFGetFieldDefaulted(t, TIFFTAG_SAMPLEFORMAT, &fmt);
  // OpenSlide hands out 8-bit RGBA whatever is stored: anything else would
  // come out converted (16-bit as its high byte, 5 channels as one).
  if (bits != 8 || fmt != SAMPLEFORMAT_UINT)
    return std::to_string(bits) + "-bit " +
           (fmt == SAMPLEFORMAT_IEEEFP ? "floating-point"
            : fmt == SAMPLEFORMAT_INT  ? "signed"
                                       : "unsigned") +
           " samples (OpenSlide reads 8-bit images only)";
  if (spp != 1 && spp != 3 && spp != 4)
    return std::to_string(spp) + " samples per pixel (OpenSlide reads gray, RGB and RGBA only)";
  uint64_t* offs = nullptr;
  uint64_t* cnts = nullptr;
  uint32_t chunks = 0;
  if (TIFFIsTiled(t)) {
    uint32_t tw = 0, th = 0;
    TIFFGetField(t, TIFFTAG_TILEWIDTH, &tw);
    TIFFGetField(t, TIFFTAG_TILELENGTH, &th);
    if (tw == 0 || th == 0 || uint64_t{tw} * th > kMaxTilePixels)
      return "tiles of " + std::to_string(tw) + "x" + std::to_string(th) + " pixels";
    TIFFGetField(t, TIFFTAG_TILEOFFSETS, &offs);
    TIFFGetField(t, TIFFTAG_TILEBYTECOUNTS, &cnts);
    chunks = TIFFNumberOfTiles(t);
  } else {
    TIFFGetField(t, TIFFTAG_STRIPOFFSETS, &offs);
    TIFFGetField(t, TIFFTAG_STRIPBYTECOUNTS, &cnts);
    chunks = TIFFNumberOfStrips(t);
  }
  if (!offs || !cnts || chunks == 0) return "no tile or strip offsets";
  for (uint32_t i = 0; i < chunks; ++i)
    if (cnts[i] > file_size || offs[i] > file_size - cnts[i])
      return std::string(TIFFIsTiled(t) ? "tile " : "strip ") + std::to_string(i) + " of " + std::to_string(cnts[i]) +
             " bytes at offset " + std::to_string(offs[i]) + " lies past the end of the " + std::to_string(file_size) +
             "-byte file";
  return "";
}

using TiffPtr = std::unique_ptr<TIFF, void (*)(TIFF*)>;

// Runs OpenSlide on the file in a child process; returns "" when the child
// finished (whatever OpenSlide said: the caller's own open reports that),
// else what happened to it.
std::string probe_in_child(const std::string& path, double timeout_s) {
  const pid_t pid = ::fork();
  if (pid < 0) return "";  // cannot probe: go on unprobed rather than refuse
  if (pid == 0) {
    // The child: our handlers (which remove the parent's temporaries) and
    // GLib's messages are not for it.
    for (int s : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGABRT, SIGTRAP, SIGSEGV, SIGBUS, SIGFPE, SIGILL})
      ::signal(s, SIG_DFL);
    const int devnull = ::open("/dev/null", O_WRONLY);
    if (devnull >= 0) ::dup2(devnull, 2);
    openslide_t* osr = openslide_open(path.c_str());
    if (!osr) ::_exit(3);
    const int32_t levels = openslide_get_level_count(osr);
    uint32_t px = 0;
    for (int32_t l = 0; l < levels && !openslide_get_error(osr); ++l) {
      int64_t w = 0, h = 0;
      openslide_get_level_dimensions(osr, l, &w, &h);
      const double ds = openslide_get_level_downsample(osr, l);
      openslide_read_region(osr, &px, 0, 0, l, 1, 1);
      openslide_read_region(osr, &px, static_cast<int64_t>(w / 2 * ds), static_cast<int64_t>(h / 2 * ds), l, 1, 1);
    }
    ::_exit(openslide_get_error(osr) ? 4 : 0);
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  int status = 0;
  for (;;) {
    const pid_t r = ::waitpid(pid, &status, WNOHANG);
    if (r == pid) break;
    if (r < 0 && errno != EINTR) return "";
    if (std::chrono::steady_clock::now() > deadline) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      return "OpenSlide did not finish opening it within " + std::to_string(static_cast<int>(timeout_s)) + " s";
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  if (WIFSIGNALED(status)) return std::string("OpenSlide crashed opening it (") + strsignal(WTERMSIG(status)) + ")";
  return "";
}

bool starts_like_tiff(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return false;
  unsigned char m[4] = {0, 0, 0, 0};
  const ssize_t n = ::read(fd, m, 4);
  ::close(fd);
  return n == 4 && ((m[0] == 'I' && m[1] == 'I' && (m[2] == 42 || m[2] == 43) && m[3] == 0) ||
                    (m[0] == 'M' && m[1] == 'M' && m[2] == 0 && (m[3] == 42 || m[3] == 43)));
}

}  // namespace

std::string tiff_problem_for_openslide(const std::string& path) {
  install_tiff_handlers();
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return "not a regular file";
  const uint64_t file_size = static_cast<uint64_t>(st.st_size);
  clear_tiff_error();
  TiffPtr t(TIFFOpen(path.c_str(), "rm"), TIFFClose);
  if (!t) return "not a readable TIFF (" + take_tiff_error() + ")";
  std::vector<uint64_t> subifds;
  int n = 0;
  do {
    if (++n > kMaxDirectories) return "more than " + std::to_string(kMaxDirectories) + " directories";
    const std::string p = directory_problem(t.get(), file_size);
    if (!p.empty()) return "directory " + std::to_string(n - 1) + ": " + p;
    uint16_t count = 0;
    uint64_t* offs = nullptr;
    if (TIFFGetField(t.get(), TIFFTAG_SUBIFD, &count, &offs) && offs) subifds.insert(subifds.end(), offs, offs + count);
  } while (TIFFReadDirectory(t.get()));
  for (size_t i = 0; i < subifds.size() && i < kMaxDirectories; ++i) {
    if (!TIFFSetSubDirectory(t.get(), subifds[i])) return "SubIFD " + std::to_string(i) + " cannot be read";
    const std::string p = directory_problem(t.get(), file_size);
    if (!p.empty()) return "SubIFD " + std::to_string(i) + ": " + p;
  }
  return "";
}

void check_before_openslide(const std::string& path, double timeout_s) {
  if (starts_like_tiff(path)) {
    const std::string p = tiff_problem_for_openslide(path);
    if (!p.empty()) throw InputError(path + ": " + p + "; not handed to OpenSlide");
  }
  const std::string p = probe_in_child(path, timeout_s);
  if (!p.empty()) throw InputError(path + ": " + p + "; the file is damaged or not a slide OpenSlide supports");
}

}  // namespace tw
