#include "jobs/features/table_writers.hpp"

#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <nlohmann/json.hpp>

#include "engine/error.hpp"

namespace tw::features {
namespace {

// Appends to the temporary output through a 1 MiB buffer.
class BufferedFile {
 public:
  explicit BufferedFile(const std::string& path) : out_(path) { buf_.reserve(kFlush); }
  void put(const char* s, size_t n) {
    if (buf_.size() + n > kFlush) flush();
    if (n >= kFlush)
      write_all(s, n);  // a large piece goes straight to the file
    else
      buf_.append(s, n);
  }
  void put(const std::string& s) { put(s.data(), s.size()); }
  uint64_t finish() {
    flush();
    out_.commit();
    return written_;
  }

 private:
  static constexpr size_t kFlush = size_t{1} << 20;
  void flush() {
    write_all(buf_.data(), buf_.size());
    buf_.clear();
  }
  void write_all(const char* p, size_t n) {
    while (n > 0) {
      const ssize_t w = ::write(out_.fd(), p, n);
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) throw InputError("cannot write " + out_.final_path() + ": " + std::strerror(errno));
      p += w, n -= static_cast<size_t>(w), written_ += static_cast<uint64_t>(w);
    }
  }
  OutputFile out_;
  std::string buf_;
  uint64_t written_ = 0;
};

void put_int(std::string& out, int64_t v) {
  char s[24];
  const auto r = std::to_chars(s, s + sizeof s, v);
  out.append(s, static_cast<size_t>(r.ptr - s));
}

// printf's "%.12g" (std::to_chars with a precision is specified as printf).
void put_csv_double(std::string& out, double v) {
  // One spelling of NaN, whatever its sign bit (an inf - inf gives -nan).
  if (std::isnan(v)) {
    out += "nan";
    return;
  }
  char s[40];
  const auto r = std::to_chars(s, s + sizeof s, v, std::chars_format::general, 12);
  out.append(s, static_cast<size_t>(r.ptr - s));
}

// A number as nlohmann::json's dump() writes it: the shortest text that
// reads back to the same double (Grisu2, its own to_chars), null for NaN and
// infinities.
void put_json_double(std::string& out, double v) {
  if (!std::isfinite(v)) {
    out += "null";
    return;
  }
  char s[64];
  const char* e = nlohmann::detail::to_chars(s, s + sizeof s, v);
  out.append(s, static_cast<size_t>(e - s));
}

void put_value(std::string& out, const TableLayout::Value& v, bool json) {
  if (v.integer)
    put_int(out, static_cast<int64_t>(v.v));
  else if (json)
    put_json_double(out, v.v);
  else
    put_csv_double(out, v.v);
}

class CsvWriter : public TableWriter {
 public:
  CsvWriter(const std::string& path, TableLayout layout) : file_(path), layout_(std::move(layout)) {
    std::string header;
    for (const std::string& n : layout_.column_names()) header += (header.empty() ? "" : ",") + n;
    file_.put(header + "\n");
  }
  bool needs_outlines() const override { return false; }
  void format(const ObjectRecord& r, const std::vector<Polygon>&, std::string& out) const override {
    bool first = true;
    for (const auto& v : layout_.values(r)) {
      if (!first) out += ',';
      first = false;
      put_value(out, v, false);
    }
    out += '\n';
  }
  void write(const std::string& text) override { file_.put(text); }
  uint64_t finish() override { return file_.finish(); }

 private:
  BufferedFile file_;
  TableLayout layout_;
};

// [[x,y],...] with the first corner repeated (closed, as GeoJSON asks).
void put_ring(std::string& out, const Ring& r) {
  out += '[';
  for (const Corner& c : r) {
    out += '[';
    put_int(out, c.first);
    out += ',';
    put_int(out, c.second);
    out += "],";
  }
  out += '[';
  put_int(out, r[0].first);
  out += ',';
  put_int(out, r[0].second);
  out += "]]";
}

void put_polygon(std::string& out, const Polygon& p) {
  out += '[';
  put_ring(out, p.shell);
  for (const Ring& h : p.holes) {
    out += ',';
    put_ring(out, h);
  }
  out += ']';
}

class GeoJsonWriter : public TableWriter {
 public:
  GeoJsonWriter(const std::string& path, TableLayout layout) : file_(path), layout_(std::move(layout)) {
    // The keys as JSON strings: names are ours (ASCII letters, digits and
    // '_'), so nothing needs escaping.
    for (const std::string& n : layout_.column_names()) keys_.push_back("\"" + n + "\":");
    file_.put("{\"type\":\"FeatureCollection\",\"features\":[\n");
  }
  bool needs_outlines() const override { return true; }
  // One Feature, as nlohmann's dump() wrote it: no spaces, keys in this order.
  void format(const ObjectRecord& r, const std::vector<Polygon>& polygons, std::string& out) const override {
    if (!out.empty()) out += ",\n";
    out += "{\"type\":\"Feature\",\"geometry\":{\"type\":";
    if (polygons.size() == 1) {
      out += "\"Polygon\",\"coordinates\":";
      put_polygon(out, polygons[0]);
    } else {
      out += "\"MultiPolygon\",\"coordinates\":[";
      for (size_t i = 0; i < polygons.size(); ++i) {
        if (i) out += ',';
        put_polygon(out, polygons[i]);
      }
      out += ']';
    }
    out += "},\"properties\":{\"objectType\":\"detection\",\"label\":";
    put_int(out, r.label);
    out += ",\"measurements\":{";
    const auto vals = layout_.values(r);
    for (size_t i = 0; i < vals.size(); ++i) {
      if (i) out += ',';
      out += keys_[i];
      put_value(out, vals[i], true);
    }
    out += "}}}";
  }
  void write(const std::string& text) override {
    if (text.empty()) return;
    if (!first_) file_.put(",\n", 2);
    file_.put(text);
    first_ = false;
  }
  uint64_t finish() override {
    file_.put("\n]}\n");
    return file_.finish();
  }

 private:
  BufferedFile file_;
  TableLayout layout_;
  std::vector<std::string> keys_;
  bool first_ = true;
};

}  // namespace

std::vector<std::string> TableLayout::column_names() const {
  std::vector<std::string> c = {"label", "area"};
  const bool um = has_um();
  if (um) c.push_back("area_um2");
  c.insert(c.end(), {"centroid_x", "centroid_y"});
  if (um) c.insert(c.end(), {"centroid_x_um", "centroid_y_um"});
  c.insert(c.end(), {"bbox_x0", "bbox_y0", "bbox_x1", "bbox_y1", "perimeter"});
  if (um) c.push_back("perimeter_um");
  c.push_back("equivalent_diameter");
  if (um) c.push_back("equivalent_diameter_um");
  c.push_back("major_axis_length");
  if (um) c.push_back("major_axis_length_um");
  c.push_back("minor_axis_length");
  if (um) c.push_back("minor_axis_length_um");
  c.insert(c.end(), {"orientation", "eccentricity", "area_convex", "solidity"});
  for (const std::string& ch : channel_names) c.insert(c.end(), {ch + "_mean", ch + "_std"});
  return c;
}

std::vector<TableLayout::Value> TableLayout::values(const ObjectRecord& r) const {
  const bool um = has_um();
  // Lengths in µm with the geometric mean of the two pixel sizes (equal on
  // every scanner we know; docs/features.md).
  const double len = std::sqrt(mpp_x * mpp_y);
  std::vector<Value> v;
  auto i = [&](int64_t x) { v.push_back({static_cast<double>(x), true}); };
  auto d = [&](double x) { v.push_back({x, false}); };
  i(r.label), i(r.area);
  if (um) d(static_cast<double>(r.area) * mpp_x * mpp_y);
  d(r.centroid_x), d(r.centroid_y);
  if (um) d(r.centroid_x * mpp_x), d(r.centroid_y * mpp_y);
  i(r.bbox_x0), i(r.bbox_y0), i(r.bbox_x1), i(r.bbox_y1);
  d(r.perimeter);
  if (um) d(r.perimeter * len);
  d(r.equivalent_diameter);
  if (um) d(r.equivalent_diameter * len);
  d(r.major_axis);
  if (um) d(r.major_axis * len);
  d(r.minor_axis);
  if (um) d(r.minor_axis * len);
  d(r.orientation), d(r.eccentricity), i(r.area_convex), d(r.solidity);
  for (size_t c = 0; c < channel_names.size(); ++c) d(r.mean[c]), d(r.std[c]);
  return v;
}

TableFormat table_format_of(const std::string& path) {
  auto ends = [&](const std::string& e) {
    if (path.size() < e.size()) return false;
    for (size_t k = 0; k < e.size(); ++k)
      if (std::tolower(static_cast<unsigned char>(path[path.size() - e.size() + k])) != e[k]) return false;
    return true;
  };
  if (ends(".csv")) return TableFormat::kCsv;
  if (ends(".geojson") || ends(".json")) return TableFormat::kGeoJson;
  throw InputError("features output '" + path + "' must end in .csv or .geojson");
}

std::unique_ptr<TableWriter> make_table_writer(TableFormat f, const std::string& path, TableLayout layout) {
  if (f == TableFormat::kCsv) return std::make_unique<CsvWriter>(path, std::move(layout));
  return std::make_unique<GeoJsonWriter>(path, std::move(layout));
}

}  // namespace tw::features
