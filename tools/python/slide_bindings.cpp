// tilewave.open(path) -> Slide: any input the CLI reads, with
// openslide-python's attributes and read_region convention (level-0
// coordinates, the size at the level), returning numpy arrays of the
// slide's own pixel type instead of PIL RGBA images.
#include <pybind11/numpy.h>
#include <pybind11/stl.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <mutex>

#include "engine/memory.hpp"
#include "tools/python/arrays.hpp"
#include "tools/python/bindings.hpp"
#include "tools/python/errors.hpp"
#include "tools/python/gil.hpp"

namespace py = pybind11;

namespace tw::python {
namespace {

class Slide {
 public:
  explicit Slide(SourcePtr src) : src_(std::move(src)), path_(src_->info().path) {}

  // The source for one call; reads keep their own reference, so close()
  // during a read in another thread is safe.
  SourcePtr source() const {
    std::lock_guard<std::mutex> l(mu_);
    if (!src_) throw py::value_error("the slide " + path_ + " is closed");
    return src_;
  }
  void close() {
    std::lock_guard<std::mutex> l(mu_);
    src_.reset();
  }
  bool closed() const {
    std::lock_guard<std::mutex> l(mu_);
    return !src_;
  }
  const std::string& path() const { return path_; }

 private:
  mutable std::mutex mu_;
  SourcePtr src_;
  std::string path_;
};

// A level's downsample as openslide-python reports it: OpenSlide's own for
// the slides it reads, else its rule for the others (the mean of the two
// sides' ratios), so that level_downsamples, get_best_level_for_downsample
// and read_region's positions agree with openslide-python on the same file.
double downsample(const TileSource& s, int level) {
  if (s.info().format == "OpenSlide" || level == 0) return s.level(level).downsample;
  const LevelInfo &l0 = s.level(0), &l = s.level(level);
  return (static_cast<double>(l0.height) / static_cast<double>(l.height) +
          static_cast<double>(l0.width) / static_cast<double>(l.width)) /
         2.0;
}

int checked_level(const TileSource& s, int level) {
  if (level < 0 || level >= s.level_count())
    throw py::value_error("level " + std::to_string(level) + " is out of range: " + s.info().path + " has " +
                          std::to_string(s.level_count()) + " level(s)");
  return level;
}

// A region of a level with openslide's convention: (x, y) in level-0
// pixels, (w, h) at the level. The level's own pixels only (x / downsample
// rounded down; openslide resamples a position between pixels), zeros where
// the region lies outside the level, as openslide's transparent pixels.
py::array read_region(const Slide& slide, std::pair<int64_t, int64_t> loc, int level,
                      std::pair<int64_t, int64_t> size) {
  const SourcePtr src = slide.source();
  checked_level(*src, level);
  const auto [w, h] = size;
  constexpr int64_t kMaxSide = int64_t{1} << 31;
  if (w < 0 || h < 0 || w > kMaxSide || h > kMaxSide)
    throw py::value_error("read_region: size (" + std::to_string(w) + ", " + std::to_string(h) +
                          ") must be two numbers 0.." + std::to_string(kMaxSide));
  const LevelInfo& li = src->level(level);
  const double ds = downsample(*src, level);
  const double lx = std::floor(static_cast<double>(loc.first) / ds);
  const double ly = std::floor(static_cast<double>(loc.second) / ds);
  if (std::fabs(lx) > 1e15 || std::fabs(ly) > 1e15) throw py::value_error("read_region: location out of range");
  const PixelFormat fmt = src->info().fmt;
  // Linux lends memory it does not have and kills the process when the
  // region is filled: a region larger than the machine's memory is a
  // MemoryError before anything is allocated.
  const double bytes = static_cast<double>(w) * static_cast<double>(h) * static_cast<double>(fmt.bytes_per_pixel());
  const double physical = static_cast<double>(::sysconf(_SC_PHYS_PAGES)) * static_cast<double>(::sysconf(_SC_PAGESIZE));
  if (physical > 0 && bytes > physical) {
    PyErr_SetString(PyExc_MemoryError,
                    ("read_region: " + std::to_string(w) + " x " + std::to_string(h) + " pixels take " +
                     format_bytes(static_cast<size_t>(bytes)) + ", more than this machine's memory (" +
                     format_bytes(static_cast<size_t>(physical)) + ")")
                        .c_str());
    throw py::error_already_set();
  }
  py::array out = new_image_array(fmt, w, h, false);
  const Rect want(static_cast<int64_t>(lx), static_cast<int64_t>(ly), w, h);
  const Rect inside = want.intersect(li.bounds());
  if (w == 0 || h == 0) return out;
  ImageView v = view_of(out, fmt);
  v.rect = want;
  {
    ReleaseGil nogil;
    if (inside.empty() || inside != want) std::memset(v.data, 0, v.stride * static_cast<size_t>(h));
    if (!inside.empty()) src->read(level, v.sub(inside));
  }
  return out;
}

// openslide's rule: the last level whose downsample is at most `ds`.
int best_level(const TileSource& s, double ds) {
  if (s.level_count() == 0 || ds < downsample(s, 0)) return 0;
  for (int l = 1; l < s.level_count(); ++l)
    if (ds < downsample(s, l)) return l - 1;
  return s.level_count() - 1;
}

py::array read_associated(const Slide& slide, const std::string& name) {
  const SourcePtr src = slide.source();
  bool known = false;
  for (const auto& a : src->info().associated) known = known || a.name == name;
  if (!known) throw py::key_error(name);
  Image img;
  {
    ReleaseGil nogil;
    img = src->read_associated(name);
  }
  py::array out = new_image_array(img.fmt(), img.rect().w, img.rect().h, false);
  ImageView v = view_of(out, img.fmt());
  v.rect = img.rect();
  copy_overlap(img.view(), v);
  return out;
}

}  // namespace

void bind_slide(py::module_& m) {
  py::class_<Slide, std::shared_ptr<Slide>>(m, "Slide", "A slide or image opened by tilewave.open()")
      .def_property_readonly("path", &Slide::path)
      .def_property_readonly("closed", &Slide::closed)
      .def_property_readonly("dimensions",
                             [](const Slide& s) {
                               const auto src = s.source();
                               return std::make_pair(src->level(0).width, src->level(0).height);
                             })
      .def_property_readonly("level_count", [](const Slide& s) { return s.source()->level_count(); })
      .def_property_readonly("level_dimensions",
                             [](const Slide& s) {
                               const auto src = s.source();
                               py::list out;
                               for (int l = 0; l < src->level_count(); ++l)
                                 out.append(py::make_tuple(src->level(l).width, src->level(l).height));
                               return py::tuple(out);
                             })
      .def_property_readonly("level_downsamples",
                             [](const Slide& s) {
                               const auto src = s.source();
                               py::list out;
                               for (int l = 0; l < src->level_count(); ++l) out.append(downsample(*src, l));
                               return py::tuple(out);
                             })
      .def_property_readonly("mpp",
                             [](const Slide& s) -> py::object {
                               const SourceInfo& i = s.source()->info();
                               if (!(i.mpp_x > 0)) return py::none();
                               return py::make_tuple(i.mpp_x, i.mpp_y > 0 ? i.mpp_y : i.mpp_x);
                             })
      .def_property_readonly("dtype", [](const Slide& s) { return dtype_of(s.source()->info().fmt.type); })
      .def_property_readonly("channels", [](const Slide& s) { return s.source()->info().fmt.channels; })
      .def_property_readonly("properties",
                             [](const Slide& s) {
                               const SourceInfo& i = s.source()->info();
                               py::dict d;
                               for (const auto& [k, v] : i.properties) d[py::str(k)] = v;
                               d["tilewave.format"] = i.format;
                               d["tilewave.vendor"] = i.vendor;
                               d["tilewave.pixel-format"] = i.fmt.str();
                               return d;
                             })
      .def_property_readonly("_associated_names",
                             [](const Slide& s) {
                               py::list out;
                               for (const auto& a : s.source()->info().associated) out.append(a.name);
                               return py::tuple(out);
                             })
      .def("_read_associated", &read_associated, py::arg("name"))
      .def("read_region", &read_region, py::arg("location"), py::arg("level"), py::arg("size"),
           "Pixels of a rectangle as a numpy array H x W x C of the slide's own dtype.\n\n"
           "location: (x, y) of the top-left corner in level-0 pixels; level: the level;\n"
           "size: (w, h) at that level. Pixels outside the slide are 0. The GIL is released\n"
           "while the pixels are read, so threads read in parallel.")
      .def(
          "get_best_level_for_downsample", [](const Slide& s, double ds) { return best_level(*s.source(), ds); },
          py::arg("downsample"),
          "The level to read for this downsample (openslide's rule: the last level whose\n"
          "downsample is at most it).")
      .def("close", &Slide::close, "Lets go of the file; later calls raise ValueError.")
      .def("__enter__", [](std::shared_ptr<Slide> s) { return s; })
      .def("__exit__", [](Slide& s, py::args) { s.close(); })
      .def("__repr__",
           [](const Slide& s) { return "tilewave.Slide(" + py::repr(py::str(s.path())).cast<std::string>() + ")"; });

  m.def(
      "open",
      [](const std::string& path) {
        SourcePtr src;
        {
          ReleaseGil nogil;
          src = open_for_python(path);
        }
        return std::make_shared<Slide>(std::move(src));
      },
      py::arg("path"),
      "Opens a slide: a TIFF/BigTIFF, anything OpenSlide reads, or synthetic:WxH[,...].\n"
      "FileNotFoundError for a missing file, OSError for one that cannot be read.");
}

}  // namespace tw::python
