#include "io/open_source.hpp"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>

#include "engine/error.hpp"
#include "io/openslide/openslide_source.hpp"
#include "io/synthetic/synthetic_source.hpp"
#include "io/tiff/tiff_source.hpp"

namespace tw {

ReaderChoice parse_reader(const std::string& s) {
  if (s == "auto") return ReaderChoice::kAuto;
  if (s == "tiff" || s == "libtiff") return ReaderChoice::kTiff;
  if (s == "openslide") return ReaderChoice::kOpenSlide;
  throw InputError("unknown reader '" + s + "' (expected auto, tiff or openslide)");
}

SourcePtr open_source(const std::string& spec, ReaderChoice reader) {
  const std::string synth = "synthetic";
  if (spec == synth || spec.rfind(synth + ":", 0) == 0)
    return std::make_shared<SyntheticSource>(
        parse_synthetic_spec(spec.size() > synth.size() ? spec.substr(synth.size() + 1) : ""));
  struct stat st {};
  if (::stat(spec.c_str(), &st) != 0) throw InputError("cannot open " + spec + ": " + std::strerror(errno));
  if (S_ISDIR(st.st_mode)) throw InputError(spec + " is a folder, not a slide");
  // A FIFO would block the first open() for ever; a device is no slide.
  if (!S_ISREG(st.st_mode)) throw InputError(spec + " is not a regular file (a device, FIFO or socket)");
  if (reader == ReaderChoice::kTiff) return std::make_shared<TiffSource>(spec);
  if (reader == ReaderChoice::kOpenSlide) return std::make_shared<OpenSlideSource>(spec);

  const bool tiff = TiffSource::looks_like_tiff(spec);
  const std::string vendor = OpenSlideSource::detect_vendor(spec);
  // libtiff serves plain TIFFs and Aperio SVS (their JPEG tiles can then be
  // copied into the pyramid unchanged); other vendors' TIFF variants carry
  // layouts only OpenSlide understands (overlapping tiles, several images).
  // A plain TIFF our reader refuses is refused: OpenSlide would read it as
  // 8-bit RGB whatever its samples are.
  if (tiff && (vendor.empty() || vendor == "generic-tiff")) return std::make_shared<TiffSource>(spec);
  if (tiff && vendor == "aperio") {
    try {
      return std::make_shared<TiffSource>(spec);
    } catch (const UnsupportedFormat&) {
      // e.g. Aperio's JPEG 2000 tiles: OpenSlide decodes what libtiff cannot
      // (its guard refuses samples it would convert).
    }
  }
  if (!vendor.empty()) return std::make_shared<OpenSlideSource>(spec);
  throw InputError(spec + " is not a TIFF file or a slide format OpenSlide recognises");
}

}  // namespace tw
