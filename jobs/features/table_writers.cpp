#include "jobs/features/table_writers.hpp"

#include <unistd.h>

#include <cctype>
#include <cerrno>
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
  explicit BufferedFile(const std::string& path) : out_(path) { buf_.reserve(kFlush + 4096); }
  void put(const std::string& s) {
    buf_ += s;
    if (buf_.size() >= kFlush) flush();
  }
  uint64_t finish() {
    flush();
    out_.commit();
    return written_;
  }

 private:
  static constexpr size_t kFlush = size_t{1} << 20;
  void flush() {
    const char* p = buf_.data();
    size_t n = buf_.size();
    while (n > 0) {
      const ssize_t w = ::write(out_.fd(), p, n);
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) throw InputError("cannot write " + out_.final_path() + ": " + std::strerror(errno));
      p += w, n -= static_cast<size_t>(w), written_ += static_cast<uint64_t>(w);
    }
    buf_.clear();
  }
  OutputFile out_;
  std::string buf_;
  uint64_t written_ = 0;
};

std::string format_value(const TableLayout::Value& v) {
  char s[40];
  if (v.integer)
    std::snprintf(s, sizeof s, "%lld", static_cast<long long>(v.v));
  else
    std::snprintf(s, sizeof s, "%.12g", v.v);
  return s;
}

class CsvWriter : public TableWriter {
 public:
  CsvWriter(const std::string& path, TableLayout layout) : file_(path), layout_(std::move(layout)) {
    std::string header;
    for (const std::string& n : layout_.column_names()) header += (header.empty() ? "" : ",") + n;
    file_.put(header + "\n");
  }
  bool needs_outlines() const override { return false; }
  void write(const ObjectRecord& r, const std::vector<Polygon>&) override {
    std::string line;
    for (const auto& v : layout_.values(r)) {
      if (!line.empty()) line += ',';
      line += format_value(v);
    }
    file_.put(line + "\n");
  }
  uint64_t finish() override { return file_.finish(); }

 private:
  BufferedFile file_;
  TableLayout layout_;
};

nlohmann::ordered_json ring_json(const Ring& r) {
  nlohmann::ordered_json a = nlohmann::ordered_json::array();
  for (const Corner& c : r) a.push_back({c.first, c.second});
  a.push_back({r[0].first, r[0].second});  // closed, as GeoJSON asks
  return a;
}

nlohmann::ordered_json polygon_json(const Polygon& p) {
  nlohmann::ordered_json rings = nlohmann::ordered_json::array();
  rings.push_back(ring_json(p.shell));
  for (const Ring& h : p.holes) rings.push_back(ring_json(h));
  return rings;
}

class GeoJsonWriter : public TableWriter {
 public:
  GeoJsonWriter(const std::string& path, TableLayout layout)
      : file_(path), layout_(std::move(layout)), names_(layout_.column_names()) {
    file_.put("{\"type\":\"FeatureCollection\",\"features\":[\n");
  }
  bool needs_outlines() const override { return true; }
  void write(const ObjectRecord& r, const std::vector<Polygon>& polygons) override {
    nlohmann::ordered_json geometry;
    if (polygons.size() == 1) {
      geometry = {{"type", "Polygon"}, {"coordinates", polygon_json(polygons[0])}};
    } else {
      nlohmann::ordered_json all = nlohmann::ordered_json::array();
      for (const Polygon& p : polygons) all.push_back(polygon_json(p));
      geometry = {{"type", "MultiPolygon"}, {"coordinates", std::move(all)}};
    }
    nlohmann::ordered_json m = nlohmann::ordered_json::object();
    const auto vals = layout_.values(r);
    for (size_t i = 0; i < vals.size(); ++i) {
      if (vals[i].integer)
        m[names_[i]] = static_cast<int64_t>(vals[i].v);
      else
        m[names_[i]] = vals[i].v;
    }
    const nlohmann::ordered_json f = {
        {"type", "Feature"},
        {"geometry", std::move(geometry)},
        {"properties", {{"objectType", "detection"}, {"label", r.label}, {"measurements", std::move(m)}}}};
    // Strings are ours (ASCII names): no invalid UTF-8 to replace.
    file_.put((first_ ? "" : ",\n") + f.dump());
    first_ = false;
  }
  uint64_t finish() override {
    file_.put("\n]}\n");
    return file_.finish();
  }

 private:
  BufferedFile file_;
  TableLayout layout_;
  std::vector<std::string> names_;
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
