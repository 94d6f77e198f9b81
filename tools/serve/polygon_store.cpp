#include "tools/serve/polygon_store.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>

namespace tw::serve {

namespace {

template <class T>
size_t vec_bytes(const std::vector<T>& v) {
  return v.capacity() * sizeof(T);
}

std::string mib(size_t bytes) {
  return std::to_string((bytes + (size_t{1} << 20) - 1) >> 20) + " MiB";
}

// Deep enough for any GeoJSON (a MultiPolygon's position is at depth 7 of a
// FeatureCollection) and for generous properties; deeper is hostile.
constexpr size_t kMaxDepth = 128;

}  // namespace

// The SAX handler: a stack of what each open container is, so that only
// the geometries' coordinates are kept and everything else (properties,
// measurements) is read past without storing it. The kind of geometry can
// come after its coordinates (JSON objects are unordered): the depth at which
// numbers appear says how the arrays nest, checked against the type at the
// geometry's end.
class GeoJsonSax : public nlohmann::json_sax<nlohmann::json> {
 public:
  GeoJsonSax(PolygonStore& s, std::string path, int64_t w, int64_t h, size_t budget)
      : s_(s), path_(std::move(path)), w_(w), h_(h), budget_(budget) {}

  bool null() override { return scalar("null"); }
  bool boolean(bool) override { return scalar("a boolean"); }
  bool number_integer(number_integer_t v) override { return number(static_cast<double>(v)); }
  bool number_unsigned(number_unsigned_t v) override { return number(static_cast<double>(v)); }
  bool number_float(number_float_t v, const string_t&) override { return number(v); }
  bool binary(binary_t&) override { return scalar("binary data"); }

  bool string(string_t& v) override {
    Frame* f = top();
    if (!f) fail("not a GeoJSON FeatureCollection but a string");
    if (f->kind == kCoords) fail("a string among the coordinates");
    if (f->kind == kFeatures) fail("the features array holds a string, not a Feature");
    if (key_ == "type") {
      if (f->kind == kGeometry) geometry_type_ = v;
      if (f->kind == kFeature && v != "Feature") fail("a feature of type '" + clip(v) + "', not 'Feature'");
      if (f->kind == kCollection) {
        if (v != "FeatureCollection") fail("a GeoJSON " + clip(v) + ", not a FeatureCollection of polygons");
        collection_typed_ = true;
      }
    }
    return true;
  }

  bool start_object(std::size_t) override {
    Frame* f = top();
    Kind k = kSkip;
    if (!f) {
      k = kCollection;
    } else if (f->kind == kFeatures) {
      k = kFeature;
      ++feature_;
      feature_has_geometry_ = false;
    } else if (f->kind == kFeature && key_ == "geometry") {
      k = kGeometry;
      feature_has_geometry_ = true;
      geometry_type_.clear();
      pos_depth_ = 0;
      geometry_has_coords_ = false;
    } else if (f->kind == kCoords) {
      fail("an object among the coordinates");
    }
    return push(k);
  }

  bool key(string_t& k) override {
    key_ = k;
    return true;
  }

  bool end_object() override {
    const Frame f = stack_.back();
    stack_.pop_back();
    if (f.kind == kGeometry) {
      const bool poly = geometry_type_ == "Polygon", multi = geometry_type_ == "MultiPolygon";
      if (!poly && !multi)
        fail(geometry_type_.empty()
                 ? "a geometry without a type"
                 : "a " + clip(geometry_type_) + " geometry (the overlay draws Polygon and MultiPolygon)");
      if (!geometry_has_coords_) fail("a " + geometry_type_ + " without coordinates");
      if (pos_depth_ != (poly ? 3 : 4))
        fail("the coordinates of a " + geometry_type_ + " nest " + std::to_string(pos_depth_) + " arrays deep, not " +
             std::to_string(poly ? 3 : 4));
    } else if (f.kind == kFeature && !feature_has_geometry_) {
      fail("a feature without a geometry");
    } else if (f.kind == kCollection && (!collection_typed_ || !has_features_)) {
      fail("not a GeoJSON FeatureCollection (no \"type\": \"FeatureCollection\" with \"features\")");
    }
    key_.clear();
    return true;
  }

  bool start_array(std::size_t) override {
    Frame* f = top();
    Kind k = kSkip;
    int level = 0;
    if (!f) {
      k = kFeatures;  // a bare array of features (as QuPath exports them)
      has_features_ = true;
    } else if (f->kind == kCollection && key_ == "features") {
      k = kFeatures;
      has_features_ = true;
    } else if (f->kind == kGeometry && key_ == "coordinates") {
      k = kCoords;
      level = 1;
      geometry_has_coords_ = true;
    } else if (f->kind == kCoords) {
      if (f->numbers) fail("a position that mixes numbers and arrays");
      if (pos_depth_ && f->level + 1 > pos_depth_) fail("coordinates nested unevenly");
      ++f->count;
      f->arrays = true;
      k = kCoords;
      level = f->level + 1;
    } else if (f->kind == kFeatures) {
      fail("the features array holds an array, not a Feature");
    }
    if (!push(k)) return false;
    stack_.back().level = level;
    return true;
  }

  bool end_array() override {
    const Frame f = stack_.back();
    stack_.pop_back();
    if (f.kind != kCoords) return true;
    if (f.count == 0) fail("an empty array among the coordinates");
    if (f.numbers) {  // a position
      if (f.count < 2) fail("a position with fewer than 2 numbers");
      if (pos_depth_ == 0) pos_depth_ = f.level;
      if (f.level != pos_depth_) fail("coordinates nested unevenly");
      append(x_, y_);
    } else if (pos_depth_ && f.level == pos_depth_ - 1) {  // a ring
      end_ring();
    } else if (pos_depth_ && f.level == pos_depth_ - 2) {
      ++s_.polygons_;
    }
    return true;
  }

  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& ex) override {
    throw InputError(path_ + ": not valid JSON: " + ex.what());
  }

 private:
  enum Kind { kCollection, kFeatures, kFeature, kGeometry, kCoords, kSkip };
  struct Frame {
    Kind kind;
    int level = 0;  // kCoords: 1 for the coordinates array itself
    size_t count = 0;
    bool numbers = false, arrays = false;
  };

  [[noreturn]] void fail(const std::string& what) const {
    throw InputError(path_ + (feature_ ? ": feature " + std::to_string(feature_) : std::string()) + ": " + what);
  }
  static std::string clip(const std::string& s) { return s.size() > 40 ? s.substr(0, 40) + "..." : s; }
  Frame* top() { return stack_.empty() ? nullptr : &stack_.back(); }

  bool push(Kind k) {
    if (stack_.size() >= kMaxDepth) fail("JSON nested deeper than " + std::to_string(kMaxDepth) + " levels");
    if (stack_.empty() && k != kCollection && k != kFeatures) fail("not a GeoJSON FeatureCollection");
    stack_.push_back(Frame{k});
    key_.clear();
    return true;
  }

  bool scalar(const char* what) {
    Frame* f = top();
    if (!f) fail(std::string("not a GeoJSON FeatureCollection but ") + what);
    if (f->kind == kCoords) fail(std::string(what) + " among the coordinates");
    if (f->kind == kFeatures) fail(std::string("the features array holds ") + what + ", not a Feature");
    if (f->kind == kFeature && key_ == "geometry") fail("a feature without a geometry (null)");
    return true;
  }

  bool number(double v) {
    Frame* f = top();
    if (!f) fail("not a GeoJSON FeatureCollection but a number");
    if (f->kind == kFeatures) fail("the features array holds a number, not a Feature");
    if (f->kind == kFeature && key_ == "geometry") fail("a feature whose geometry is a number");
    if (f->kind != kCoords) return true;
    if (f->arrays) fail("a position that mixes numbers and arrays");
    if (f->count >= 3) fail("a position with more than 3 numbers");
    const int64_t limit = f->count == 0 ? w_ : h_;
    // nlohmann reads an out-of-range number (1e999) as infinity; JSON has no NaN.
    if (f->count < 2 && !(std::isfinite(v) && v >= 0 && v <= static_cast<double>(limit)))
      fail("a coordinate " + std::string(std::isfinite(v) ? std::to_string(v) : "out of range") +
           " outside the slide (0.." + std::to_string(limit) + ")");
    if (f->count == 0) x_ = v;
    if (f->count == 1) y_ = v;
    f->numbers = true;
    ++f->count;
    return true;
  }

  // Grows a vector only when the store stays within the budget afterwards;
  // past it, the rest of the file is only counted, to say what it needs.
  template <class T>
  bool room(std::vector<T>& v) {
    if (over_) return false;
    if (v.size() < v.capacity()) return true;
    const size_t grown = std::max<size_t>(1024, v.capacity() * 2);
    if (s_.bytes() + (grown - v.capacity()) * sizeof(T) > budget_) {
      over_ = true;
      s_.xy_ = {}, s_.ring_start_ = {}, s_.box_ = {};
      return false;
    }
    v.reserve(grown);
    return true;
  }

  void append(double x, double y) {
    const int32_t fx = static_cast<int32_t>(std::llround(x * (1 << PolygonStore::kFracBits)));
    const int32_t fy = static_cast<int32_t>(std::llround(y * (1 << PolygonStore::kFracBits)));
    if (cur_n_ == 0)
      cur_first_[0] = fx, cur_first_[1] = fy, cur_box_[0] = cur_box_[2] = fx, cur_box_[1] = cur_box_[3] = fy;
    cur_last_[0] = fx, cur_last_[1] = fy;
    cur_box_[0] = std::min(cur_box_[0], fx), cur_box_[1] = std::min(cur_box_[1], fy);
    cur_box_[2] = std::max(cur_box_[2], fx), cur_box_[3] = std::max(cur_box_[3], fy);
    ++cur_n_;
    if (room(s_.xy_)) s_.xy_.push_back(fx);
    if (room(s_.xy_)) s_.xy_.push_back(fy);
  }

  void end_ring() {
    const size_t n = cur_n_;
    cur_n_ = 0;
    if (n < 4) fail("a ring of " + std::to_string(n) + " positions (a closed ring has at least 4)");
    if (cur_first_[0] != cur_last_[0] || cur_first_[1] != cur_last_[1])
      fail("a ring that is not closed (its last position is not its first)");
    vertices_ += n;
    ++rings_;
    cells_ += PolygonStore::cells_of(cur_box_);
    if (vertices_ > UINT32_MAX) fail("more than 4 billion vertices");
    if (s_.ring_start_.empty() && room(s_.ring_start_)) s_.ring_start_.push_back(0);
    if (room(s_.ring_start_)) s_.ring_start_.push_back(static_cast<uint32_t>(vertices_));
    for (int32_t c : cur_box_)
      if (room(s_.box_)) s_.box_.push_back(c);
  }

 public:
  // What load() reads once the file is parsed: whether the budget was
  // passed, and what the whole file holds (counted also past the budget).
  bool over_ = false;
  size_t vertices_ = 0, rings_ = 0, cells_ = 0;

 private:
  size_t cur_n_ = 0;
  int32_t cur_first_[2] = {}, cur_last_[2] = {}, cur_box_[4] = {};
  PolygonStore& s_;
  std::string path_;
  int64_t w_, h_;
  size_t budget_;
  std::vector<Frame> stack_;
  std::string key_, geometry_type_;
  size_t feature_ = 0;
  int pos_depth_ = 0;
  bool feature_has_geometry_ = false, geometry_has_coords_ = false, collection_typed_ = false, has_features_ = false;
  double x_ = 0, y_ = 0;
};

size_t PolygonStore::bytes() const {
  return vec_bytes(xy_) + vec_bytes(ring_start_) + vec_bytes(box_) + vec_bytes(cell_start_) + vec_bytes(cell_rings_);
}

size_t PolygonStore::cells_of(const int32_t box[4], int64_t* x0, int64_t* y0, int64_t* x1, int64_t* y1) {
  const int64_t a = (box[0] >> kFracBits) / kCell, b = (box[1] >> kFracBits) / kCell;
  const int64_t c = (box[2] >> kFracBits) / kCell, d = (box[3] >> kFracBits) / kCell;
  if (x0) *x0 = a, *y0 = b, *x1 = c, *y1 = d;
  return static_cast<size_t>((c - a + 1) * (d - b + 1));
}

PolygonStore PolygonStore::load(const std::string& path, int64_t width, int64_t height, size_t budget) {
  if (width >= (int64_t{1} << (31 - kFracBits)) || height >= (int64_t{1} << (31 - kFracBits)))
    throw InputError(path + ": GeoJSON overlays are drawn on slides up to 8388607 pixels a side");
  std::unique_ptr<FILE, int (*)(FILE*)> f(std::fopen(path.c_str(), "rb"), &std::fclose);
  if (!f) throw InputError(path + ": cannot open the GeoJSON overlay");
  std::setvbuf(f.get(), nullptr, _IOFBF, 1 << 20);
  PolygonStore s;
  s.cols_ = width / kCell + 1, s.rows_ = height / kCell + 1;  // a vertex may lie on the right or bottom edge
  GeoJsonSax sax(s, path, width, height, budget);
  // strict: nothing but white space after the value.
  if (!nlohmann::json::sax_parse(f.get(), &sax)) throw InputError(path + ": not a GeoJSON file");
  if (std::ferror(f.get())) throw InputError(path + ": read error");
  // What the store holds once read (vertices, ring starts and boxes), and
  // its buckets with their ring ids. While reading, a vector may hold up to
  // twice its size (it doubles as it grows): the --memory asked for covers
  // that peak, so that a second run with it is served.
  const size_t ncells = static_cast<size_t>(s.cols_ * s.rows_);
  const size_t read =
      sax.vertices_ * 2 * sizeof(int32_t) + (sax.rings_ + 1) * sizeof(uint32_t) + sax.rings_ * 4 * sizeof(int32_t);
  const size_t index = (ncells + 1) * sizeof(uint32_t) + sax.cells_ * sizeof(uint32_t);
  const size_t peak = std::max(2 * read + 3 * 1024 * sizeof(int32_t), read + index);
  if (sax.over_ || read + index > budget || sax.cells_ > UINT32_MAX)
    throw InputError(path + ": its outlines (" + std::to_string(sax.rings_) + " rings, " +
                     std::to_string(sax.vertices_) + " vertices) need " + mib(read + index) + " (" + mib(peak) +
                     " while read), more than the " + mib(budget) +
                     " they may take (a quarter of --memory): give --memory " +
                     std::to_string((4 * peak + (size_t{1} << 20) - 1) >> 20) + "M or more");
  s.xy_.shrink_to_fit();
  s.ring_start_.shrink_to_fit();
  s.box_.shrink_to_fit();
  s.build_index();
  return s;
}

void PolygonStore::build_index() {
  const size_t ncells = static_cast<size_t>(cols_ * rows_);
  cell_start_.assign(ncells + 1, 0);
  for (size_t r = 0; r < rings(); ++r) {
    int64_t x0, y0, x1, y1;
    cells_of(&box_[4 * r], &x0, &y0, &x1, &y1);
    for (int64_t cy = y0; cy <= y1; ++cy)
      for (int64_t cx = x0; cx <= x1; ++cx) ++cell_start_[static_cast<size_t>(cy * cols_ + cx) + 1];
  }
  for (size_t c = 0; c < ncells; ++c) cell_start_[c + 1] += cell_start_[c];
  cell_rings_.resize(cell_start_.back());
  std::vector<uint32_t> fill(cell_start_.begin(), cell_start_.end() - 1);
  for (size_t r = 0; r < rings(); ++r) {
    int64_t x0, y0, x1, y1;
    cells_of(&box_[4 * r], &x0, &y0, &x1, &y1);
    for (int64_t cy = y0; cy <= y1; ++cy)
      for (int64_t cx = x0; cx <= x1; ++cx)
        cell_rings_[fill[static_cast<size_t>(cy * cols_ + cx)]++] = static_cast<uint32_t>(r);
  }
}

namespace {

// skimage.draw.line (Bresenham) step for step, so that an independent
// rasterisation by scikit-image gives the same pixels for any slope; plot()
// keeps the pixels inside the tile.
template <class Plot>
void bresenham(int64_t c0, int64_t r0, int64_t c1, int64_t r1, Plot plot) {
  int64_t x = c0, y = r0;
  int64_t dx = std::llabs(c1 - c0), dy = std::llabs(r1 - r0);
  int64_t sx = c1 - c0 > 0 ? 1 : -1, sy = r1 - r0 > 0 ? 1 : -1;
  const bool steep = dy > dx;
  if (steep) std::swap(x, y), std::swap(dx, dy), std::swap(sx, sy);
  int64_t d = 2 * dy - dx;
  for (int64_t i = 0; i < dx; ++i) {
    steep ? plot(y, x) : plot(x, y);
    while (d >= 0) {
      y += sy;
      d -= 2 * dx;
    }
    x += sx;
    d += 2 * dy;
  }
  plot(c1, r1);
}

}  // namespace

void PolygonStore::draw(int k, std::array<uint8_t, 3> color, const ImageView& out) const {
  TW_ASSERT(out.fmt == (PixelFormat{SampleType::kU8, 4}) && k >= 0 && k < 40);
  const Rect r = out.rect;
  if (rings() == 0 || r.empty()) return;
  const int s = kFracBits + k;
  auto plot = [&](int64_t x, int64_t y) {
    if (x < r.x || y < r.y || x >= r.x1() || y >= r.y1()) return;
    uint8_t* p = out.ptr_bytes(x, y);
    p[0] = color[0], p[1] = color[1], p[2] = color[2], p[3] = 255;
  };
  // The buckets under the tile: level-k pixel p covers level-0 [p 2^k, (p+1) 2^k).
  const int64_t qx0 = std::min(cols_ - 1, (r.x << k) / kCell), qy0 = std::min(rows_ - 1, (r.y << k) / kCell);
  const int64_t qx1 = std::min(cols_ - 1, ((r.x1() << k) - 1) / kCell),
                qy1 = std::min(rows_ - 1, ((r.y1() << k) - 1) / kCell);
  for (int64_t cy = qy0; cy <= qy1; ++cy)
    for (int64_t cx = qx0; cx <= qx1; ++cx) {
      const size_t c = static_cast<size_t>(cy * cols_ + cx);
      for (uint32_t i = cell_start_[c]; i < cell_start_[c + 1]; ++i) {
        const uint32_t ring = cell_rings_[i];
        const int32_t* b = &box_[4 * ring];
        // A ring in several buckets is drawn from the first of them the tile has.
        if (std::max<int64_t>((b[0] >> kFracBits) / kCell, qx0) != cx ||
            std::max<int64_t>((b[1] >> kFracBits) / kCell, qy0) != cy)
          continue;
        auto px = [s](int32_t v) { return static_cast<int64_t>(v) >> s; };  // floor(v / 2^s)
        if (px(b[2]) < r.x || px(b[0]) >= r.x1() || px(b[3]) < r.y || px(b[1]) >= r.y1()) continue;
        const int32_t* v = xy_.data();
        for (uint32_t e = ring_start_[ring]; e + 1 < ring_start_[ring + 1]; ++e) {
          const int64_t x0 = px(v[2 * e]), y0 = px(v[2 * e + 1]), x1 = px(v[2 * e + 2]), y1 = px(v[2 * e + 3]);
          if (std::max(x0, x1) < r.x || std::min(x0, x1) >= r.x1() || std::max(y0, y1) < r.y ||
              std::min(y0, y1) >= r.y1())
            continue;
          bresenham(x0, y0, x1, y1, plot);
        }
      }
    }
}

}  // namespace tw::serve
