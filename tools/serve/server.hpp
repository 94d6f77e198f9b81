#pragma once
// `tilewave serve`: slides as Deep Zoom made on request, over HTTP
// (cpp-httplib), with a viewer page. The server owns the slides, a bounded
// cache of encoded tiles and one of pixel blocks of levels made on the fly,
// and a bounded pool of worker threads (each renders and encodes the tiles
// of its requests, so tiles are encoded in parallel).
#include <array>
#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "tools/serve/slide.hpp"
#include "tools/serve/tile_encode.hpp"

namespace httplib {
struct Response;
}

namespace tw::serve {

struct ServeOptions {
  std::string bind = "127.0.0.1";
  int port = 8000;  // 0: any free port (bind() says which)
  int threads = 4;
  size_t memory = size_t{1} << 30;  // tile cache + block cache + readers
  int64_t tile = 254, overlap = 1;
  TileFormat format = TileFormat::kJpeg;  // the descriptors' Format
  int quality = 90;
  std::array<uint8_t, 3> outline{0, 255, 0};
  std::string viewer_dir;
};

// A --overlay given as .geojson or .json is drawn from its polygons; any
// other is read as a label image.
bool is_geojson_overlay(const std::string& path);
// DIR/nuclei.geojson for a slide file DIR/X.ext when that file exists, else "".
std::string nuclei_geojson_beside(const std::string& spec);

class TileServer {
 public:
  // specs: what open_source reads; overlays: for the first overlays.size()
  // slides, a u32 label image or a GeoJSON file (is_geojson_overlay); the
  // other slides take the nuclei.geojson beside them when there is one.
  // Throws InputError (one line) for what cannot be served, and for GeoJSON
  // overlays that need more than a quarter of opt.memory.
  TileServer(const std::vector<std::string>& specs, const std::vector<std::string>& overlays, ServeOptions opt);
  ~TileServer();

  const std::vector<std::unique_ptr<Slide>>& slides() const { return slides_; }
  bool viewer_installed() const;
  // Binds the listening socket; returns the port. Throws InputError when the
  // address cannot be bound (in use, not this machine's).
  int bind();
  // Serves until stop() (from any thread); in-flight requests finish.
  void run();
  // stop() only ends a server that is running (between the two, call it
  // again once running() says so).
  void stop();
  bool running() const;

 private:
  // query_slide: the value of ?slide=, or null.
  void handle(const std::string& path, const std::string* query_slide, httplib::Response& res) const;
  struct Impl;
  std::unique_ptr<Impl> impl_;
  std::vector<std::unique_ptr<Slide>> slides_;
};

}  // namespace tw::serve
