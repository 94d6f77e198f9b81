#include "tools/serve/server.hpp"

#include <httplib.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <algorithm>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <mutex>
#include <thread>

#include "engine/error.hpp"
#include "engine/memory.hpp"
#include "io/open_source.hpp"
#include "tools/serve/pages.hpp"
#include "tools/serve/routes.hpp"

namespace tw::serve {

namespace {

// httplib's own pool queues accepted connections without limit; this one
// holds at most `max_queued`, then the accepting thread waits (further
// clients wait in the kernel's listen backlog), so a flood of clients costs
// bounded memory instead of a queue of sockets.
class BoundedPool : public httplib::TaskQueue {
 public:
  BoundedPool(size_t threads, size_t max_queued) : max_queued_(max_queued) {
    for (size_t i = 0; i < threads; ++i) threads_.emplace_back([this] { work(); });
  }
  void enqueue(std::function<void()> fn) override {
    std::unique_lock<std::mutex> lock(mutex_);
    room_.wait(lock, [&] { return jobs_.size() < max_queued_ || shutdown_; });
    jobs_.push_back(std::move(fn));
    ready_.notify_one();
  }
  void shutdown() override {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      shutdown_ = true;
    }
    ready_.notify_all();
    room_.notify_all();
    for (auto& t : threads_) t.join();
  }

 private:
  void work() {
    for (;;) {
      std::function<void()> fn;
      {
        std::unique_lock<std::mutex> lock(mutex_);
        ready_.wait(lock, [&] { return !jobs_.empty() || shutdown_; });
        if (jobs_.empty()) return;  // shut down, queue drained
        fn = std::move(jobs_.front());
        jobs_.pop_front();
      }
      room_.notify_one();
      fn();
    }
  }
  size_t max_queued_;
  std::vector<std::thread> threads_;
  std::deque<std::function<void()>> jobs_;
  bool shutdown_ = false;
  std::mutex mutex_;
  std::condition_variable ready_, room_;
};

size_t image_cost(const Image& im) {
  return im.size_bytes();
}
size_t bytes_cost(const std::string& s) {
  return s.size();
}

}  // namespace

struct TileServer::Impl {
  ServeOptions opt;
  httplib::Server http;
  LruCache<std::string> tiles;
  LruCache<Image> blocks;
  ViewerFiles viewer;
  int listen_fd = -1;
  // polygon_bytes: what the GeoJSON overlays hold, taken from the tile
  // cache's half of --memory (they may take a quarter at most).
  Impl(ServeOptions o, size_t polygon_bytes)
      : opt(std::move(o)),
        tiles(opt.memory / 2 - polygon_bytes, bytes_cost),
        blocks(opt.memory / 4, image_cost),
        viewer(opt.viewer_dir) {}
};

namespace {

bool ends_with_nocase(const std::string& s, const std::string& e) {
  return s.size() >= e.size() && std::equal(e.rbegin(), e.rend(), s.rbegin(), [](char a, char b) {
           return a == (b >= 'A' && b <= 'Z' ? static_cast<char>(b - 'A' + 'a') : b);
         });
}

}  // namespace

bool is_geojson_overlay(const std::string& path) {
  return ends_with_nocase(path, ".geojson") || ends_with_nocase(path, ".json");
}

std::string nuclei_geojson_beside(const std::string& spec) {
  if (spec.rfind("synthetic:", 0) == 0) return "";
  const size_t slash = spec.find_last_of('/');
  const std::string path = (slash == std::string::npos ? std::string(".") : spec.substr(0, slash)) + "/nuclei.geojson";
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) ? path : "";
}

TileServer::TileServer(const std::vector<std::string>& specs, const std::vector<std::string>& overlays,
                       ServeOptions opt) {
  TW_ASSERT(!specs.empty() && overlays.size() <= specs.size() && opt.threads > 0);
  const std::vector<std::string> names = slide_names(specs);
  // The overlays: the i-th --overlay, else the nuclei.geojson beside the
  // slide (what `tilewave nuclei SLIDE DIR` writes when DIR is the slide's
  // folder). GeoJSON is read first: its store comes out of --memory.
  std::vector<SourcePtr> sources(specs.size()), labels(specs.size());
  std::vector<std::shared_ptr<const PolygonStore>> polygons(specs.size());
  const size_t polygon_budget = opt.memory / 4;
  size_t polygon_bytes = 0, readers = 0;
  for (size_t i = 0; i < specs.size(); ++i) {
    sources[i] = open_source(specs[i]);
    ++readers;
    const std::string overlay = i < overlays.size() ? overlays[i] : nuclei_geojson_beside(specs[i]);
    if (overlay.empty()) continue;
    if (is_geojson_overlay(overlay)) {
      const LevelInfo& l0 = sources[i]->level(0);
      polygons[i] = std::make_shared<const PolygonStore>(
          PolygonStore::load(overlay, l0.width, l0.height, polygon_budget - polygon_bytes));
      polygon_bytes += polygons[i]->bytes();
    } else {
      labels[i] = open_source(overlay);
      ++readers;
    }
  }
  impl_ = std::make_unique<Impl>(std::move(opt), polygon_bytes);
  const ServeOptions& o = impl_->opt;
  // The last quarter of --memory: the readers' decode buffers and caches of
  // decoded stored tiles (a Deep Zoom tile of 254 + overlap straddles up to
  // four stored tiles, which its neighbours share).
  const size_t per_reader = o.memory / 4 / readers;
  for (const std::vector<SourcePtr>* list : {&sources, &labels})
    for (const SourcePtr& src : *list) {
      if (!src) continue;
      size_t decode = 0;
      try {
        decode = reserve_decode_memory(*src, per_reader, o.threads);
      } catch (const BudgetTooSmall& e) {
        // Its message speaks of the reader's share as if it were --memory.
        const size_t give = memory_to_give(o.memory, e.needed, per_reader);
        throw InputError(src->info().path + " needs " + format_bytes(e.needed / 4) +
                         " to decode one stored tile, but each of the " + std::to_string(readers) +
                         " slides and overlays served reads within " + format_bytes(per_reader) +
                         " (a quarter of --memory " + format_bytes(o.memory) + " shared): give --memory " +
                         format_bytes(give) + " or more");
      }
      src->set_read_cache(per_reader > decode ? per_reader - decode : 0);
    }
  for (size_t i = 0; i < specs.size(); ++i) {
    DziGeometry g;
    g.width = sources[i]->level(0).width, g.height = sources[i]->level(0).height, g.tile = o.tile,
    g.overlap = o.overlap;
    slides_.push_back(std::make_unique<Slide>(names[i], sources[i], labels[i], polygons[i], g, &impl_->blocks));
  }
  auto& http = impl_->http;
  const int threads = o.threads;
  http.new_task_queue = [threads] {
    return new BoundedPool(static_cast<size_t>(threads), static_cast<size_t>(4 * threads));
  };
  // httplib's default sets SO_REUSEPORT, with which a second server binds a
  // port already in use and the two share its clients: SO_REUSEADDR only
  // (a restart need not wait for TIME_WAIT), so a port in use is an error.
  http.set_socket_options([this](socket_t sock) {
    int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
    impl_->listen_fd = sock;  // the last one tried is the one bound
  });
  // A response goes out as two writes (head, then body): without
  // TCP_NODELAY the second may wait for the client's delayed ACK (40 ms).
  http.set_tcp_nodelay(true);
  // Requests carry no body; slow or idle clients must not hold a worker long.
  http.set_payload_max_length(0);
  http.set_read_timeout(5, 0);
  http.set_write_timeout(5, 0);
  http.set_keep_alive_timeout(2);
  http.set_keep_alive_max_count(100);

  // Every request goes through one handler that parses the path itself:
  // httplib's router matches std::regex, whose matching recurses once per
  // character of the (attacker's) path.
  http.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
    res.set_header("X-Content-Type-Options", "nosniff");
    if (req.method != "GET" && req.method != "HEAD") {
      res.status = 405;
      res.set_header("Allow", "GET, HEAD");
      res.set_content("method not allowed\n", "text/plain");
      return httplib::Server::HandlerResponse::Handled;
    }
    try {
      // The one query the server reads: /?slide=NAME (httplib decodes it).
      const std::string slide = req.has_param("slide") ? req.get_param_value("slide") : "";
      handle(req.path, req.has_param("slide") ? &slide : nullptr, res);
    } catch (const std::exception& e) {
      // A corrupt tile of one slide: that request fails, the server goes on.
      // The message names files on the server: it goes to the server's log
      // (stderr), the client gets the status.
      std::fprintf(stderr, "tilewave: error: %s: %s\n", req.path.c_str(), e.what());
      res.status = 500;
      res.set_content("the tile could not be made (see the server's log)\n", "text/plain");
    }
    return httplib::Server::HandlerResponse::Handled;
  });
}

TileServer::~TileServer() = default;

bool TileServer::viewer_installed() const {
  return impl_->viewer.installed();
}

void TileServer::handle(const std::string& path, const std::string* query_slide, httplib::Response& res) const {
  const ServeOptions& o = impl_->opt;
  auto not_found = [&] {
    res.status = 404;
    res.set_content("not found\n", "text/plain");
  };
  const Slide* slide = nullptr;
  Route r = parse_route(path);
  if (r.kind == Route::kIndex) {
    // The viewer of the first slide, or of ?slide=NAME; without the viewer
    // installed, the list of slides (with a note saying so).
    if (!impl_->viewer.installed() && !query_slide)
      return res.set_content(index_html(slides_, true), "text/html; charset=utf-8");
    r.kind = Route::kViewer;
    r.name = query_slide ? *query_slide : slides_.front()->name();
  }
  if (r.kind == Route::kDescriptor || r.kind == Route::kTile || r.kind == Route::kViewer) {
    for (const auto& s : slides_)
      if (s->name() == r.name) slide = s.get();
    if (!slide || (r.overlay && !slide->has_overlay())) return not_found();
  }
  switch (r.kind) {
    case Route::kNotFound:
      return not_found();
    case Route::kIndex:  // made a kViewer above
    case Route::kList:
      return res.set_content(index_html(slides_, !impl_->viewer.installed()), "text/html; charset=utf-8");
    case Route::kSlideList:
      return res.set_content(slides_json(slides_), "application/json");
    case Route::kDescriptor:
      return res.set_content(descriptor_xml(slide->geometry(), r.overlay ? TileFormat::kPng : o.format),
                             "application/xml");
    case Route::kViewer:
      if (!impl_->viewer.installed()) {
        res.status = 503;
        return res.set_content(
            "the viewer is not installed: run tools/install-deps.sh (npm ci in " + impl_->viewer.dir() + ")\n",
            "text/plain");
      }
      return res.set_content(impl_->viewer.page(*slide, o.format, slides_), "text/html; charset=utf-8");
    case Route::kAsset: {
      const std::string* bytes = impl_->viewer.find(r.name);
      if (!bytes) return not_found();
      res.set_header("Cache-Control", "public, max-age=86400");
      return res.set_content(*bytes, r.name.size() > 3 && r.name.compare(r.name.size() - 3, 3, ".js") == 0
                                         ? "application/javascript"
                                         : "image/png");
    }
    case Route::kTile:
      break;
  }
  if (!slide->has_tile(r.level, r.col, r.row)) return not_found();
  const int level = static_cast<int>(r.level);
  const std::string key = r.name + (r.overlay ? "/o/" : "/s/") + std::to_string(r.level) + "/" + std::to_string(r.col) +
                          "_" + std::to_string(r.row) + "." + tile_format_extension(r.format);
  const auto bytes = impl_->tiles.get_or_make(key, [&] {
    const Image px = r.overlay ? slide->outline_tile(level, r.col, r.row, o.outline) : slide->tile(level, r.col, r.row);
    return std::make_shared<const std::string>(r.format == TileFormat::kPng ? encode_png(px.view())
                                                                            : encode_jpeg(px.view(), o.quality));
  });
  res.set_header("Cache-Control", "public, max-age=3600");
  res.set_content(*bytes, tile_format_mime(r.format));
}

int TileServer::bind() {
  const ServeOptions& o = impl_->opt;
  int port = o.port;
  if (o.port == 0)
    port = impl_->http.bind_to_any_port(o.bind);
  else if (!impl_->http.bind_to_port(o.bind, o.port))
    port = -1;
  if (port <= 0)
    throw InputError("cannot listen on " + o.bind + ":" + std::to_string(o.port) +
                     " (the port is in use, or the address is not one of this machine's)");
  // Debian's libcpp-httplib is built with a listen backlog of 5: a burst of
  // clients overflows it, and a dropped SYN is retried only after a second
  // (warm-cache runs of tools/bench/serve_tiles.sh fell from ~4000 to ~360
  // tiles/s at times). listen() again on the bound socket raises it.
  ::listen(impl_->listen_fd, SOMAXCONN);
  return port;
}

void TileServer::run() {
  impl_->http.listen_after_bind();
}

void TileServer::stop() {
  impl_->http.stop();
}

bool TileServer::running() const {
  return impl_->http.is_running();
}

}  // namespace tw::serve
