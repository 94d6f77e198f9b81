#include "io/zarr/zarr_sink.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <tbb/enumerable_thread_specific.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <fstream>

#include "engine/error.hpp"
#include "engine/json.hpp"
#include "engine/output_folder.hpp"
#include "io/zarr/zarr_chunk.hpp"
#include "io/zarr/zarr_metadata.hpp"

namespace tw {
namespace {

std::string base_name(std::string p) {
  while (p.size() > 1 && p.back() == '/') p.pop_back();
  const auto slash = p.find_last_of('/');
  if (slash != std::string::npos) p = p.substr(slash + 1);
  if (p.size() > 5 && p.compare(p.size() - 5, 5, ".zarr") == 0) p.resize(p.size() - 5);
  return p;
}

void make_dir(const std::string& path) {
  if (::mkdir(path.c_str(), 0755) != 0 && errno != EEXIST)
    throw InputError("cannot create folder " + path + ": " + std::strerror(errno));
}

void write_file(const std::string& path, const uint8_t* p, size_t n) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
  if (fd < 0) throw InputError("cannot create " + path + ": " + std::strerror(errno));
  while (n > 0) {
    const ssize_t w = ::write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      const int err = errno;
      ::close(fd);
      throw InputError("cannot write " + path + ": " + std::strerror(w < 0 ? err : ENOSPC));
    }
    p += w, n -= static_cast<size_t>(w);
  }
  if (::close(fd) != 0) throw InputError("cannot write " + path + ": " + std::strerror(errno));
}

void write_json(const std::string& path, const nlohmann::json& j) {
  const std::string text = dump_json(j, 2) + "\n";
  write_file(path, reinterpret_cast<const uint8_t*>(text.data()), text.size());
}

ZarrImageSpec image_spec(const SinkRequest& r) {
  if (r.encode.tile_w != r.encode.tile_h) throw InternalError("Zarr chunks are square pass tiles");
  ZarrImageSpec s;
  s.name = base_name(r.path);
  s.fmt = r.encode.fmt;
  s.chunk = r.encode.tile_w;
  for (const PyramidLevelSpec& l : r.levels) s.levels.emplace_back(l.width, l.height);
  s.compression.codec = r.encode.codec;
  s.compression.level = r.encode.level;
  // numcodecs' Delta over the flattened C-first chunk is TIFF's horizontal
  // predictor (plus a wrap at each row's end): exact for integers only.
  s.compression.delta = r.encode.predictor && r.encode.codec != Codec::kNone && r.encode.fmt.type != SampleType::kF32;
  s.compression.validate(s.fmt);
  s.mpp_x = r.options.mpp_x;
  s.mpp_y = r.options.mpp_y;
  s.objective_power = r.options.objective_power;
  s.vendor_properties = r.options.vendor_properties;
  s.channel_names = r.channel_names;
  if (!s.channel_names.empty() && s.channel_names.size() != static_cast<size_t>(s.fmt.channels))
    s.channel_names.clear();  // names that do not match the pixels are not used
  return s;
}

}  // namespace

bool is_zarr_store(const std::string& path) {
  const auto is_file = [](const std::string& p) {
    struct stat st {};
    return ::lstat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode);
  };
  const auto is_dir = [](const std::string& p) {
    struct stat st {};
    return ::lstat(p.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
  };
  if (!is_file(path + "/.zgroup") || !is_file(path + "/.zattrs")) return false;
  // An image's multiscales, not some other group's attributes; only the
  // head is read (ours puts it first; a hostile .zattrs may be huge).
  {
    std::ifstream in(path + "/.zattrs");
    std::string head(256 * 1024, '\0');
    in.read(&head[0], static_cast<std::streamsize>(head.size()));
    head.resize(static_cast<size_t>(in.gcount()));
    if (head.find("\"multiscales\"") == std::string::npos) return false;
  }
  DIR* d = ::opendir(path.c_str());
  if (!d) return false;
  bool ok = true;
  while (const dirent* e = ::readdir(d)) {
    const std::string n = e->d_name;
    if (n == "." || n == "..") continue;
    if (n == ".zgroup" || n == ".zattrs" || n == ".zmetadata") {
      ok = ok && is_file(path + "/" + n);
      continue;
    }
    ok = ok && n.find_first_not_of("0123456789") == std::string::npos && is_dir(path + "/" + n) &&
         is_file(path + "/" + n + "/.zarray");
  }
  ::closedir(d);
  return ok;
}

const FolderKind& zarr_store_kind() {
  static const FolderKind kind{
      "an OME-Zarr store of one image (.zgroup, .zattrs with multiscales and level arrays 0, 1, ... only)",
      is_zarr_store};
  return kind;
}

struct ZarrSink::Impl {
  ZarrImageSpec spec;
  OutputFolder folder;
  // Per worker thread: its encoder and the buffer its chunks are compressed into.
  struct Worker {
    std::unique_ptr<ZarrChunkEncoder> encoder;
    std::vector<uint8_t> bytes;
  };
  tbb::enumerable_thread_specific<Worker> workers;
  std::atomic<uint64_t> bytes{0};

  explicit Impl(const SinkRequest& r) : spec(image_spec(r)), folder(r.path, zarr_store_kind()) {
    // Every chunk's folder now, so encode() only creates files.
    for (size_t l = 0; l < spec.levels.size(); ++l) {
      const std::string level = folder.temp_path() + "/" + std::to_string(l);
      make_dir(level);
      make_dir(level + "/0");
      const int64_t rows = (spec.levels[l].second + spec.chunk - 1) / spec.chunk;
      for (int64_t ty = 0; ty < rows; ++ty) make_dir(level + "/0/" + std::to_string(ty));
    }
  }
  Worker& worker() {
    Worker& w = workers.local();
    if (!w.encoder) w.encoder = std::make_unique<ZarrChunkEncoder>(spec.fmt, spec.chunk, spec.compression);
    return w;
  }
};

ZarrSink::ZarrSink(const SinkRequest& r) : impl_(std::make_unique<Impl>(r)) {}

ZarrSink::~ZarrSink() = default;

void ZarrSink::encode(int level, const ImageView& tile, std::vector<uint8_t>& out) {
  const ZarrImageSpec& s = impl_->spec;
  const auto [w, h] = s.levels.at(static_cast<size_t>(level));
  TW_ASSERT(tile.rect.x % s.chunk == 0 && tile.rect.y % s.chunk == 0);
  Impl::Worker& worker = impl_->worker();
  worker.encoder->encode(tile, w, h, worker.bytes);
  // Each chunk is a file of its own, so it is written here, on the worker
  // threads: creating a file costs the file system far more than appending
  // to one (docs/outputs/zarr.md), too much for the pass's one serial
  // stage. The chunk key of (c, y, x) = (0, ty, tx) with the "/" separator.
  const std::string path = impl_->folder.temp_path() + "/" + std::to_string(level) + "/0/" +
                           std::to_string(tile.rect.y / s.chunk) + "/" + std::to_string(tile.rect.x / s.chunk);
  write_file(path, worker.bytes.data(), worker.bytes.size());
  impl_->bytes += worker.bytes.size();
  out.clear();  // nothing left for write(), nothing held between the stages
}

void ZarrSink::write(int, int64_t, int64_t, const std::vector<uint8_t>&) {}

double ZarrSink::compression_ratio_estimate() const {
  return 0.0;  // the pass holds no compressed bytes for this sink: encode() has written them
}

void ZarrSink::finish() {
  const ZarrImageSpec& s = impl_->spec;
  const std::string root = impl_->folder.temp_path();
  write_json(root + "/.zgroup", {{"zarr_format", 2}});
  write_json(root + "/.zattrs", ome_zarr_attrs(s));
  for (size_t l = 0; l < s.levels.size(); ++l)
    write_json(root + "/" + std::to_string(l) + "/.zarray", zarr_array_json(s, l));
  impl_->folder.commit();
}

uint64_t ZarrSink::bytes_written() const {
  return impl_->bytes;
}

}  // namespace tw
