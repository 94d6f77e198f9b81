#include "tests/support/raw_tiff.hpp"

#include <zlib.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <stdexcept>
#include <utility>

namespace tw::test {
namespace {

constexpr uint16_t kShort = 3, kLong = 4, kAscii = 2, kLong8 = 16;

struct Tag {
  uint16_t tag, type;
  std::vector<uint64_t> values;  // kShort/kLong/kLong8 values
  std::string text;              // kAscii
};

template <class T>
void put(std::string& s, T v) {
  char b[sizeof(T)];
  std::memcpy(b, &v, sizeof(T));  // the host is little-endian, like the file
  s.append(b, sizeof(T));
}

}  // namespace

std::string raw_tiff(const std::vector<RawIfd>& ifds, bool bigtiff) {
  // Classic: 4-byte offsets, 12-byte entries; BigTIFF: 8 and 20.
  const size_t off_size = bigtiff ? 8 : 4, entry = bigtiff ? 20 : 12;
  const uint16_t off_type = bigtiff ? kLong8 : kLong;
  auto put_off = [&](std::string& s, uint64_t v) {
    if (bigtiff)
      put<uint64_t>(s, v);
    else
      put<uint32_t>(s, static_cast<uint32_t>(v));
  };
  std::string f = "II";
  if (bigtiff) {
    put<uint16_t>(f, 43);
    put<uint16_t>(f, 8);
    put<uint16_t>(f, 0);
  } else {
    put<uint16_t>(f, 42);
  }
  size_t link = f.size();  // where the next IFD's offset goes
  put_off(f, 0);
  for (const RawIfd& d : ifds) {
    std::vector<uint64_t> offs, cnts;
    for (const std::string& c : d.chunks) {
      offs.push_back(f.size());
      cnts.push_back(c.size());
      f += c;
    }
    if (!d.offsets.empty()) offs = d.offsets;
    if (!d.counts.empty()) cnts = d.counts;
    auto samples = [&](uint16_t v) { return std::vector<uint64_t>(std::max<uint16_t>(d.spp, 1), v); };
    std::vector<Tag> tags = {
        {254, kLong, {d.subfile_type}, ""},
        {256, kLong, {d.width}, ""},
        {257, kLong, {d.height}, ""},
        {258, kShort, samples(d.bits), ""},
        {259, kShort, {d.compression}, ""},
        {262, kShort, {d.photometric}, ""},
        {277, kShort, {d.spp}, ""},
        {284, kShort, {d.planar}, ""},
        {339, kShort, samples(d.sample_format), ""},
    };
    if (!d.description.empty()) tags.push_back({270, kAscii, {}, d.description});
    if (d.tiled) {
      tags.push_back({322, kLong, {d.tile_w}, ""});
      tags.push_back({323, kLong, {d.tile_h}, ""});
      tags.push_back({324, off_type, offs, ""});
      tags.push_back({325, off_type, cnts, ""});
    } else {
      tags.push_back({273, off_type, offs, ""});
      tags.push_back({278, kLong, {d.rows_per_strip ? d.rows_per_strip : d.height}, ""});
      tags.push_back({279, off_type, cnts, ""});
    }
    std::sort(tags.begin(), tags.end(), [](const Tag& a, const Tag& b) { return a.tag < b.tag; });
    if (f.size() % 2) f.push_back('\0');
    const size_t ifd = f.size();
    std::string at;
    put_off(at, ifd);
    std::memcpy(&f[link], at.data(), off_size);
    // Values that do not fit in the entry go after the IFD.
    std::string extra;
    const size_t extra_at = ifd + (bigtiff ? 8 : 2) + tags.size() * entry + off_size;
    if (bigtiff)
      put<uint64_t>(f, tags.size());
    else
      put<uint16_t>(f, static_cast<uint16_t>(tags.size()));
    for (const Tag& t : tags) {
      std::string v;
      if (t.type == kAscii) v = t.text + '\0';
      for (uint64_t x : t.values) {
        if (t.type == kShort)
          put<uint16_t>(v, static_cast<uint16_t>(x));
        else if (t.type == kLong)
          put<uint32_t>(v, static_cast<uint32_t>(x));
        else
          put<uint64_t>(v, x);
      }
      const uint64_t count = t.type == kAscii ? v.size() : t.values.size();
      put<uint16_t>(f, t.tag);
      put<uint16_t>(f, t.type);
      put_off(f, count);
      if (v.size() <= off_size) {
        v.resize(off_size, '\0');
        f += v;
      } else {
        put_off(f, extra_at + extra.size());
        extra += v;
        if (extra.size() % 2) extra.push_back('\0');
      }
    }
    link = f.size();
    put_off(f, 0);
    f += extra;
  }
  return f;
}

void write_raw_tiff(const std::string& path, const std::vector<RawIfd>& ifds, bool bigtiff) {
  std::ofstream out(path, std::ios::binary);
  out << raw_tiff(ifds, bigtiff);
  if (!out) throw std::runtime_error("cannot write " + path);
}
std::string deflated_zeros(size_t n) {
  const std::string zeros(n, '\0');
  uLongf len = compressBound(static_cast<uLong>(n));
  std::string out(len, '\0');
  if (compress2(reinterpret_cast<Bytef*>(&out[0]), &len, reinterpret_cast<const Bytef*>(zeros.data()),
                static_cast<uLong>(n), 9) != Z_OK)
    throw std::runtime_error("compress2 failed");
  out.resize(len);
  return out;
}

}  // namespace tw::test
