// The viewer page in a real browser: `tilewave serve` with a slide and an
// overlay, Debian's headless Chromium opening /view/NAME and taking a
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

TEST(ServeBrowser, ViewerDrawsTissueAndOutlines) {
  const std::string chromium = find_chromium();
  if (chromium.empty()) GTEST_SKIP() << "chromium missing (Debian: apt-get install chromium)";
  if (!test::python_has("PIL") || !test::python_has("numpy")) GTEST_SKIP() << "PIL/numpy missing";
  test::TempDir tmp;
  const std::string input = "synthetic:1600x1200";
  const std::string labels = tmp.file("labels.tif");
  auto l = test::run_cli({"run", input, labels, "filter gray", "filter invert", "filter threshold --value 140", "label",
                          "--min-size", "64"});
  ASSERT_EQ(l.exit_code, 0) << l.err;
  test::Server s({input, "--overlay", labels, "--port", "0", "--threads", "4"});
  ASSERT_GT(s.port(), 0) << s.first_line();
  const auto page = test::http_get(s.port(), "/view/synthetic");
  if (page.status == 503) GTEST_SKIP() << "the viewer is not installed (tools/install-deps.sh)";
  ASSERT_EQ(page.status, 200);

  const std::string shot = tmp.file("shot.png");
  // Virtual time runs only while no request is pending, so the budget is
  // the page's own timers (OpenSeadragon's animations), not the tiles' time.
  const auto r =
      test::run({chromium, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                 "--user-data-dir=" + tmp.file("profile"), "--screenshot=" + shot, "--window-size=1024,768",
                 "--virtual-time-budget=20000", "http://127.0.0.1:" + std::to_string(s.port()) + "/view/synthetic"});
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

}  // namespace
}  // namespace tw
