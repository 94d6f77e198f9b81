#include "io/vendor_metadata.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "engine/tile_source.hpp"
#include "engine/warnings.hpp"

namespace tw {
namespace {

// All the properties together: 256 of the largest would be half a megabyte
// of OME-XML.
constexpr size_t kMaxVendorPropertyBytes = 64 * 1024;
constexpr size_t kMaxHeaderLineBytes = 256;
constexpr const char* kAperioPrefix = "aperio.";

std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(" \t\r\n") - b + 1);
}

// Length of the valid UTF-8 character at s[i] (n bytes in all), 0 if none.
size_t utf8_length(const unsigned char* s, size_t i, size_t n) {
  const unsigned char c = s[i];
  const size_t len = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
  if (len == 0 || i + len > n) return 0;
  uint32_t cp = len == 1 ? c : len == 2 ? c & 0x1Fu : len == 3 ? c & 0x0Fu : c & 0x07u;
  for (size_t k = 1; k < len; ++k) {
    if ((s[i + k] & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (s[i + k] & 0x3Fu);
  }
  static const uint32_t kMin[5] = {0, 0, 0x80, 0x800, 0x10000};
  if (cp < kMin[len] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
  return len;
}

// Aperio's fields are `|`-separated and its header ends at a newline: a
// value holding either would change what the rewritten description says.
std::string aperio_field(const std::string& s) {
  std::string out = clean_metadata_text(s, kMaxVendorValueBytes);
  for (char& c : out)
    if (c == '|') c = '/';
  return out;
}

}  // namespace

std::string clean_metadata_text(const std::string& in, size_t max_bytes, bool keep_newlines) {
  std::string out;
  out.reserve(std::min(in.size(), max_bytes));
  const auto* s = reinterpret_cast<const unsigned char*>(in.data());
  const size_t n = in.size();
  for (size_t i = 0; i < n;) {
    const size_t len = utf8_length(s, i, n);
    const size_t take = len == 0 ? 1 : len;
    if (out.size() + take > max_bytes) break;
    if (len == 0) {
      out += '?';
    } else if (len == 1 && (s[i] < 0x20 || s[i] == 0x7F)) {
      const bool keep = s[i] == '\t' || (keep_newlines && (s[i] == '\r' || s[i] == '\n'));
      out += keep ? static_cast<char>(s[i]) : ' ';
    } else {
      out.append(in, i, len);
    }
    i += take;
  }
  return out;
}

bool set_pixel_size(SourceInfo& info, double mpp_x, double mpp_y, const std::string& what) {
  if (plausible_mpp(mpp_x) && plausible_mpp(mpp_y)) {
    info.mpp_x = mpp_x, info.mpp_y = mpp_y;
    return true;
  }
  const auto given = [](double v) { return !(v <= 0); };  // NaN was given, and is wrong
  if (given(mpp_x) || given(mpp_y)) {
    char buf[160];
    std::snprintf(buf, sizeof buf, "%g x %g microns per pixel, outside %g..%g (pixel size unknown)", mpp_x, mpp_y,
                  kMinMpp, kMaxMpp);
    warn(info.path + ": " + what + ": " + buf);
  }
  return false;
}

std::string no_pixel_size(const std::string& path) {
  std::string reason = path + " has no pixel size (mpp)";
  const std::vector<std::string> pending = take_warnings();
  for (const std::string& w : pending)
    if (w.rfind(path + ": ", 0) == 0 && w.find(" microns per pixel, outside ") != std::string::npos) reason = w;
  for (const std::string& w : pending)
    if (w != reason) warn(w);
  return reason;
}

bool add_vendor_property(SourceInfo& info, const std::string& key, const std::string& value) {
  if (info.vendor_properties.size() >= kMaxVendorProperties) return false;
  std::string k = trim(clean_metadata_text(key, kMaxVendorKeyBytes));
  if (k.empty()) return false;
  std::string v = trim(clean_metadata_text(value, kMaxVendorValueBytes));
  size_t total = k.size() + v.size();
  for (const auto& kv : info.vendor_properties) total += kv.first.size() + kv.second.size();
  if (total > kMaxVendorPropertyBytes) return false;
  info.vendor_properties.emplace_back(std::move(k), std::move(v));
  return true;
}

bool is_aperio_description(const std::string& description) {
  return description.rfind("Aperio", 0) == 0;
}

void read_aperio_description(SourceInfo& info, const std::string& description) {
  if (!is_aperio_description(description)) return;
  info.vendor_description = clean_metadata_text(description, kMaxVendorDescriptionBytes, /*keep_newlines=*/true);
  // As OpenSlide splits it: the first field is the header, the others
  // `key = value` (a field without '=' names nothing). Only the bounded
  // copy is read, so a flood of '|' costs at most 64 KiB of work.
  const std::string& d = info.vendor_description;
  size_t start = d.find('|');
  while (start != std::string::npos) {
    const size_t end = d.find('|', start + 1);
    const std::string field = d.substr(start + 1, end == std::string::npos ? std::string::npos : end - start - 1);
    start = end;
    const size_t eq = field.find('=');
    if (eq == std::string::npos) continue;
    const std::string key = trim(field.substr(0, eq)), value = trim(field.substr(eq + 1));
    if (key.empty()) continue;
    if (!add_vendor_property(info, kAperioPrefix + key, value)) break;
    if (key == "AppMag") {
      char* e = nullptr;
      const double m = std::strtod(value.c_str(), &e);
      if (e != value.c_str() && std::isfinite(m) && m > 0) info.objective_power = m;
    }
  }
}

std::string aperio_pyramid_description(const SourceInfo& info, int64_t width, int64_t height, int64_t tile_w,
                                       int64_t tile_h) {
  if (!is_aperio_description(info.vendor_description)) return "";
  const std::string& d = info.vendor_description;
  std::string first = d.substr(0, std::min(d.find_first_of("\r\n|"), kMaxHeaderLineBytes));
  std::string out = aperio_field(trim(first));
  out += "\r\n" + std::to_string(width) + "x" + std::to_string(height) + " (" + std::to_string(tile_w) + "x" +
         std::to_string(tile_h) + ") Tilewave pyramid";
  const std::string prefix = kAperioPrefix;
  bool has_mpp = false;
  for (const auto& kv : info.vendor_properties) {
    if (kv.first.rfind(prefix, 0) != 0 || kv.first.size() == prefix.size()) continue;
    std::string key = aperio_field(kv.first.substr(prefix.size()));
    for (char& c : key)
      if (c == '=') c = '-';
    // A broken MPP (`nan`, `0`) is left out: OpenSlide would hand it on as
    // the pixel size. The resolution's own MPP is added below instead.
    if (key == "MPP" && !plausible_mpp(std::strtod(kv.second.c_str(), nullptr))) continue;
    std::string field = "|" + key + " = " + aperio_field(kv.second);
    // The properties are bounded already; the separators are not counted there.
    if (out.size() + field.size() > kMaxVendorDescriptionBytes) break;
    out += field;
    has_mpp = has_mpp || key == "MPP";
  }
  // A source whose pixel size came from its resolution tags still gets the
  // field OpenSlide reads it from.
  if (!has_mpp && plausible_mpp(info.mpp_x)) {
    char mpp[48];
    std::snprintf(mpp, sizeof mpp, "|MPP = %.6g", info.mpp_x);
    out += mpp;
  }
  return out;
}

std::string aperio_associated_description(const std::string& name, int64_t width, int64_t height) {
  // LF alone: OpenSlide splits on CR and LF one at a time, so after a CRLF
  // its second line would be the empty one between them.
  return "Aperio Image Library (Tilewave)\n" + name + " " + std::to_string(width) + "x" + std::to_string(height);
}

}  // namespace tw
