#pragma once
// What the server says besides tiles: the Deep Zoom descriptors, the slide
// lists, and the viewer page with the OpenSeadragon files it loads (read once
// at start from the viewer folder, tools/viewer, where tools/install-deps.sh
// installs OpenSeadragon from the npm registry with `npm ci`).
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "tools/serve/slide.hpp"
#include "tools/serve/tile_encode.hpp"

namespace tw::serve {

std::string descriptor_xml(const DziGeometry& g, TileFormat format);
// no_viewer: the page says that the viewer is not installed.
std::string index_html(const std::vector<std::unique_ptr<Slide>>& slides, bool no_viewer);
std::string slides_json(const std::vector<std::unique_ptr<Slide>>& slides);

class ViewerFiles {
 public:
  // dir: the viewer folder (index.html, node_modules/openseadragon/...).
  // Missing files leave the viewer not installed (tiles are still served).
  explicit ViewerFiles(const std::string& dir);
  bool installed() const { return installed_; }
  // "openseadragon.min.js" or "images/NAME.png"; null when not one of them.
  const std::string* find(const std::string& name) const;
  // The viewer of `slide`, with a picker of all `slides`.
  std::string page(const Slide& slide, TileFormat format, const std::vector<std::unique_ptr<Slide>>& slides) const;
  const std::string& dir() const { return dir_; }

 private:
  std::string dir_, page_template_;
  std::map<std::string, std::string> files_;
  bool installed_ = false;
};

std::string html_escape(const std::string& s);

}  // namespace tw::serve
