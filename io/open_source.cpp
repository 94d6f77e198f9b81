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
    return std::make_shared<SyntheticSource>(parse_synthetic_spec(spec.size() > synth.size() ? spec.substr(synth.size() + 1) : ""));
  struct stat st {};
  if (::stat(spec.c_str(), &st) != 0) throw InputError("cannot open " + spec + ": " + std::strerror(errno));
  if (S_ISDIR(st.st_mode)) throw InputError(spec + " is a folder, not a slide");
  if (reader == ReaderChoice::kTiff) return std::make_shared<TiffSource>(spec);
  if (reader == ReaderChoice::kOpenSlide) return std::make_shared<OpenSlideSource>(spec);

  const std::string vendor = OpenSlideSource::detect_vendor(spec);
  const bool tiff = TiffSource::looks_like_tiff(spec);
  // libtiff serves plain TIFFs and Aperio SVS (their JPEG tiles can then be
  // copied into the pyramid unchanged); other vendors' TIFF variants carry
  // layouts only OpenSlide understands (overlapping tiles, several images).
  if (tiff && (vendor.empty() || vendor == "generic-tiff" || vendor == "aperio")) {
    try {
      return std::make_shared<TiffSource>(spec);
    } catch (const UnsupportedFormat&) {
      if (vendor.empty()) throw;
      // e.g. Aperio's JPEG 2000 tiles: OpenSlide decodes what libtiff cannot.
    }
  }
  if (!vendor.empty()) return std::make_shared<OpenSlideSource>(spec);
  if (tiff) return std::make_shared<TiffSource>(spec);
  throw InputError(spec + " is not a TIFF file or a slide format OpenSlide recognises");
}

}  // namespace tw
