#pragma once
// Helpers shared by the tests: temporary folders, running the tilewave CLI
// and the Python oracles (scipy, scikit-image, tifffile via /usr/bin/python3),
// .npy exchange, image comparison, and TIFFs written by libtiff itself (an
// independent writer for our reader, and an independent reader for ours).
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "engine/image.hpp"

namespace tw::test {

class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return dir_; }
  std::string file(const std::string& name) const { return dir_ + "/" + name; }
  std::vector<std::string> list() const;  // names in the folder

 private:
  std::string dir_;
};

struct RunResult {
  int exit_code = -1;
  std::string out, err;
  // The program's own peak (through tests/support/rss_probe.cpp: a child
  // forked from the test would report the test's RSS too); with
  // terminate_after, wait4's figure for the child, which includes it.
  size_t peak_rss_bytes = 0;
  double seconds = 0;
};

struct RunOptions {
  std::map<std::string, std::string> env;
  std::string cwd;             // empty: the test's own
  double terminate_after = 0;  // > 0: send `signal` after this many seconds
  int signal = 15;             // SIGTERM; 9 (SIGKILL) for a kill -9
};

// A sanitizer build (-DTW_SANITIZE, docs/SANITIZERS.md): there most of a
// process's peak RSS is the sanitizer's (shadow memory, ASan's quarantine of
// freed blocks, TSan's shadow and history), so tests of the memory budget
// still run their commands and check the pixels, but not the RSS bound.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
inline constexpr bool kSanitizerBuild = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
inline constexpr bool kSanitizerBuild = true;
#else
inline constexpr bool kSanitizerBuild = false;
#endif
#else
inline constexpr bool kSanitizerBuild = false;
#endif

RunResult run(const std::vector<std::string>& argv, const RunOptions& opt = {});
RunResult run_cli(const std::vector<std::string>& args, const RunOptions& opt = {});
std::string cli_path();
// A whole file's bytes ("" if it cannot be read), and whether a path exists.
std::string file_bytes(const std::string& path);
bool path_exists(const std::string& path);
std::string source_dir();

// The Debian Python with numpy/scipy/skimage/tifffile; tests that need a
// module it lacks skip with this message.
// A JSON file (a --report), parsed: a malformed file fails the test.
nlohmann::json read_json(const std::string& path);

std::string python();
bool python_has(const std::string& module);
RunResult run_python(const std::string& script, const std::vector<std::string>& args);
std::string oracle(const std::string& name);  // tests/oracles/<name>

void save_npy(const std::string& path, const ImageView& img);
Image load_npy(const std::string& path);

// "" when equal within tolerance; else the first differing (x, y), both
// values and the count of differing samples.
std::string diff_images(const ImageView& a, const ImageView& b, int tolerance = 0);
double psnr(const ImageView& a, const ImageView& b);

Image random_image(PixelFormat fmt, int64_t w, int64_t h, uint64_t seed);
// Smooth structured content (gradients + blobs + noise): realistic for codecs.
Image pattern_image(PixelFormat fmt, int64_t w, int64_t h, uint64_t seed);

struct TiffSpec {
  bool tiled = true;
  int tile_w = 256, tile_h = 256;
  int rows_per_strip = 64;
  uint16_t compression = 1;  // TIFF Compression tag value
  int jpeg_quality = 90;
  bool jpeg_ycbcr = true;  // RGB JPEG stored as YCbCr 4:2:0
  uint16_t predictor = 1;
  bool bigtiff = false;
  bool planar_separate = false;
  bool min_is_white = false;
  float xres = 0;  // pixels per centimetre (0: no resolution tags)
  float yres = 0;  // 0: the same as xres
  std::string description;
};

// Writes img with libtiff's own codecs (TIFFWriteEncodedTile/Strip).
void write_tiff(const std::string& path, const ImageView& img, const TiffSpec& spec);
// Appends a further directory (e.g. a reduced level, or a label) to a file
// written by write_tiff.
void append_tiff_directory(const std::string& path, const ImageView& img, const TiffSpec& spec, uint32_t subfile_type);

// Reads directory `dir` with libtiff's own decoders (TIFFReadEncodedTile,
// JPEGCOLORMODE_RGB for YCbCr JPEG): an independent reader for our files.
Image read_tiff_libtiff(const std::string& path, int dir);

// Tag values of directory `dir`, for checking what a writer wrote.
struct TiffDirTags {
  uint32_t width = 0, height = 0, tile_w = 0, tile_h = 0, subfile_type = 0;
  uint16_t compression = 0, photometric = 0, predictor = 1, spp = 0, bits = 0, sub_h = 0, sub_v = 0;
  uint16_t res_unit = 0;
  float xres = 0, yres = 0;
  bool has_jpeg_tables = false;
  std::string description;
};
TiffDirTags read_tiff_tags(const std::string& path, int dir);
int count_tiff_directories(const std::string& path);

// Damages tile `index` of the first directory in place: a stray JPEG end
// marker written in the middle of its stored bytes, as a flipped bit in the
// entropy-coded data makes.
void damage_tiff_tile(const std::string& path, int index);

}  // namespace tw::test
