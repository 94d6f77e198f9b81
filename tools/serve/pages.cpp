#include "tools/serve/pages.hpp"

#include <dirent.h>

#include <fstream>
#include <sstream>

#include "engine/json.hpp"

namespace tw::serve {

std::string descriptor_xml(const DziGeometry& g, TileFormat format) {
  std::ostringstream o;
  o << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
    << "<Image xmlns=\"http://schemas.microsoft.com/deepzoom/2008\" Format=\"" << tile_format_extension(format)
    << "\" Overlap=\"" << g.overlap << "\" TileSize=\"" << g.tile << "\">\n"
    << "  <Size Width=\"" << g.width << "\" Height=\"" << g.height << "\"/>\n"
    << "</Image>\n";
  return o.str();
}

std::string html_escape(const std::string& s) {
  std::string o;
  for (char c : s) {
    switch (c) {
      case '<':
        o += "&lt;";
        break;
      case '>':
        o += "&gt;";
        break;
      case '&':
        o += "&amp;";
        break;
      case '"':
        o += "&quot;";
        break;
      case '\'':
        o += "&#39;";
        break;
      default:
        o += c;
    }
  }
  return o;
}

std::string index_html(const std::vector<std::unique_ptr<Slide>>& slides, bool no_viewer) {
  std::ostringstream o;
  o << "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>tilewave serve</title></head>\n<body>\n"
    << "<h1>Slides</h1>\n"
    << (no_viewer ? "<p>The viewer is not installed (run tools/install-deps.sh); the tiles are served.</p>\n" : "")
    << "<ul>\n";
  for (const auto& s : slides) {
    const std::string n = html_escape(s->name());
    o << "<li><a href=\"/?slide=" << n << "\">" << n << "</a> " << s->geometry().width << " x " << s->geometry().height
      << " (<a href=\"/slides/" << n << ".dzi\">dzi</a>"
      << (s->has_overlay() ? ", <a href=\"/overlays/" + n + ".dzi\">outlines</a>" : "") << ")</li>\n";
  }
  o << "</ul>\n</body></html>\n";
  return o.str();
}

std::string slides_json(const std::vector<std::unique_ptr<Slide>>& slides) {
  nlohmann::json list = nlohmann::json::array();
  for (const auto& s : slides) {
    nlohmann::json j = {{"name", s->name()},
                        {"dzi", "/slides/" + s->name() + ".dzi"},
                        {"view", "/?slide=" + s->name()},
                        {"width", s->geometry().width},
                        {"height", s->geometry().height},
                        {"mpp_x", s->info().mpp_x},
                        {"mpp_y", s->info().mpp_y}};
    if (s->has_overlay()) j["overlay"] = "/overlays/" + s->name() + ".dzi";
    list.push_back(j);
  }
  return dump_json(list) + "\n";
}

namespace {

bool read_file(const std::string& path, std::string& out) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return false;
  std::ostringstream s;
  s << f.rdbuf();
  out = s.str();
  return static_cast<bool>(f) || f.eof();
}

}  // namespace

ViewerFiles::ViewerFiles(const std::string& dir) : dir_(dir) {
  const std::string osd = dir + "/node_modules/openseadragon/build/openseadragon";
  std::string js;
  if (!read_file(dir + "/index.html", page_template_) || !read_file(osd + "/openseadragon.min.js", js)) return;
  files_["openseadragon.min.js"] = std::move(js);
  // The navigation buttons' images: every regular .png of the folder, loaded
  // now so that requests never reach the file system.
  if (DIR* d = opendir((osd + "/images").c_str())) {
    while (const dirent* e = readdir(d)) {
      const std::string n = e->d_name;
      std::string bytes;
      if (n.size() > 4 && n.compare(n.size() - 4, 4, ".png") == 0 && valid_slide_name(n) &&
          read_file(osd + "/images/" + n, bytes))
        files_["images/" + n] = std::move(bytes);
    }
    closedir(d);
  }
  installed_ = true;
}

const std::string* ViewerFiles::find(const std::string& name) const {
  const auto it = files_.find(name);
  return it == files_.end() ? nullptr : &it->second;
}

std::string ViewerFiles::page(const Slide& slide, TileFormat format,
                              const std::vector<std::unique_ptr<Slide>>& slides) const {
  nlohmann::json names = nlohmann::json::array();
  for (const auto& s : slides) names.push_back(s->name());
  // The page's one placeholder is a JSON object; slide names hold no '<', so
  // it cannot end the script element it sits in.
  nlohmann::json config = {{"name", slide.name()},
                           {"dzi", "/slides/" + slide.name() + ".dzi"},
                           {"format", tile_format_extension(format)},
                           {"mpp", slide.info().mpp_x},
                           {"overlay", slide.has_overlay() ? "/overlays/" + slide.name() + ".dzi" : ""},
                           {"slides", names}};
  std::string page = page_template_;
  const std::string key = "@TILEWAVE_CONFIG@";
  if (const size_t p = page.find(key); p != std::string::npos) page.replace(p, key.size(), config.dump());
  const std::string title = "@TILEWAVE_TITLE@";
  if (const size_t p = page.find(title); p != std::string::npos)
    page.replace(p, title.size(), html_escape(slide.name()));
  return page;
}

}  // namespace tw::serve
