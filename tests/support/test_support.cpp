#include "tests/support/test_support.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/select.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <tiffio.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <limits>
#include <memory>
#include <random>
#include <sstream>
#include <stdexcept>

#include "engine/error.hpp"

namespace tw::test {
namespace {

void remove_tree(const std::string& path) {
  DIR* d = opendir(path.c_str());
  if (d) {
    while (dirent* e = readdir(d)) {
      const std::string n = e->d_name;
      if (n == "." || n == "..") continue;
      const std::string p = path + "/" + n;
      struct stat st {};
      if (lstat(p.c_str(), &st) == 0 && S_ISDIR(st.st_mode))
        remove_tree(p);
      else
        unlink(p.c_str());
    }
    closedir(d);
  }
  rmdir(path.c_str());
}

template <class T>
int64_t sample_at(const ImageView& v, int64_t x, int64_t y, int c) {
  return static_cast<int64_t>(v.ptr<T>(x, y)[c]);
}

int64_t sample(const ImageView& v, int64_t x, int64_t y, int c) {
  switch (v.fmt.type) {
    case SampleType::kU8:
      return sample_at<uint8_t>(v, x, y, c);
    case SampleType::kU16:
      return sample_at<uint16_t>(v, x, y, c);
    case SampleType::kI32:
      return sample_at<int32_t>(v, x, y, c);
    case SampleType::kU32:
      return sample_at<uint32_t>(v, x, y, c);
    case SampleType::kF32:
      return static_cast<int64_t>(std::lround(v.ptr<float>(x, y)[c]));
  }
  return 0;
}

}  // namespace

TempDir::TempDir() {
  const char* base = std::getenv("TMPDIR");
  std::string tmpl = std::string(base && *base ? base : "/tmp") + "/tilewave-test-XXXXXX";
  std::vector<char> buf(tmpl.begin(), tmpl.end());
  buf.push_back(0);
  if (!mkdtemp(buf.data())) throw std::runtime_error("mkdtemp failed");
  dir_ = buf.data();
}

TempDir::~TempDir() {
  if (!std::getenv("TW_KEEP_TEST_FILES")) remove_tree(dir_);
}

std::vector<std::string> TempDir::list() const {
  std::vector<std::string> out;
  DIR* d = opendir(dir_.c_str());
  if (!d) return out;
  while (dirent* e = readdir(d)) {
    const std::string n = e->d_name;
    if (n != "." && n != "..") out.push_back(n);
  }
  closedir(d);
  return out;
}

namespace {

// tests/support/rss_probe.cpp (TW_RSS_PROBE in the environment overrides
// the build's, for a copy of the tests run elsewhere).
std::string rss_probe_path() {
  const char* env = std::getenv("TW_RSS_PROBE");
  return env && *env ? env : TW_RSS_PROBE;
}

}  // namespace

RunResult run(const std::vector<std::string>& argv_in, const RunOptions& opt) {
  // Through the probe, so that the peak RSS is the program's own; not when
  // the test sends a signal (a kill -9 must reach the program itself).
  const bool probe = opt.terminate_after <= 0;
  int out_pipe[2], err_pipe[2], rss_pipe[2] = {-1, -1};
  // Close-on-exec, so that a child started meanwhile by another thread does
  // not hold these pipes open (the reads below would wait for it to end).
  if (pipe2(out_pipe, O_CLOEXEC) != 0 || pipe2(err_pipe, O_CLOEXEC) != 0 || (probe && pipe2(rss_pipe, O_CLOEXEC) != 0))
    throw std::runtime_error("pipe failed");
  std::vector<std::string> argv = argv_in;
  if (probe) argv.insert(argv.begin(), {rss_probe_path(), std::to_string(rss_pipe[1])});
  const auto t0 = std::chrono::steady_clock::now();
  const pid_t pid = fork();
  if (pid == 0) {
    dup2(out_pipe[1], 1);
    dup2(err_pipe[1], 2);
    close(out_pipe[0]), close(err_pipe[0]), close(out_pipe[1]), close(err_pipe[1]);
    if (probe) close(rss_pipe[0]);
    if (probe) fcntl(rss_pipe[1], F_SETFD, 0);  // the probe writes to it
    for (const auto& [k, v] : opt.env) setenv(k.c_str(), v.c_str(), 1);
    if (!opt.cwd.empty() && chdir(opt.cwd.c_str()) != 0) _exit(126);
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execvp(args[0], args.data());
    std::fprintf(stderr, "exec %s failed: %s\n", args[0], std::strerror(errno));
    _exit(127);
  }
  close(out_pipe[1]), close(err_pipe[1]);
  if (probe) close(rss_pipe[1]);
  RunResult r;
  // Drain stderr on a second descriptor without threads: read stdout to
  // EOF first is unsafe if stderr fills; make both non-blocking and poll.
  fcntl(out_pipe[0], F_SETFL, O_NONBLOCK);
  fcntl(err_pipe[0], F_SETFL, O_NONBLOCK);
  bool out_open = true, err_open = true;
  char buf[65536];
  bool terminated = false;
  while (out_open || err_open) {
    fd_set fds;
    FD_ZERO(&fds);
    if (out_open) FD_SET(out_pipe[0], &fds);
    if (err_open) FD_SET(err_pipe[0], &fds);
    struct timeval tv {
      0, 20000
    };
    if (opt.terminate_after > 0 && !terminated &&
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() >= opt.terminate_after) {
      kill(pid, opt.signal);
      terminated = true;
    }
    if (select(std::max(out_pipe[0], err_pipe[0]) + 1, &fds, nullptr, nullptr,
               opt.terminate_after > 0 && !terminated ? &tv : nullptr) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    for (auto [fd, open, dst] :
         {std::make_tuple(out_pipe[0], &out_open, &r.out), std::make_tuple(err_pipe[0], &err_open, &r.err)}) {
      if (!*open || !FD_ISSET(fd, &fds)) continue;
      const ssize_t n = ::read(fd, buf, sizeof buf);
      if (n > 0)
        dst->append(buf, static_cast<size_t>(n));
      else if (n == 0 || (errno != EAGAIN && errno != EINTR))
        *open = false;
    }
  }
  close(out_pipe[0]), close(err_pipe[0]);
  int status = 0;
  struct rusage ru {};
  wait4(pid, &status, 0, &ru);
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.peak_rss_bytes = static_cast<size_t>(ru.ru_maxrss) * 1024;
  if (probe) {
    std::string figure;
    ssize_t n;
    while ((n = ::read(rss_pipe[0], buf, sizeof buf)) > 0) figure.append(buf, static_cast<size_t>(n));
    close(rss_pipe[0]);
    char* end = nullptr;
    const long kib = std::strtol(figure.c_str(), &end, 10);
    if (figure.empty() || end == figure.c_str() || kib < 0) {
      // No figure: a budget check must fail, not pass on a wrong number.
      r.peak_rss_bytes = std::numeric_limits<size_t>::max();
      r.err += "\n(test support: " + rss_probe_path() + " gave no peak RSS)";
    } else {
      r.peak_rss_bytes = static_cast<size_t>(kib) * 1024;
    }
  }
  return r;
}

// TW_CLI in the environment points the tests at another build of the CLI
// (e.g. a bundle unpacked on the GPU machine, where build paths differ).
std::string file_bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

bool path_exists(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0;
}

std::string cli_path() {
  const char* env = std::getenv("TW_CLI");
  return env && *env ? env : TW_CLI;
}
std::string source_dir() {
  return TW_SOURCE_DIR;
}

RunResult run_cli(const std::vector<std::string>& args, const RunOptions& opt) {
  std::vector<std::string> argv{cli_path()};
  argv.insert(argv.end(), args.begin(), args.end());
  return run(argv, opt);
}

nlohmann::json read_json(const std::string& path) {
  std::ifstream f(path);
  if (!f) throw std::runtime_error("cannot read " + path);
  return nlohmann::json::parse(f);
}

std::string python() {
  return "/usr/bin/python3";
}

bool python_has(const std::string& module) {
  return run({python(), "-c", "import " + module}).exit_code == 0;
}

std::string oracle(const std::string& name) {
  return source_dir() + "/tests/oracles/" + name;
}

RunResult run_python(const std::string& script, const std::vector<std::string>& args) {
  std::vector<std::string> argv{python(), script};
  argv.insert(argv.end(), args.begin(), args.end());
  return run(argv);
}

void save_npy(const std::string& path, const ImageView& img) {
  std::string descr;
  switch (img.fmt.type) {
    case SampleType::kU8:
      descr = "|u1";
      break;
    case SampleType::kU16:
      descr = "<u2";
      break;
    case SampleType::kI32:
      descr = "<i4";
      break;
    case SampleType::kU32:
      descr = "<u4";
      break;
    case SampleType::kF32:
      descr = "<f4";
      break;
  }
  std::ostringstream h;
  h << "{'descr': '" << descr << "', 'fortran_order': False, 'shape': (" << img.rect.h << ", " << img.rect.w;
  if (img.fmt.channels > 1) h << ", " << img.fmt.channels;
  h << "), }";
  std::string header = h.str();
  while ((10 + header.size() + 1) % 64) header += ' ';
  header += '\n';
  std::ofstream f(path, std::ios::binary);
  f.write("\x93NUMPY\x01\x00", 8);
  const uint16_t len = static_cast<uint16_t>(header.size());
  f.write(reinterpret_cast<const char*>(&len), 2);
  f << header;
  for (int64_t y = img.rect.y; y < img.rect.y1(); ++y)
    f.write(reinterpret_cast<const char*>(img.row_bytes(y)), static_cast<std::streamsize>(img.row_length_bytes()));
  if (!f) throw std::runtime_error("cannot write " + path);
}

Image load_npy(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  char magic[8];
  f.read(magic, 8);
  if (!f || std::memcmp(magic, "\x93NUMPY", 6) != 0) throw std::runtime_error("not an npy file: " + path);
  uint32_t len = 0;
  if (magic[6] == 1) {
    uint16_t l16 = 0;
    f.read(reinterpret_cast<char*>(&l16), 2);
    len = l16;
  } else {
    f.read(reinterpret_cast<char*>(&len), 4);
  }
  std::string header(len, ' ');
  f.read(header.data(), len);
  PixelFormat fmt;
  if (header.find("'|u1'") != std::string::npos || header.find("'u1'") != std::string::npos)
    fmt.type = SampleType::kU8;
  else if (header.find("'<u2'") != std::string::npos)
    fmt.type = SampleType::kU16;
  else if (header.find("'<i4'") != std::string::npos)
    fmt.type = SampleType::kI32;
  else if (header.find("'<u4'") != std::string::npos)
    fmt.type = SampleType::kU32;
  else if (header.find("'<f4'") != std::string::npos)
    fmt.type = SampleType::kF32;
  else
    throw std::runtime_error("unsupported npy dtype in " + path + ": " + header);
  if (header.find("'fortran_order': True") != std::string::npos) throw std::runtime_error("fortran-order npy");
  const auto p0 = header.find('('), p1 = header.find(')');
  std::vector<int64_t> shape;
  std::stringstream ss(header.substr(p0 + 1, p1 - p0 - 1));
  std::string tok;
  while (std::getline(ss, tok, ','))
    if (tok.find_first_not_of(' ') != std::string::npos) shape.push_back(std::stoll(tok));
  if (shape.size() < 2 || shape.size() > 3) throw std::runtime_error("npy shape must be 2-D or 3-D");
  fmt.channels = shape.size() == 3 ? static_cast<int>(shape[2]) : 1;
  Image img(fmt, Rect(0, 0, shape[1], shape[0]));
  for (int64_t y = 0; y < shape[0]; ++y)
    f.read(reinterpret_cast<char*>(img.row_bytes(y)), static_cast<std::streamsize>(img.view().row_length_bytes()));
  if (!f) throw std::runtime_error("short npy file " + path);
  return img;
}

std::string diff_images(const ImageView& a, const ImageView& b, int tolerance) {
  if (a.fmt != b.fmt) return "formats differ: " + a.fmt.str() + " vs " + b.fmt.str();
  if (a.rect.w != b.rect.w || a.rect.h != b.rect.h) return "sizes differ: " + a.rect.str() + " vs " + b.rect.str();
  int64_t count = 0, fx = -1, fy = -1;
  int fc = 0;
  int64_t va = 0, vb = 0, worst = 0;
  for (int64_t y = 0; y < a.rect.h; ++y)
    for (int64_t x = 0; x < a.rect.w; ++x)
      for (int c = 0; c < a.fmt.channels; ++c) {
        const int64_t p = sample(a, a.rect.x + x, a.rect.y + y, c), q = sample(b, b.rect.x + x, b.rect.y + y, c);
        const int64_t d = std::llabs(p - q);
        if (d > tolerance) {
          if (count == 0) fx = x, fy = y, fc = c, va = p, vb = q;
          ++count;
        }
        worst = std::max(worst, d);
      }
  if (count == 0) return "";
  std::ostringstream o;
  o << count << " samples differ by more than " << tolerance << " (worst " << worst << "); first at (" << fx << ", "
    << fy << ") channel " << fc << ": " << va << " vs " << vb;
  return o.str();
}

double psnr(const ImageView& a, const ImageView& b) {
  double se = 0;
  int64_t n = 0;
  for (int64_t y = 0; y < a.rect.h; ++y)
    for (int64_t x = 0; x < a.rect.w; ++x)
      for (int c = 0; c < a.fmt.channels; ++c) {
        const double d = double(sample(a, a.rect.x + x, a.rect.y + y, c) - sample(b, b.rect.x + x, b.rect.y + y, c));
        se += d * d, ++n;
      }
  const double peak = a.fmt.type == SampleType::kU16 ? 65535.0 : 255.0;
  return se == 0 ? 99.0 : 10 * std::log10(peak * peak / (se / n));
}

Image random_image(PixelFormat fmt, int64_t w, int64_t h, uint64_t seed) {
  Image img(fmt, Rect(0, 0, w, h));
  std::mt19937_64 rng(seed);
  for (int64_t y = 0; y < h; ++y) {
    uint8_t* p = img.row_bytes(y);
    for (size_t i = 0; i < img.view().row_length_bytes(); ++i) p[i] = static_cast<uint8_t>(rng());
  }
  return img;
}

Image pattern_image(PixelFormat fmt, int64_t w, int64_t h, uint64_t seed) {
  Image img(fmt, Rect(0, 0, w, h));
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(0, 1);
  struct Blob {
    double x, y, r, v[4];
  };
  std::vector<Blob> blobs(12);
  for (auto& b : blobs) {
    b = {u(rng) * w,
         u(rng) * h,
         3 + u(rng) * std::max<double>(4, std::min(w, h) / 6.0),
         {u(rng), u(rng), u(rng), u(rng)}};
  }
  const double maxv = fmt.type == SampleType::kU16 ? 65535.0 : 255.0;
  for (int64_t y = 0; y < h; ++y)
    for (int64_t x = 0; x < w; ++x)
      for (int c = 0; c < fmt.channels; ++c) {
        double v = 0.3 + 0.3 * (double(x) / std::max<int64_t>(1, w) + double(y) / std::max<int64_t>(1, h)) * (c + 1) /
                             fmt.channels;
        for (const auto& b : blobs)
          if ((x - b.x) * (x - b.x) + (y - b.y) * (y - b.y) < b.r * b.r) v = b.v[c % 4];
        v += (u(rng) - 0.5) * 0.04;
        const double s = std::min(maxv, std::max(0.0, v * maxv));
        if (fmt.type == SampleType::kU16)
          img.ptr<uint16_t>(x, y)[c] = static_cast<uint16_t>(s);
        else
          img.ptr<uint8_t>(x, y)[c] = static_cast<uint8_t>(s);
      }
  return img;
}

namespace {

void write_directory(TIFF* t, const ImageView& img, const TiffSpec& s) {
  const int bits = static_cast<int>(sample_bytes(img.fmt.type) * 8);
  const int spp = img.fmt.channels;
  TIFFSetField(t, TIFFTAG_IMAGEWIDTH, static_cast<uint32_t>(img.rect.w));
  TIFFSetField(t, TIFFTAG_IMAGELENGTH, static_cast<uint32_t>(img.rect.h));
  TIFFSetField(t, TIFFTAG_BITSPERSAMPLE, bits);
  TIFFSetField(t, TIFFTAG_SAMPLESPERPIXEL, spp);
  TIFFSetField(t, TIFFTAG_SAMPLEFORMAT,
               img.fmt.type == SampleType::kF32   ? SAMPLEFORMAT_IEEEFP
               : img.fmt.type == SampleType::kI32 ? SAMPLEFORMAT_INT
                                                  : SAMPLEFORMAT_UINT);
  TIFFSetField(t, TIFFTAG_PLANARCONFIG, s.planar_separate ? PLANARCONFIG_SEPARATE : PLANARCONFIG_CONTIG);
  TIFFSetField(t, TIFFTAG_COMPRESSION, s.compression);
  const bool jpeg = s.compression == COMPRESSION_JPEG;
  if (spp >= 3) {
    if (jpeg && s.jpeg_ycbcr && spp == 3) {
      TIFFSetField(t, TIFFTAG_PHOTOMETRIC, PHOTOMETRIC_YCBCR);
      TIFFSetField(t, TIFFTAG_YCBCRSUBSAMPLING, 2, 2);
      TIFFSetField(t, TIFFTAG_JPEGCOLORMODE, JPEGCOLORMODE_RGB);
    } else {
      TIFFSetField(t, TIFFTAG_PHOTOMETRIC, PHOTOMETRIC_RGB);
    }
  } else {
    TIFFSetField(t, TIFFTAG_PHOTOMETRIC, s.min_is_white ? PHOTOMETRIC_MINISWHITE : PHOTOMETRIC_MINISBLACK);
  }
  if (spp == 2 || spp == 4) {
    uint16_t extra = EXTRASAMPLE_UNASSALPHA;
    TIFFSetField(t, TIFFTAG_EXTRASAMPLES, 1, &extra);
  }
  if (jpeg) TIFFSetField(t, TIFFTAG_JPEGQUALITY, s.jpeg_quality);
  if (s.predictor > 1) TIFFSetField(t, TIFFTAG_PREDICTOR, s.predictor);
  if (s.xres > 0) {
    TIFFSetField(t, TIFFTAG_RESOLUTIONUNIT, RESUNIT_CENTIMETER);
    TIFFSetField(t, TIFFTAG_XRESOLUTION, s.xres);
    TIFFSetField(t, TIFFTAG_YRESOLUTION, s.yres > 0 ? s.yres : s.xres);
  }
  if (!s.description.empty()) TIFFSetField(t, TIFFTAG_IMAGEDESCRIPTION, s.description.c_str());
  const size_t bpp = img.fmt.bytes_per_pixel(), sb = sample_bytes(img.fmt.type);
  const int planes = s.planar_separate ? spp : 1;
  const size_t pix = s.planar_separate ? sb : bpp;
  auto fetch = [&](int64_t x, int64_t y, int plane, uint8_t* out) {
    // Pixels past the image (tile padding) repeat the edge.
    x = std::min(std::max<int64_t>(x, 0), img.rect.w - 1);
    y = std::min(std::max<int64_t>(y, 0), img.rect.h - 1);
    const uint8_t* p = img.ptr_bytes(img.rect.x + x, img.rect.y + y);
    uint8_t tmp[64 * 4];  // up to 64 channels of 4 bytes
    TW_ASSERT(bpp <= sizeof tmp);
    std::memcpy(tmp, p, bpp);
    if (s.min_is_white) {
      if (sb == 1)
        tmp[0] = static_cast<uint8_t>(255 - tmp[0]);
      else {
        uint16_t v;
        std::memcpy(&v, tmp, 2);
        v = static_cast<uint16_t>(65535 - v);
        std::memcpy(tmp, &v, 2);
      }
    }
    if (s.planar_separate)
      std::memcpy(out, tmp + plane * sb, sb);
    else
      std::memcpy(out, tmp, bpp);
  };
  if (s.tiled) {
    TIFFSetField(t, TIFFTAG_TILEWIDTH, s.tile_w);
    TIFFSetField(t, TIFFTAG_TILELENGTH, s.tile_h);
    std::vector<uint8_t> buf(static_cast<size_t>(s.tile_w) * s.tile_h * pix);
    const int64_t nx = (img.rect.w + s.tile_w - 1) / s.tile_w, ny = (img.rect.h + s.tile_h - 1) / s.tile_h;
    for (int p = 0; p < planes; ++p)
      for (int64_t ty = 0; ty < ny; ++ty)
        for (int64_t tx = 0; tx < nx; ++tx) {
          for (int y = 0; y < s.tile_h; ++y)
            for (int x = 0; x < s.tile_w; ++x)
              fetch(tx * s.tile_w + x, ty * s.tile_h + y, p,
                    buf.data() + (static_cast<size_t>(y) * s.tile_w + x) * pix);
          const uint32_t index = TIFFComputeTile(t, static_cast<uint32_t>(tx * s.tile_w),
                                                 static_cast<uint32_t>(ty * s.tile_h), 0, static_cast<uint16_t>(p));
          if (TIFFWriteEncodedTile(t, index, buf.data(), static_cast<tmsize_t>(buf.size())) < 0)
            throw std::runtime_error("TIFFWriteEncodedTile failed");
        }
  } else {
    TIFFSetField(t, TIFFTAG_ROWSPERSTRIP, s.rows_per_strip);
    const int64_t nstrips = (img.rect.h + s.rows_per_strip - 1) / s.rows_per_strip;
    for (int p = 0; p < planes; ++p)
      for (int64_t si = 0; si < nstrips; ++si) {
        const int64_t rows = std::min<int64_t>(s.rows_per_strip, img.rect.h - si * s.rows_per_strip);
        std::vector<uint8_t> buf(static_cast<size_t>(img.rect.w * rows) * pix);
        for (int64_t y = 0; y < rows; ++y)
          for (int64_t x = 0; x < img.rect.w; ++x)
            fetch(x, si * s.rows_per_strip + y, p, buf.data() + static_cast<size_t>(y * img.rect.w + x) * pix);
        const uint32_t index = static_cast<uint32_t>(si + p * nstrips);
        if (TIFFWriteEncodedStrip(t, index, buf.data(), static_cast<tmsize_t>(buf.size())) < 0)
          throw std::runtime_error("TIFFWriteEncodedStrip failed");
      }
  }
  if (!TIFFWriteDirectory(t)) throw std::runtime_error("TIFFWriteDirectory failed");
}

}  // namespace

void write_tiff(const std::string& path, const ImageView& img, const TiffSpec& spec) {
  TIFF* t = TIFFOpen(path.c_str(), spec.bigtiff ? "w8" : "w");
  if (!t) throw std::runtime_error("cannot create " + path);
  write_directory(t, img, spec);
  TIFFClose(t);
}

void append_tiff_directory(const std::string& path, const ImageView& img, const TiffSpec& spec, uint32_t subfile_type) {
  TIFF* t = TIFFOpen(path.c_str(), "a");
  if (!t) throw std::runtime_error("cannot append to " + path);
  TIFFSetField(t, TIFFTAG_SUBFILETYPE, subfile_type);
  write_directory(t, img, spec);
  TIFFClose(t);
}

Image read_tiff_libtiff(const std::string& path, int dir) {
  TIFF* t = TIFFOpen(path.c_str(), "r");
  if (!t) throw std::runtime_error("libtiff cannot open " + path);
  std::unique_ptr<TIFF, void (*)(TIFF*)> guard(t, TIFFClose);
  if (!TIFFSetDirectory(t, static_cast<tdir_t>(dir))) throw std::runtime_error("no directory " + std::to_string(dir));
  uint32_t w = 0, h = 0;
  uint16_t bits = 8, spp = 1, comp = 1, photo = 1, sformat = SAMPLEFORMAT_UINT;
  TIFFGetField(t, TIFFTAG_IMAGEWIDTH, &w);
  TIFFGetField(t, TIFFTAG_IMAGELENGTH, &h);
  TIFFGetFieldDefaulted(t, TIFFTAG_BITSPERSAMPLE, &bits);
  TIFFGetFieldDefaulted(t, TIFFTAG_SAMPLESPERPIXEL, &spp);
  TIFFGetFieldDefaulted(t, TIFFTAG_COMPRESSION, &comp);
  TIFFGetFieldDefaulted(t, TIFFTAG_PHOTOMETRIC, &photo);
  if (comp == COMPRESSION_JPEG && photo == PHOTOMETRIC_YCBCR) TIFFSetField(t, TIFFTAG_JPEGCOLORMODE, JPEGCOLORMODE_RGB);
  TIFFGetFieldDefaulted(t, TIFFTAG_SAMPLEFORMAT, &sformat);
  const SampleType st = bits == 32   ? (sformat == SAMPLEFORMAT_IEEEFP ? SampleType::kF32 : SampleType::kU32)
                        : bits == 16 ? SampleType::kU16
                                     : SampleType::kU8;
  const PixelFormat fmt{st, spp};
  Image img(fmt, Rect(0, 0, w, h));
  const size_t bpp = fmt.bytes_per_pixel();
  if (TIFFIsTiled(t)) {
    uint32_t tw = 0, th = 0;
    TIFFGetField(t, TIFFTAG_TILEWIDTH, &tw);
    TIFFGetField(t, TIFFTAG_TILELENGTH, &th);
    std::vector<uint8_t> buf(static_cast<size_t>(TIFFTileSize(t)));
    for (uint32_t ty = 0; ty < h; ty += th)
      for (uint32_t tx = 0; tx < w; tx += tw) {
        if (TIFFReadTile(t, buf.data(), tx, ty, 0, 0) < 0) throw std::runtime_error("TIFFReadTile failed");
        for (uint32_t y = 0; y < th && ty + y < h; ++y)
          std::memcpy(img.ptr_bytes(tx, ty + y), buf.data() + static_cast<size_t>(y) * tw * bpp,
                      std::min<size_t>(tw, w - tx) * bpp);
      }
  } else {
    std::vector<uint8_t> row(static_cast<size_t>(TIFFScanlineSize(t)));
    for (uint32_t y = 0; y < h; ++y) {
      if (TIFFReadScanline(t, row.data(), y, 0) < 0) throw std::runtime_error("TIFFReadScanline failed");
      std::memcpy(img.row_bytes(y), row.data(), static_cast<size_t>(w) * bpp);
    }
  }
  return img;
}

TiffDirTags read_tiff_tags(const std::string& path, int dir) {
  TIFF* t = TIFFOpen(path.c_str(), "r");
  if (!t) throw std::runtime_error("libtiff cannot open " + path);
  std::unique_ptr<TIFF, void (*)(TIFF*)> guard(t, TIFFClose);
  if (!TIFFSetDirectory(t, static_cast<tdir_t>(dir))) throw std::runtime_error("no directory " + std::to_string(dir));
  TiffDirTags d;
  TIFFGetField(t, TIFFTAG_IMAGEWIDTH, &d.width);
  TIFFGetField(t, TIFFTAG_IMAGELENGTH, &d.height);
  TIFFGetField(t, TIFFTAG_TILEWIDTH, &d.tile_w);
  TIFFGetField(t, TIFFTAG_TILELENGTH, &d.tile_h);
  TIFFGetFieldDefaulted(t, TIFFTAG_SUBFILETYPE, &d.subfile_type);
  TIFFGetFieldDefaulted(t, TIFFTAG_COMPRESSION, &d.compression);
  TIFFGetField(t, TIFFTAG_PHOTOMETRIC, &d.photometric);
  if (d.compression != COMPRESSION_NONE && d.compression != COMPRESSION_JPEG)
    TIFFGetFieldDefaulted(t, TIFFTAG_PREDICTOR, &d.predictor);
  TIFFGetFieldDefaulted(t, TIFFTAG_SAMPLESPERPIXEL, &d.spp);
  TIFFGetFieldDefaulted(t, TIFFTAG_BITSPERSAMPLE, &d.bits);
  if (d.photometric == PHOTOMETRIC_YCBCR) TIFFGetFieldDefaulted(t, TIFFTAG_YCBCRSUBSAMPLING, &d.sub_h, &d.sub_v);
  TIFFGetField(t, TIFFTAG_RESOLUTIONUNIT, &d.res_unit);
  TIFFGetField(t, TIFFTAG_XRESOLUTION, &d.xres);
  TIFFGetField(t, TIFFTAG_YRESOLUTION, &d.yres);
  uint32_t n = 0;
  void* p = nullptr;
  d.has_jpeg_tables = TIFFGetField(t, TIFFTAG_JPEGTABLES, &n, &p) && n > 0;
  char* desc = nullptr;
  if (TIFFGetField(t, TIFFTAG_IMAGEDESCRIPTION, &desc) && desc) d.description = desc;
  return d;
}

int count_tiff_directories(const std::string& path) {
  TIFF* t = TIFFOpen(path.c_str(), "r");
  if (!t) return -1;
  const int n = TIFFNumberOfDirectories(t);
  TIFFClose(t);
  return n;
}

void damage_tiff_tile(const std::string& path, int index) {
  TIFF* t = TIFFOpen(path.c_str(), "r");
  if (!t) throw std::runtime_error("damage_tiff_tile: cannot open " + path);
  uint64_t* offs = nullptr;
  uint64_t* cnts = nullptr;
  TIFFGetField(t, TIFFTAG_TILEOFFSETS, &offs);
  TIFFGetField(t, TIFFTAG_TILEBYTECOUNTS, &cnts);
  const uint64_t off = offs[index], n = cnts[index];
  TIFFClose(t);
  std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
  f.seekp(static_cast<std::streamoff>(off + n / 2));
  const std::string junk = "\xff\xd9\xff\xd9";
  f.write(junk.data(), static_cast<std::streamsize>(junk.size()));
}

}  // namespace tw::test
