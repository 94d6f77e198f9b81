// `tilewave serve` as a user runs it, started as a child process on a free
// loopback port: descriptors parsed by Python's xml; every tile of every
// level against the lossless pyramid's own pixels read by tifffile (PNG
// exactly, JPEG within codec tolerance) on the Deep Zoom grid computed
// independently and cut by `vips dzsave`; outline tiles against outlines
// computed by numpy from the labels; hostile and malformed requests; many
// concurrent clients; SIGTERM; errors at start.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>

#include <atomic>
#include <fstream>
#include <random>
#include <thread>

#include "io/dzi/dzi_geometry.hpp"
#include "tests/support/test_support.hpp"
#include "tests/tools/serve_server.hpp"

namespace tw {
namespace {

using test::http_get;
using test::http_request;
using test::Server;

int get_status(int port, const std::string& path) {
  return http_get(port, path).status;
}

void write_file(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

// A lossless pyramid of an odd-sized synthetic slide, stored levels down to
// 64 pixels (the levels below come from REDUCE in the server).
std::string make_pyramid(test::TempDir& tmp, const std::string& input, const std::string& name) {
  const std::string out = tmp.file(name);
  const auto r =
      test::run_cli({"pyramid", input, out, "--compression", "deflate", "--tile", "256", "--min-size", "64"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return out;
}

bool have_oracle_modules() {
  return test::python_has("tifffile") && test::python_has("PIL") && test::python_has("scipy");
}

// Fetches every tile of the grid into dir/LEVEL/COL_ROW.ext.
void fetch_all(int port, const std::string& base, const DziGeometry& g, const std::string& ext,
               const std::string& dir) {
  for (int l = 0; l <= g.max_level(); ++l) {
    mkdir((dir + "/" + std::to_string(l)).c_str(), 0755);
    for (int64_t r = 0; r < g.rows(l); ++r)
      for (int64_t c = 0; c < g.cols(l); ++c) {
        const std::string name = std::to_string(c) + "_" + std::to_string(r) + "." + ext;
        const auto res = http_get(port, base + std::to_string(l) + "/" + name);
        ASSERT_EQ(res.status, 200) << "level " << l << " " << name << ": " << res.body;
        ASSERT_EQ(res.header("Content-Type"), ext == "png" ? "image/png" : "image/jpeg");
        write_file(dir + "/" + std::to_string(l) + "/" + name, res.body);
      }
  }
}

TEST(ServeCli, TilesEqualThePyramidsPixels) {
  if (!have_oracle_modules()) GTEST_SKIP() << "tifffile/PIL/scipy missing";
  test::TempDir tmp;
  struct Case {
    const char* input;
    int64_t w, h, tile, overlap;
  };
  // Odd sizes, sizes just above and below tile multiples, a 1-pixel-high
  // strip, tiles 254/64/256/16 and overlaps 0..2.
  for (const Case c : {Case{"synthetic:1031x517", 1031, 517, 254, 1}, Case{"synthetic:255x257,gray", 255, 257, 64, 2},
                       Case{"synthetic:513x1", 513, 1, 256, 0}, Case{"synthetic:97x33", 97, 33, 16, 1}}) {
    const std::string pyr = make_pyramid(tmp, c.input, "in.tif");
    Server s({pyr, "--port", "0", "--compression", "png", "--tile", std::to_string(c.tile), "--overlap",
              std::to_string(c.overlap), "--memory", "64M", "--threads", "4"});
    ASSERT_GT(s.port(), 0) << s.first_line();
    // The descriptor, parsed by Python's xml.
    const auto d = http_get(s.port(), "/slides/in.dzi");
    ASSERT_EQ(d.status, 200);
    EXPECT_EQ(d.header("Content-Type"), "application/xml");
    write_file(tmp.file("in.dzi"), d.body);
    auto x = test::run_python(test::oracle("serve_oracle.py"),
                              {"descriptor", tmp.file("in.dzi"), std::to_string(c.w), std::to_string(c.h),
                               std::to_string(c.tile), std::to_string(c.overlap), "png"});
    EXPECT_EQ(x.exit_code, 0) << x.err;

    DziGeometry g{c.w, c.h, c.tile, c.overlap};
    const std::string dir = tmp.file("png");
    mkdir(dir.c_str(), 0755);
    fetch_all(s.port(), "/slides/in_files/", g, "png", dir);
    const bool vips = system("vips --version > /dev/null 2>&1") == 0;
    std::vector<std::string> args{"tiles", pyr, dir, std::to_string(c.tile), std::to_string(c.overlap), "png"};
    if (vips) args.push_back("--vips");
    auto r = test::run_python(test::oracle("serve_oracle.py"), args);
    EXPECT_EQ(r.exit_code, 0) << c.input << ": " << r.err;
    EXPECT_NE(r.out.find("\"extra_files\": 0"), std::string::npos) << r.out;
    if (vips) {
      EXPECT_NE(r.out.find("vips_tiles"), std::string::npos) << r.out;
    }

    // `tilewave pyramid IN OUT.dzi` writes the same tiles: they equal the
    // same reference, so a served tile equals the written one.
    const auto w = test::run_cli({"pyramid", c.input, tmp.file("w.dzi"), "--compression", "png", "--tile",
                                  std::to_string(c.tile), "--overlap", std::to_string(c.overlap)});
    ASSERT_EQ(w.exit_code, 0) << w.err;
    auto wr =
        test::run_python(test::oracle("serve_oracle.py"),
                         {"tiles", pyr, tmp.file("w_files"), std::to_string(c.tile), std::to_string(c.overlap), "png"});
    EXPECT_EQ(wr.exit_code, 0) << "tilewave pyramid OUT.dzi: " << wr.err;
    system(("rm -rf " + tmp.file("w_files") + " " + tmp.file("w.dzi")).c_str());

    // JPEG tiles of the same grid within codec tolerance (the first case).
    if (c.tile == 254) {
      const std::string jdir = tmp.file("jpeg");
      mkdir(jdir.c_str(), 0755);
      fetch_all(s.port(), "/slides/in_files/", g, "jpeg", jdir);
      auto j = test::run_python(test::oracle("serve_oracle.py"),
                                {"tiles", pyr, jdir, std::to_string(c.tile), std::to_string(c.overlap), "jpeg"});
      EXPECT_EQ(j.exit_code, 0) << j.err;
      system(("rm -rf " + jdir).c_str());
    }
    system(("rm -rf " + dir).c_str());
    EXPECT_EQ(s.stop(SIGTERM, 10), 0);
  }
}

// A source with a single level (a synthetic slide): every level below is
// made by REDUCE steps on the fly, through the cache of blocks; it must equal
// the pyramid that `tilewave pyramid` makes of the same input.
TEST(ServeCli, LevelsMadeOnTheFlyEqualTheCascade) {
  if (!have_oracle_modules()) GTEST_SKIP() << "tifffile/PIL/scipy missing";
  test::TempDir tmp;
  // A one-level lossless TIFF (a synthetic slide has levels of its own).
  const std::string flat = tmp.file("flat.tif");
  const auto f = test::run_cli(
      {"pyramid", "synthetic:1500x700", flat, "--compression", "deflate", "--tile", "256", "--min-size", "4096"});
  ASSERT_EQ(f.exit_code, 0) << f.err;
  const std::string pyr = make_pyramid(tmp, flat, "ref.tif");
  // A small --memory: blocks are evicted and made again while tiles are made.
  Server s({flat, "--port", "0", "--compression", "png", "--memory", "16M", "--threads", "2"});
  ASSERT_GT(s.port(), 0) << s.first_line();
  const DziGeometry g{1500, 700, 254, 1};
  const std::string dir = tmp.file("png");
  mkdir(dir.c_str(), 0755);
  fetch_all(s.port(), "/slides/flat_files/", g, "png", dir);
  auto r = test::run_python(test::oracle("serve_oracle.py"), {"tiles", pyr, dir, "254", "1", "png"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(s.stop(SIGTERM, 10), 0);
}

std::string make_labels(test::TempDir& tmp, const std::string& input) {
  const std::string out = tmp.file("labels.tif");
  const auto r = test::run_cli(
      {"run", input, out, "filter gray", "filter invert", "filter threshold --value 140", "label", "--min-size", "64"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return out;
}

TEST(ServeCli, OutlineTilesEqualTheLabelsOutlines) {
  if (!have_oracle_modules()) GTEST_SKIP() << "tifffile/PIL/scipy missing";
  test::TempDir tmp;
  const std::string input = "synthetic:700x389";
  const std::string pyr = make_pyramid(tmp, input, "slide.tif");
  const std::string labels = make_labels(tmp, input);
  Server s({pyr, "--overlay", labels, "--port", "0", "--outline-color", "255,0,255", "--tile", "128"});
  ASSERT_GT(s.port(), 0) << s.first_line();
  const DziGeometry g{700, 389, 128, 1};
  const std::string dir = tmp.file("o");
  mkdir(dir.c_str(), 0755);
  fetch_all(s.port(), "/overlays/slide_files/", g, "png", dir);
  auto r = test::run_python(test::oracle("serve_oracle.py"), {"outlines", labels, dir, "128", "1", "255,0,255"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.find("\"outline_pixels\": 0}"), std::string::npos) << "no outlines at all: " << r.out;
  // The outline layer is PNG only, and exists only for slides given one.
  EXPECT_EQ(get_status(s.port(), "/overlays/slide_files/0/0_0.jpeg"), 404);
  EXPECT_EQ(get_status(s.port(), "/overlays/slide.dzi"), 200);
  EXPECT_EQ(s.stop(SIGTERM, 10), 0);
}

// GeoJSON overlays: `tilewave features` of the labels (axis-parallel rings
// along the pixels' edges, holes, MultiPolygons) and a hand-written file
// with edges of every slope, half-pixel and edge-of-slide vertices, as a bare
// array of features; every overlay tile of every level against the rings
// drawn by skimage.draw.line (geojson_outlines_oracle.py says the rule).
TEST(ServeCli, GeoJsonOutlineTilesEqualSkimageLines) {
  if (!have_oracle_modules() || !test::python_has("skimage")) GTEST_SKIP() << "tifffile/PIL/scipy/skimage missing";
  test::TempDir tmp;
  const std::string input = "synthetic:700x389";
  const std::string pyr = make_pyramid(tmp, input, "slide.tif");
  const std::string labels = make_labels(tmp, input);
  const std::string features = tmp.file("cells.geojson");
  const auto f = test::run_cli({"features", labels, features});
  ASSERT_EQ(f.exit_code, 0) << f.err;
  const std::string drawn = tmp.file("drawn.json");
  write_file(drawn, R"([
 {"type": "Feature", "properties": {"name": "star", "nested": [[[{"a": [1, 2]}]]]},
  "geometry": {"coordinates": [[[350, 10], [420.5, 190], [699, 200.5], [420, 230], [350, 388], [280, 230],
                                [1, 200], [280, 190], [350, 10]],
                               [[340, 150], [360, 150], [360, 170], [340, 170], [340, 150]]],
               "type": "Polygon"}},
 {"type": "Feature", "geometry": {"type": "MultiPolygon", "coordinates": [
   [[[0, 0], [700, 389], [0, 389], [0, 0]]],
   [[[600, 0], [700, 0], [700, 50.75], [600, 0]]]]}, "properties": {}}
])");
  Server s({pyr, pyr, "--overlay", features, "--overlay", drawn, "--port", "0", "--outline-color", "255,0,255",
            "--tile", "128"});
  ASSERT_GT(s.port(), 0) << s.first_line();
  const DziGeometry g{700, 389, 128, 1};
  for (const auto& [name, file] : {std::pair<std::string, std::string>{"slide", features}, {"slide-2", drawn}}) {
    const std::string dir = tmp.file("o-" + name);
    mkdir(dir.c_str(), 0755);
    fetch_all(s.port(), "/overlays/" + name + "_files/", g, "png", dir);
    auto r = test::run_python(test::oracle("geojson_outlines_oracle.py"),
                              {file, dir, "700", "389", "128", "1", "255,0,255"});
    EXPECT_EQ(r.exit_code, 0) << name << ": " << r.err;
    EXPECT_EQ(r.out.find("\"outline_pixels\": 0}"), std::string::npos) << "no outlines at all: " << r.out;
  }
  const auto list = nlohmann::json::parse(http_get(s.port(), "/slides").body);
  EXPECT_EQ(list[1]["overlay"], "/overlays/slide-2.dzi");
  EXPECT_EQ(s.stop(SIGTERM, 10), 0);
}

// `tilewave nuclei SLIDE DIR` with the slide in DIR: the server finds
// DIR/nuclei.geojson by itself and draws it; --overlay still wins.
TEST(ServeCli, NucleiGeoJsonBesideTheSlideIsTheOverlay) {
  if (!have_oracle_modules() || !test::python_has("skimage")) GTEST_SKIP() << "tifffile/PIL/scipy/skimage missing";
  test::TempDir tmp;
  const std::string pyr = make_pyramid(tmp, "synthetic:900x500", "case.tif");
  const auto n = test::run_cli({"nuclei", pyr, tmp.path()});
  ASSERT_EQ(n.exit_code, 0) << n.err;
  {
    Server s({pyr, "--port", "0", "--tile", "256"});
    ASSERT_GT(s.port(), 0) << s.first_line();
    const auto list = nlohmann::json::parse(http_get(s.port(), "/slides").body);
    EXPECT_EQ(list[0]["overlay"], "/overlays/case.dzi");
    const std::string dir = tmp.file("o");
    mkdir(dir.c_str(), 0755);
    fetch_all(s.port(), "/overlays/case_files/", DziGeometry{900, 500, 256, 1}, "png", dir);
    auto r = test::run_python(test::oracle("geojson_outlines_oracle.py"),
                              {tmp.file("nuclei.geojson"), dir, "900", "500", "256", "1", "0,255,0"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out.find("\"rings\": 0,"), std::string::npos) << "no nuclei: " << r.out;
    EXPECT_EQ(s.stop(SIGTERM, 10), 0);
  }
  // An explicit label overlay replaces the one found beside the slide.
  Server s({pyr, "--overlay", tmp.file("labels.tif"), "--port", "0"});
  ASSERT_GT(s.port(), 0) << s.first_line();
  EXPECT_EQ(get_status(s.port(), "/overlays/case.dzi"), 200);
  EXPECT_EQ(s.stop(SIGTERM, 10), 0);
  // A slide elsewhere has no overlay.
  Server other({"synthetic:300x200", "--port", "0"});
  ASSERT_GT(other.port(), 0) << other.first_line();
  EXPECT_EQ(get_status(other.port(), "/overlays/synthetic.dzi"), 404);
  EXPECT_EQ(other.stop(SIGTERM, 10), 0);
}

// Square nuclei on a grid, as QuPath detections.
std::string square_nuclei(int64_t w, int64_t h, int64_t step) {
  std::string out = "{\"type\":\"FeatureCollection\",\"features\":[";
  bool first = true;
  for (int64_t y = 0; y + 5 <= h; y += step)
    for (int64_t x = 0; x + 5 <= w; x += step) {
      const std::string X0 = std::to_string(x), Y0 = std::to_string(y), X1 = std::to_string(x + 5),
                        Y1 = std::to_string(y + 5);
      out += std::string(first ? "" : ",") +
             "{\"type\":\"Feature\",\"geometry\":{\"type\":\"Polygon\",\"coordinates\":[[[" + X0 + "," + Y0 + "],[" +
             X1 + "," + Y0 + "],[" + X1 + "," + Y1 + "],[" + X0 + "," + Y1 + "],[" + X0 + "," + Y0 +
             "]]]},\"properties\":{\"objectType\":\"detection\"}}";
      first = false;
    }
  return out + "]}\n";
}

// A GeoJSON whose polygons need more than a quarter of --memory is refused
// at start, naming the --memory it needs; with that much it is served.
TEST(ServeCli, GeoJsonOverTheMemoryBudgetIsRefused) {
  test::TempDir tmp;
  test::RunOptions limit;
  limit.terminate_after = 20;
  const std::string big = tmp.file("big.geojson");
  write_file(big, square_nuclei(3000, 3000, 7));  // 183k rings, 918k vertices: ~11 MiB
  const auto r =
      test::run_cli({"serve", "synthetic:3000x3000", "--overlay", big, "--memory", "16M", "--port", "0"}, limit);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_EQ(r.err.rfind("tilewave: error: " + big + ": its outlines", 0), 0u) << r.err;
  const size_t p = r.err.find("give --memory ");
  ASSERT_NE(p, std::string::npos) << r.err;
  const int64_t need = std::atoll(r.err.c_str() + p + 14);
  EXPECT_GT(need, 16);
  EXPECT_LT(need, 200) << r.err;
  Server s({"synthetic:3000x3000", "--overlay", big, "--memory", std::to_string(need) + "M", "--port", "0"});
  ASSERT_GT(s.port(), 0) << "with the --memory the error asked for: " << s.first_line();
  EXPECT_EQ(get_status(s.port(), "/overlays/synthetic_files/12/0_0.png"), 200);
  EXPECT_EQ(s.stop(SIGTERM, 10), 0);
}

// Many slides share a quarter of --memory for their readers: a share too
// small for a stored tile is refused at start in terms of the --memory the
// user gave (not of the share), and the --memory it names serves them.
TEST(ServeCli, ManySlidesOverTheReadersShareAreRefusedNamingTheMemoryToGive) {
  test::TempDir tmp;
  test::write_tiff(tmp.file("s.tif"), test::pattern_image(kRgb8, 600, 600, 3).view(), test::TiffSpec{});
  std::vector<std::string> args = {"serve"};
  for (int i = 0; i < 8; ++i) args.push_back(tmp.file("s.tif"));
  test::RunOptions limit;
  limit.terminate_after = 20;
  std::vector<std::string> small = args;
  small.insert(small.end(), {"--memory", "16M", "--port", "0"});
  const auto r = test::run_cli(small, limit);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_NE(r.err.find("a quarter of --memory 16.0 MiB shared"), std::string::npos) << r.err;
  const size_t p = r.err.find("give --memory ");
  ASSERT_NE(p, std::string::npos) << r.err;
  const int64_t need = std::atoll(r.err.c_str() + p + 14);
  EXPECT_GT(need, 16) << r.err;
  std::vector<std::string> enough(args.begin() + 1, args.end());
  enough.insert(enough.end(), {"--memory", std::to_string(need) + "M", "--port", "0"});
  Server s(enough);
  ASSERT_GT(s.port(), 0) << "with the --memory the error asked for: " << s.first_line();
  EXPECT_EQ(s.stop(SIGTERM, 10), 0);
}

TEST(ServeCli, BadGeoJsonIsAOneLineErrorAtStart) {
  test::TempDir tmp;
  test::RunOptions limit;
  limit.terminate_after = 20;
  auto feature = [](const std::string& geometry) {
    return "{\"type\":\"FeatureCollection\",\"features\":[{\"type\":\"Feature\",\"geometry\":" + geometry +
           ",\"properties\":{}}]}";
  };
  auto poly = [&](const std::string& coords) {
    return feature("{\"type\":\"Polygon\",\"coordinates\":" + coords + "}");
  };
  const std::string square = "[[[1,1],[9,1],[9,9],[1,9],[1,1]]]";
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"empty file", ""},
      {"not json", "hello"},
      {"truncated", poly(square).substr(0, 60)},
      {"trailing junk", poly(square) + "]"},
      {"NaN", poly("[[[1,1],[NaN,1],[9,9],[1,1]]]")},
      {"Infinity", poly("[[[1,1],[Infinity,1],[9,9],[1,1]]]")},
      {"1e999", poly("[[[1,1],[1e999,1],[9,9],[1,9],[1,1]]]")},
      {"huge integer", poly("[[[1,1],[123456789012345678901234567890,1],[9,9],[1,9],[1,1]]]")},
      {"negative", poly("[[[-1,1],[9,1],[9,9],[1,9],[-1,1]]]")},
      {"outside the slide", poly("[[[1,1],[301,1],[9,9],[1,9],[1,1]]]")},
      {"string coordinate", poly("[[[\"1\",1],[9,1],[9,9],[1,9],[\"1\",1]]]")},
      {"null coordinate", poly("[[[null,1],[9,1],[9,9],[1,9],[1,1]]]")},
      {"object coordinate", poly("[[{\"x\":1},[9,1],[9,9],[1,9],[1,1]]]")},
      {"not closed", poly("[[[1,1],[9,1],[9,9],[1,9],[1,2]]]")},
      {"3 positions", poly("[[[1,1],[9,1],[1,1]]]")},
      {"1-number position", poly("[[[1],[9,1],[9,9],[1,9],[1]]]")},
      {"4-number position", poly("[[[1,1,0,0],[9,1],[9,9],[1,9],[1,1]]]")},
      {"empty coordinates", poly("[]")},
      {"empty ring", poly("[[]]")},
      {"uneven nesting", poly("[[[1,1],[9,1],[9,9],[1,9],[[1,1]]]]")},
      {"mixed position", poly("[[[1,[1]],[9,1],[9,9],[1,9],[1,1]]]")},
      {"MultiPolygon nested as Polygon", feature("{\"type\":\"MultiPolygon\",\"coordinates\":" + square + "}")},
      {"Polygon nested as MultiPolygon", feature("{\"type\":\"Polygon\",\"coordinates\":[" + square + "]}")},
      {"Point", feature("{\"type\":\"Point\",\"coordinates\":[1,1]}")},
      {"no type", feature("{\"coordinates\":" + square + "}")},
      {"no coordinates", feature("{\"type\":\"Polygon\"}")},
      {"null geometry", feature("null")},
      {"numeric geometry", feature("7")},
      {"feature without geometry", "{\"type\":\"FeatureCollection\",\"features\":[{\"type\":\"Feature\"}]}"},
      {"empty feature", "{\"type\":\"FeatureCollection\",\"features\":[{}]}"},
      {"features not objects", "{\"type\":\"FeatureCollection\",\"features\":[1,2]}"},
      {"features an object", "{\"type\":\"FeatureCollection\",\"features\":{}}"},
      {"no features", "{\"type\":\"FeatureCollection\"}"},
      {"a lone Feature", "{\"type\":\"Feature\",\"geometry\":{\"type\":\"Polygon\",\"coordinates\":" + square + "}}"},
      {"wrong feature type", "{\"type\":\"FeatureCollection\",\"features\":[{\"type\":\"Point\"}]}"},
      {"a number", "42"},
      {"deep nesting", std::string(100000, '[') + std::string(100000, ']')},
      {"deep nesting in properties",
       "{\"type\":\"FeatureCollection\",\"features\":[{\"type\":\"Feature\",\"properties\":" + std::string(50000, '[') +
           std::string(50000, ']') + "}]}"},
      {"invalid UTF-8", "{\"type\":\"FeatureCollection\",\"features\":[],\"x\":\"\xff\xfe\"}"},
  };
  for (const auto& [what, text] : bad) {
    const std::string file = tmp.file("bad.geojson");
    write_file(file, text);
    const auto r = test::run_cli({"serve", "synthetic:300x200", "--overlay", file, "--port", "0"}, limit);
    EXPECT_NE(r.exit_code, 0) << what;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << what << ": " << r.err;
    EXPECT_EQ(r.err.rfind("tilewave: error: " + file + ": ", 0), 0u) << what << ": " << r.err;
  }
  const auto missing = test::run_cli({"serve", "synthetic:300x200", "--overlay", tmp.file("no.geojson")}, limit);
  EXPECT_NE(missing.exit_code, 0);
  EXPECT_EQ(std::count(missing.err.begin(), missing.err.end(), '\n'), 1) << missing.err;
  // A bad nuclei.geojson found beside the slide is an error too (not ignored).
  const std::string slide = make_pyramid(tmp, "synthetic:300x200", "s.tif");
  write_file(tmp.file("nuclei.geojson"), poly("[[[1,1],[9,1]]]"));
  const auto beside = test::run_cli({"serve", slide, "--port", "0"}, limit);
  EXPECT_NE(beside.exit_code, 0);
  EXPECT_NE(beside.err.find("nuclei.geojson: "), std::string::npos) << beside.err;
  // Valid edge cases start: no features at all, vertices on the slide's edge.
  write_file(tmp.file("nuclei.geojson"), "{\"type\":\"FeatureCollection\",\"features\":[]}");
  Server empty({slide, "--port", "0"});
  ASSERT_GT(empty.port(), 0) << empty.first_line();
  EXPECT_EQ(get_status(empty.port(), "/overlays/s_files/9/0_0.png"), 200);
  EXPECT_EQ(empty.stop(SIGTERM, 10), 0);
}

TEST(ServeCli, HostilePathsAndJunkAreRefused) {
  test::TempDir tmp;
  write_file(tmp.file("secret.txt"), "root:x:0:0:secret\n");
  Server s({"synthetic:600x400", "--port", "0", "--threads", "2"});
  ASSERT_GT(s.port(), 0) << s.first_line();
  const int p = s.port();
  EXPECT_EQ(get_status(p, "/slides/synthetic.dzi"), 200);
  EXPECT_EQ(get_status(p, "/slides/synthetic_files/10/2_1.jpeg"), 200);
  EXPECT_EQ(get_status(p, "/"), 200);
  EXPECT_EQ(get_status(p, "/list"), 200);
  EXPECT_EQ(get_status(p, "/slides"), 200);
  for (const char* q : {"/?slide=nosuch", "/?slide=..%2f..%2fetc%2fpasswd", "/?slide=", "/?slide=%00",
                        "/?slide=synthetic%2f..", "/list/x", "/view/"})
    EXPECT_EQ(get_status(p, q), 404) << q;
  const std::string secret = tmp.file("secret.txt");
  const std::vector<std::string> hostile = {"/slides/../../../../etc/passwd",
                                            "/slides/%2e%2e/%2e%2e/%2e%2e/etc/passwd",
                                            "/etc/passwd",
                                            "//etc/passwd",
                                            "/slides/synthetic_files/..%2f..%2f..%2fetc%2fpasswd",
                                            "/slides/..%2F..%2Fetc%2Fpasswd",
                                            "/slides/%2Fetc%2Fpasswd",
                                            "/slides" + secret,
                                            "/slides/synthetic_files/10/2_1.jpeg%00.png",
                                            "/slides/synthetic%00.dzi",
                                            "/view/..%2f..%2fetc%2fpasswd",
                                            "/viewer/../../CMakeLists.txt",
                                            "/viewer/%2e%2e/%2e%2e/CMakeLists.txt",
                                            "/viewer/images/..%2f..%2f..%2fpackage.json",
                                            "/viewer/package.json",
                                            "/viewer/index.html",
                                            "/slides/nosuch.dzi",
                                            "/slides/.dzi",
                                            "/slides/synthetic_files/11/0_0.jpeg",
                                            "/slides/synthetic_files/10/3_0.jpeg",
                                            "/slides/synthetic_files/10/0_2.jpeg",
                                            "/slides/synthetic_files/99999999999999999999/0_0.jpeg",
                                            "/slides/synthetic_files/10/99999999999999999999_0.jpeg",
                                            "/slides/synthetic_files/10/4294967296_0.jpeg",
                                            "/slides/synthetic_files/-1/0_0.jpeg",
                                            "/slides/synthetic_files/10/-1_0.jpeg",
                                            "/slides/synthetic_files/010/0_0.jpeg",
                                            "/slides/synthetic_files/+10/0_0.jpeg",
                                            "/slides/synthetic_files/10/0x1_0.jpeg",
                                            "/slides/synthetic_files/10/0_0.gif",
                                            "/slides/synthetic_files/10/0_0",
                                            "/slides/synthetic_files/10/0_0_0.jpeg",
                                            "/slides/synthetic_files/10/0_0.jpeg/",
                                            "/slides/synthetic_files/10//0_0.jpeg",
                                            "/slides/synthetic_files/1e1/0_0.jpeg",
                                            "/slides/synthetic_files/ 10/0_0.jpeg",
                                            "/overlays/synthetic.dzi",
                                            "/overlays/synthetic_files/0/0_0.png",
                                            "/view/nosuch",
                                            "/x",
                                            "/slides/",
                                            "/" + std::string(6000, 'a')};
  for (const std::string& path : hostile) {
    const auto reply = http_get(p, path);
    const int code = reply.status;
    const std::string& body = reply.body;
    EXPECT_TRUE(code == 400 || code == 404 || code == 414) << path << " -> " << code;
    EXPECT_EQ(body.find("root:"), std::string::npos) << path;
    EXPECT_EQ(body.find("cmake_minimum_required"), std::string::npos) << path;
  }
  // Malformed requests: no HTTP answer, a 4xx, or (HTTP/9.9 read as 1.x,
  // a negative length as none) the page asked for; never a 5xx, and the
  // server goes on.
  for (const std::string& junk :
       {std::string("GARBAGE\r\n\r\n"), std::string("GET\r\n\r\n"), std::string("GET / HTTP/9.9\r\n\r\n"),
        std::string("GET /slides/synthetic.dzi HTTP/1.1\r\nHost: x\r\nContent-Length: -5\r\n\r\n"),
        std::string("GET /slides/synthetic.dzi HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999999\r\n\r\n"),
        std::string("\x00\x01\x02\xff\r\n\r\n", 8), std::string(100000, 'A')}) {
    const int code = http_request(p, junk, true).status;
    EXPECT_TRUE(code == 0 || code == 200 || (code >= 400 && code < 500)) << junk.substr(0, 60) << " -> " << code;
  }
  EXPECT_EQ(http_request(p, "POST /slides/synthetic.dzi HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n").status, 405);
  EXPECT_EQ(http_request(p, "DELETE / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").status, 405);
  EXPECT_EQ(get_status(p, "/slides/synthetic_files/10/2_1.jpeg"), 200);  // still serving
  EXPECT_EQ(s.stop(SIGTERM, 10), 0);
}

// 64 clients x 50 requests at once (tiles of every level, repeats, bad
// ones): every request answered with its right status or refused cleanly,
// no crash, memory bounded.
TEST(ServeCli, ManyConcurrentClients) {
  Server s({"synthetic:3000x2000", "--port", "0", "--threads", "4", "--memory", "64M"});
  ASSERT_GT(s.port(), 0) << s.first_line();
  const DziGeometry g{3000, 2000, 254, 1};
  std::atomic<int> ok{0}, not_found{0}, refused{0}, wrong{0};
  std::vector<std::thread> clients;
  for (int t = 0; t < 64; ++t) {
    clients.emplace_back([&, t] {
      std::mt19937 rng(static_cast<unsigned>(t));
      for (int i = 0; i < 50; ++i) {
        const int l = static_cast<int>(rng() % static_cast<unsigned>(g.max_level() + 1));
        const bool bad = rng() % 8 == 0;
        const int64_t c = bad ? g.cols(l) : static_cast<int64_t>(rng() % static_cast<unsigned>(g.cols(l)));
        const int64_t r = static_cast<int64_t>(rng() % static_cast<unsigned>(g.rows(l)));
        const std::string path = "/slides/synthetic_files/" + std::to_string(l) + "/" + std::to_string(c) + "_" +
                                 std::to_string(r) + (rng() % 2 ? ".jpeg" : ".png");
        const int status = http_get(s.port(), path).status;
        if (status == 0)
          ++refused;
        else if (status == (bad ? 404 : 200))
          (bad ? not_found : ok)++;
        else
          ++wrong;
      }
    });
  }
  for (auto& c : clients) c.join();
  EXPECT_EQ(wrong, 0);
  EXPECT_EQ(ok + not_found + refused, 64 * 50);
  EXPECT_GT(ok, 64 * 50 / 2) << "refused: " << refused;
  const size_t rss = s.peak_rss();
  if (!test::kSanitizerBuild) {
    EXPECT_LT(rss, size_t{200} << 20) << "peak RSS " << rss;
  }
  std::string rest;
  EXPECT_EQ(s.stop(SIGTERM, 20, &rest), 0);
  EXPECT_NE(rest.find("stopped"), std::string::npos) << rest;
}

// Out of core: a slide 9x --memory, every tile of its lower levels and a
// sample of the full-resolution ones fetched by 8 clients; the server's peak
// memory stays near the budget (caches are bounded, nothing holds a level).
TEST(ServeCli, MemoryBoundedOnASlideLargerThanTheBudget) {
  test::TempDir tmp;
  const std::string slide = tmp.file("big.tif");
  const auto p = test::run_cli({"pyramid", "synthetic:8000x6000", slide});
  ASSERT_EQ(p.exit_code, 0) << p.err;
  Server s({slide, "--port", "0", "--threads", "4", "--memory", "16M"});
  ASSERT_GT(s.port(), 0) << s.first_line();
  const DziGeometry g{8000, 6000, 254, 1};
  std::vector<std::string> paths;
  for (int l = 0; l < g.max_level(); ++l)
    for (int64_t r = 0; r < g.rows(l); ++r)
      for (int64_t c = 0; c < g.cols(l); ++c)
        paths.push_back("/slides/big_files/" + std::to_string(l) + "/" + std::to_string(c) + "_" + std::to_string(r) +
                        ".jpeg");
  const int top = g.max_level();
  for (int64_t i = 0; i < 300; ++i)
    paths.push_back("/slides/big_files/" + std::to_string(top) + "/" + std::to_string(i * 7 % g.cols(top)) + "_" +
                    std::to_string(i * 13 % g.rows(top)) + ".jpeg");
  std::atomic<size_t> next{0};
  std::atomic<int> failed{0};
  std::vector<std::thread> clients;
  for (int t = 0; t < 8; ++t)
    clients.emplace_back([&] {
      for (size_t i; (i = next++) < paths.size();)
        if (http_get(s.port(), paths[i]).status != 200) ++failed;
    });
  for (auto& c : clients) c.join();
  EXPECT_EQ(failed, 0);
  const size_t rss = s.peak_rss();
  if (!test::kSanitizerBuild) {
    // 16 MiB of budget plus the process's fixed overhead (code, libraries,
    // thread stacks, allocator slack): far below the slide's 144 MB.
    EXPECT_LT(rss, size_t{80} << 20) << "peak RSS " << rss;
  }
  EXPECT_EQ(s.stop(SIGTERM, 10), 0);
}

// A slide whose tiles are damaged after its header was read: the requests
// for those tiles fail with 500 and a one-line log, the others are served.
TEST(ServeCli, CorruptTilesFailAloneAndTheServerGoesOn) {
  test::TempDir tmp;
  const std::string slide = tmp.file("bad.tif");
  const auto p =
      test::run_cli({"pyramid", "synthetic:1024x1024", slide, "--compression", "deflate", "--min-size", "512"});
  ASSERT_EQ(p.exit_code, 0) << p.err;
  // Level 0's tiles come first in the file: overwrite a run of them.
  {
    std::fstream f(slide, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(64 * 1024);
    const std::string junk(256 * 1024, '\x5a');
    f.write(junk.data(), static_cast<std::streamsize>(junk.size()));
  }
  Server s({slide, "--port", "0", "--threads", "2"});
  ASSERT_GT(s.port(), 0) << s.first_line();
  const DziGeometry g{1024, 1024, 254, 1};
  const int top = g.max_level();
  int ok = 0, failed = 0, other = 0;
  for (int64_t r = 0; r < g.rows(top); ++r)
    for (int64_t c = 0; c < g.cols(top); ++c) {
      const int code = get_status(s.port(), "/slides/bad_files/" + std::to_string(top) + "/" + std::to_string(c) + "_" +
                                                std::to_string(r) + ".png");
      (code == 200 ? ok : code == 500 ? failed : other)++;
    }
  EXPECT_GT(failed, 0);
  EXPECT_EQ(other, 0);
  EXPECT_EQ(get_status(s.port(), "/slides/bad_files/0/0_0.png"), 200);  // from the intact level 1
  EXPECT_EQ(get_status(s.port(), "/slides"), 200);
  EXPECT_EQ(ok + failed, g.cols(top) * g.rows(top));
  EXPECT_EQ(s.stop(SIGTERM, 10), 0);
}

TEST(ServeCli, SigintAndSigtermStopCleanly) {
  for (int sig : {SIGINT, SIGTERM}) {
    Server s({"synthetic:300x200", "--port", "0"});
    ASSERT_GT(s.port(), 0) << s.first_line();
    EXPECT_EQ(get_status(s.port(), "/slides/synthetic.dzi"), 200);
    std::string rest;
    EXPECT_EQ(s.stop(sig, 10, &rest), 0) << "signal " << sig;
    EXPECT_NE(rest.find("stopped"), std::string::npos) << rest;
  }
}

TEST(ServeCli, ErrorsAtStartAreOneLine) {
  test::TempDir tmp;
  // A server that starts by mistake is stopped after 20 s (and fails).
  test::RunOptions limit;
  limit.terminate_after = 20;
  auto one_line = [](const test::RunResult& r, const std::string& what) {
    EXPECT_NE(r.exit_code, 0) << what;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << what << ": " << r.err;
    EXPECT_EQ(r.err.rfind("tilewave: error: ", 0), 0u) << what << ": " << r.err;
  };
  // The port in use.
  Server s({"synthetic:300x200", "--port", "0"});
  ASSERT_GT(s.port(), 0);
  one_line(test::run_cli({"serve", "synthetic:300x200", "--port", std::to_string(s.port())}, limit), "port in use");
  one_line(test::run_cli({"serve", tmp.file("missing.tif"), "--port", "0"}, limit), "missing slide");
  write_file(tmp.file("junk.tif"), "II*\0junk junk junk");
  one_line(test::run_cli({"serve", tmp.file("junk.tif"), "--port", "0"}, limit), "corrupt slide");
  one_line(test::run_cli({"serve", "synthetic:300x200,16bit", "--port", "0"}, limit), "16-bit slide");
  one_line(test::run_cli({"serve", "synthetic:300x200", "--overlay", "synthetic:300x200", "--port", "0"}, limit),
           "RGB overlay");
  one_line(test::run_cli({"serve", "synthetic:300x200", "--bind", "203.0.113.7", "--port", "0"}, limit),
           "foreign address");
  one_line(test::run_cli({"serve", "--port", "0"}, limit), "no slide");
  one_line(test::run_cli({"serve", "synthetic:300x200", "--port", "70000"}, limit), "port range");
  one_line(test::run_cli({"serve", "synthetic:300x200", "--tile", "4", "--overlap", "2"}, limit), "overlap too large");
  EXPECT_EQ(s.stop(SIGTERM, 10), 0);
}

TEST(ServeCli, ListsAndViewerPage) {
  test::TempDir tmp;
  Server s({"synthetic:300x200,mpp=0.25", "synthetic:64x64", "--port", "0"});
  ASSERT_GT(s.port(), 0) << s.first_line();
  const int p = s.port();
  const auto list = http_get(p, "/slides");
  ASSERT_EQ(list.status, 200);
  const auto j = nlohmann::json::parse(list.body);
  ASSERT_EQ(j.size(), 2u);
  EXPECT_EQ(j[0]["name"], "synthetic");
  EXPECT_EQ(j[1]["name"], "synthetic-2");  // names made unique
  EXPECT_EQ(j[0]["dzi"], "/slides/synthetic.dzi");
  EXPECT_EQ(j[0]["width"], 300);
  EXPECT_DOUBLE_EQ(j[0]["mpp_x"].get<double>(), 0.25);
  EXPECT_EQ(j[1]["view"], "/?slide=synthetic-2");
  const auto list_page = http_get(p, "/list");
  ASSERT_EQ(list_page.status, 200);
  EXPECT_NE(list_page.body.find("href=\"/?slide=synthetic-2\""), std::string::npos);
  EXPECT_EQ(get_status(p, "/?slide=nosuch"), 404);
  const auto view = http_get(p, "/view/synthetic");
  if (view.status == 503) {
    // Without the viewer, / is the list of slides (saying so).
    const auto root = http_get(p, "/");
    EXPECT_EQ(root.status, 200);
    EXPECT_NE(root.body.find("not installed"), std::string::npos);
    GTEST_SKIP() << "OpenSeadragon not installed (tools/install-deps.sh)";
  }
  ASSERT_EQ(view.status, 200);
  EXPECT_NE(view.body.find("/slides/synthetic.dzi"), std::string::npos);
  EXPECT_EQ(view.body.find("@TILEWAVE"), std::string::npos);
  // / is the first slide's viewer, /?slide=NAME another's, /view/NAME its alias;
  // the page's config names the slide and lists all (the picker).
  auto config = [](const std::string& page) {
    const size_t a = page.find("const config = "), b = page.find(";\n", a);
    return nlohmann::json::parse(page.substr(a + 15, b - a - 15));
  };
  const auto root = http_get(p, "/");
  ASSERT_EQ(root.status, 200);
  EXPECT_EQ(root.body, view.body);
  EXPECT_EQ(config(root.body)["dzi"], "/slides/synthetic.dzi");
  const auto second = http_get(p, "/?slide=synthetic-2");
  ASSERT_EQ(second.status, 200);
  const auto c2 = config(second.body);
  EXPECT_EQ(c2["name"], "synthetic-2");
  EXPECT_EQ(c2["dzi"], "/slides/synthetic-2.dzi");
  EXPECT_EQ(c2["slides"], nlohmann::json::parse(R"(["synthetic", "synthetic-2"])"));
  EXPECT_EQ(config(http_get(p, "/?slide=synthetic&x=1").body)["name"], "synthetic");
  EXPECT_EQ(http_get(p, "/view/synthetic-2").body, second.body);
  const auto js = http_get(p, "/viewer/openseadragon.min.js");
  ASSERT_EQ(js.status, 200);
  EXPECT_GT(js.body.size(), 100000u);
  EXPECT_EQ(http_get(p, "/viewer/images/home_rest.png").status, 200);
  EXPECT_EQ(s.stop(SIGTERM, 10), 0);
}

}  // namespace
}  // namespace tw
