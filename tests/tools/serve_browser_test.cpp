// The viewer page in a real browser: `tilewave serve` with a slide and an
// overlay (a label image, or GeoJSON polygons), Debian's headless Chromium
// opening / or /view/NAME and taking a
// screenshot once OpenSeadragon has loaded its tiles; the screenshot (read by
// PIL) must show tissue over a good part of the viewport and the overlay's
// outline colour. Skipped where chromium, PIL or the installed viewer
// (tools/install-deps.sh: npm ci in tools/viewer) is missing.
#include <gtest/gtest.h>

#include <fstream>

#include "tests/support/test_support.hpp"
#include "tests/tools/serve_server.hpp"

namespace tw {
namespace {

std::string find_chromium() {
  for (const char* c : {"/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome"})
    if (access(c, X_OK) == 0) return c;
  return "";
}

// Opens `url` of a server started with `server_args` in headless Chromium
// and checks the screenshot: tissue over a good part of the viewport and
// pixels of the outline colour (0,255,0).
void check_viewer(const std::vector<std::string>& server_args, const std::string& url_path,
                  const std::string& check_page) {
  const std::string chromium = find_chromium();
  if (chromium.empty()) GTEST_SKIP() << "chromium missing (Debian: apt-get install chromium)";
  if (!test::python_has("PIL") || !test::python_has("numpy")) GTEST_SKIP() << "PIL/numpy missing";
  test::TempDir tmp;
  std::vector<std::string> args = server_args;
  for (const char* a : {"--port", "0", "--threads", "4"}) args.push_back(a);
  test::Server s(args);
  ASSERT_GT(s.port(), 0) << s.first_line();
  const auto page = test::http_get(s.port(), url_path);
  if (page.status == 503 || page.body.find("not installed") != std::string::npos)
    GTEST_SKIP() << "the viewer is not installed (tools/install-deps.sh)";
  ASSERT_EQ(page.status, 200);
  EXPECT_NE(page.body.find(check_page), std::string::npos) << "the page is not " << check_page << "'s";

  const std::string shot = tmp.file("shot.png");
  // Virtual time runs only while no request is pending, so the budget is
  // the page's own timers (OpenSeadragon's animations), not the tiles' time.
  const auto r = test::run({chromium, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                            "--user-data-dir=" + tmp.file("profile"), "--screenshot=" + shot, "--window-size=1024,768",
                            "--virtual-time-budget=20000", "http://127.0.0.1:" + std::to_string(s.port()) + url_path});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string script = tmp.file("check.py");
  std::ofstream(script) << R"(
import json, sys
import numpy as np
from PIL import Image
a = np.asarray(Image.open(sys.argv[1]).convert('RGB')).astype(int)
v = a[40:, :]  # below the page's bar
r, g, b = v[..., 0], v[..., 1], v[..., 2]
tissue = (r + g + b < 660) & ~((g > 200) & (r < 80) & (b < 80))
outline = (g > 200) & (r < 80) & (b < 80)
print(json.dumps({'tissue': float(tissue.mean()), 'outline': int(outline.sum()), 'shape': list(a.shape)}))
)";
  const auto c = test::run_python(script, {shot});
  ASSERT_EQ(c.exit_code, 0) << c.err;
  const auto j = nlohmann::json::parse(c.out);
  EXPECT_GT(j["tissue"].get<double>(), 0.15) << c.out;
  EXPECT_GT(j["outline"].get<int>(), 200) << c.out;
  EXPECT_EQ(s.stop(SIGTERM, 10), 0);
}

TEST(ServeBrowser, ViewerDrawsTissueAndOutlines) {
  test::TempDir tmp;
  const std::string input = "synthetic:1600x1200";
  const std::string labels = tmp.file("labels.tif");
  auto l = test::run_cli({"run", input, labels, "filter gray", "filter invert", "filter threshold --value 140", "label",
                          "--min-size", "64"});
  ASSERT_EQ(l.exit_code, 0) << l.err;
  check_viewer({input, "--overlay", labels}, "/view/synthetic", "/slides/synthetic.dzi");
}

// The issue's case: a nuclei.geojson beside the slide, the server started
// on the slide alone, the page at / (the first slide) and at /?slide=NAME
// (another), the GeoJSON outlines drawn.
TEST(ServeBrowser, RootPageDrawsTheNucleiGeoJson) {
  test::TempDir tmp;
  const std::string input = "synthetic:1600x1200";
  const std::string slide = tmp.file("case.tif");
  auto p = test::run_cli({"pyramid", input, slide});
  ASSERT_EQ(p.exit_code, 0) << p.err;
  const std::string labels = tmp.file("labels.tif");
  auto l = test::run_cli({"run", input, labels, "filter gray", "filter invert", "filter threshold --value 140", "label",
                          "--min-size", "64"});
  ASSERT_EQ(l.exit_code, 0) << l.err;
  auto f = test::run_cli({"features", labels, tmp.file("nuclei.geojson")});
  ASSERT_EQ(f.exit_code, 0) << f.err;
  check_viewer({slide}, "/", "/slides/case.dzi");
  check_viewer({"synthetic:300x200", slide}, "/?slide=case", "/slides/case.dzi");
}

}  // namespace
}  // namespace tw
