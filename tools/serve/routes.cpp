#include "tools/serve/routes.hpp"

#include <vector>

#include "tools/serve/slide.hpp"

namespace tw::serve {

int64_t parse_index(const std::string& s) {
  if (s.empty() || s.size() > 9 || (s.size() > 1 && s[0] == '0')) return -1;
  int64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return -1;
    v = v * 10 + (c - '0');
  }
  return v;
}

namespace {

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> parts;
  size_t start = 0;
  for (size_t p; (p = s.find(sep, start)) != std::string::npos; start = p + 1)
    parts.push_back(s.substr(start, p - start));
  parts.push_back(s.substr(start));
  return parts;
}

bool ends_with(const std::string& s, const std::string& e) {
  return s.size() >= e.size() && s.compare(s.size() - e.size(), e.size(), e) == 0;
}

Route layer_route(const std::vector<std::string>& p, bool overlay) {
  Route r;
  r.overlay = overlay;
  if (p.size() == 3 && ends_with(p[2], ".dzi")) {
    r.name = p[2].substr(0, p[2].size() - 4);
    if (valid_slide_name(r.name)) r.kind = Route::kDescriptor;
    return r;
  }
  if (p.size() != 5 || !ends_with(p[2], "_files")) return r;
  r.name = p[2].substr(0, p[2].size() - 6);
  r.level = parse_index(p[3]);
  const size_t dot = p[4].find('.'), us = p[4].find('_');
  if (!valid_slide_name(r.name) || r.level < 0 || dot == std::string::npos || us == std::string::npos || us > dot)
    return r;
  r.col = parse_index(p[4].substr(0, us));
  r.row = parse_index(p[4].substr(us + 1, dot - us - 1));
  const std::string ext = p[4].substr(dot + 1);
  if (r.col < 0 || r.row < 0 || (ext != "jpeg" && ext != "png") || (overlay && ext != "png")) return r;
  r.format = ext == "png" ? TileFormat::kPng : TileFormat::kJpeg;
  r.kind = Route::kTile;
  return r;
}

}  // namespace

Route parse_route(const std::string& path) {
  Route r;
  if (path == "/") {
    r.kind = Route::kIndex;
    return r;
  }
  if (path == "/list") {
    r.kind = Route::kList;
    return r;
  }
  if (path == "/slides") {
    r.kind = Route::kSlideList;
    return r;
  }
  const std::vector<std::string> p = split(path, '/');
  if (p.size() < 3 || !p[0].empty()) return r;
  if (p[1] == "slides" || p[1] == "overlays") return layer_route(p, p[1] == "overlays");
  if (p[1] == "view" && p.size() == 3 && valid_slide_name(p[2])) {
    r.kind = Route::kViewer;
    r.name = p[2];
  } else if (p[1] == "viewer" && (p.size() == 3 || (p.size() == 4 && p[2] == "images"))) {
    // Checked against the list of files loaded at start, never opened.
    for (size_t i = 2; i < p.size(); ++i)
      if (!valid_slide_name(p[i])) return r;
    r.kind = Route::kAsset;
    r.name = p.size() == 3 ? p[2] : "images/" + p[3];
  }
  return r;
}

}  // namespace tw::serve
