#pragma once
// A slide's vendor metadata as readers hand it on (SourceInfo's
// objective_power, vendor_description, vendor_properties) and as writers
// carry it: bounded and made valid UTF-8 where it is read, so that a hostile
// file cannot make megabytes of OME-XML or JSON (nlohmann::json refuses
// invalid UTF-8 outright), and Aperio's ImageDescription rewritten for a
// pyramid of the same pixels, in the form OpenSlide reads back as Aperio
// (openslide-vendor-aperio.c: `|`-separated `key = value` after a header).
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace tw {

struct SourceInfo;

// Bounds on what a source may carry: enough for every real scanner's
// properties (an SVS has about 20, an NDPI about 40), small next to a
// pyramid.
constexpr size_t kMaxVendorProperties = 256;
constexpr size_t kMaxVendorKeyBytes = 128;
constexpr size_t kMaxVendorValueBytes = 2048;
constexpr size_t kMaxVendorDescriptionBytes = 64 * 1024;

// `in` cut to at most `max_bytes` (never inside a character), valid UTF-8
// (every invalid byte becomes '?'), and without control characters (each
// becomes a space, except tab and, where `keep_newlines`, CR and LF).
std::string clean_metadata_text(const std::string& in, size_t max_bytes, bool keep_newlines = false);

// The pixel sizes Tilewave takes from a file: 0.1 nm (electron microscopy)
// to 1 m. Outside (a resolution of 4294967295 per cm, its inverse, `MPP =
// nan`) the header is broken, and a writer would make 0/1 resolution tags of
// it that every reader takes for "unknown" or divides by.
constexpr double kMinMpp = 1e-4;
constexpr double kMaxMpp = 1e6;
inline bool plausible_mpp(double mpp) {
  return mpp >= kMinMpp && mpp <= kMaxMpp;
}  // false for NaN

// Sets info.mpp_x/y from what `what` ("XResolution/YResolution", "the
// Aperio MPP", ...) of info.path gives: both when both are plausible; else
// leaves them 0 (unknown), with a warning when something was given (0 or
// negative stands for nothing given). Returns whether they were set.
bool set_pixel_size(SourceInfo& info, double mpp_x, double mpp_y, const std::string& what);

// For an error that needs the pixel size of `path` and has none: "PATH has
// no pixel size (mpp)", or, where set_pixel_size warned that PATH's header gives an
// implausible one, that warning (a failed command prints only its error, so
// the reason would be lost). Other warnings stay pending.
std::string no_pixel_size(const std::string& path);

// Appends key = value to info.vendor_properties, cleaned and cut to the
// bounds above; false (nothing added) once kMaxVendorProperties are held or
// when the key is empty.
bool add_vendor_property(SourceInfo& info, const std::string& key, const std::string& value);

// True when a level-0 ImageDescription is Aperio's (OpenSlide's test).
bool is_aperio_description(const std::string& description);

// Fills info's objective_power (AppMag), vendor_description and the
// `aperio.KEY` vendor properties (OpenSlide's names) from an Aperio
// description; a no-op for other descriptions.
void read_aperio_description(SourceInfo& info, const std::string& description);

// Level 0's ImageDescription for a pyramid of `width` x `height` pixels in
// tiles of tile_w x tile_h of a source with an Aperio description: the
// source's first line (OpenSlide tests its "Aperio" prefix), our own image
// size and tiles where the source's header gave its own (those would be
// false), then the source's `key = value` fields (OpenSlide takes MPP and
// AppMag from them). Empty when the source has no Aperio description.
std::string aperio_pyramid_description(const SourceInfo& info, int64_t width, int64_t height, int64_t tile_w,
                                       int64_t tile_h);

// An associated image's ImageDescription in an Aperio file: OpenSlide names
// it by the first word of the second line ("label", "macro"), lines split
// at LF, as Aperio writes them.
std::string aperio_associated_description(const std::string& name, int64_t width, int64_t height);

}  // namespace tw
