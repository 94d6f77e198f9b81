// Slide metadata carried into every layout (io/vendor_metadata.hpp): a
// pyramid of an Aperio-like SVS is read back by openslide-python as Aperio
// with the source's MPP, objective power, properties and associated images
// (its levels' pixels equal tifffile's), the OME-TIFF's OME-XML (parsed by
// Python's xml.etree) has the objective and a MapAnnotation of the
// properties, the OME-Zarr .zattrs has them; a hostile description gives
// bounded, well-formed outputs; other sources keep today's description.
#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "engine/tile_source.hpp"
#include "io/vendor_metadata.hpp"
#include "tests/support/test_support.hpp"

namespace tw {
namespace {

// python3 SCRIPT MODE ...
//  aperio OUT SRC: OUT opens in OpenSlide as Aperio with SRC's mpp-x/y,
//    objective power, aperio.* properties (all but the header's) and
//    associated images (same names, sizes and pixels).
//  levels OUT: every level OpenSlide reads equals tifffile's tiled page.
//  svs OUT: tifffile reads OUT as an SVS: the pyramid with every level,
//    then thumbnail, label and macro.
//  noassoc OUT: OUT is Aperio with SRC's mpp and no associated images.
//  generic OUT PREFIX: OUT is not Aperio; its description starts so.
//  ome OUT POWER KEY VALUE: the OME-XML parses; the Image's
//    ObjectiveSettings names an Objective of NominalMagnification POWER; its
//    MapAnnotation holds KEY = VALUE (POWER 0: no Objective at all).
//  bounded OUT MAXBYTES: every ImageDescription of OUT is at most MAXBYTES
//    and valid UTF-8; an OME-XML one parses.
constexpr const char* kOracle = R"PY(
import sys
import numpy as np

def props(slide):
    return dict(slide.properties)

mode = sys.argv[1]
if mode == 'aperio':
    import openslide
    out, src = openslide.OpenSlide(sys.argv[2]), openslide.OpenSlide(sys.argv[3])
    po, ps = props(out), props(src)
    assert po.get('openslide.vendor') == 'aperio', po.get('openslide.vendor')
    for k in ('openslide.mpp-x', 'openslide.mpp-y', 'openslide.objective-power'):
        assert k in ps, k
        assert float(po.get(k, 'nan')) == float(ps[k]), (k, po.get(k), ps[k])
    for k, v in ps.items():
        if k.startswith('aperio.') and k != 'aperio.Header':
            assert po.get(k) == v, (k, po.get(k), v)
    assert out.dimensions == src.dimensions, (out.dimensions, src.dimensions)
    assert sorted(src.associated_images) == ['label', 'macro', 'thumbnail'], list(src.associated_images)
    assert sorted(out.associated_images) == sorted(src.associated_images), (
        list(out.associated_images), list(src.associated_images))
    for name, img in src.associated_images.items():
        a, b = np.asarray(out.associated_images[name]), np.asarray(img)
        assert a.shape == b.shape and (a == b).all(), name
elif mode == 'svs':
    import tifffile
    t = tifffile.TiffFile(sys.argv[2])
    names = [s.name for s in t.series]
    assert t.is_svs and names == ['Baseline', 'Thumbnail', 'Label', 'Macro'], names
    levels = [p.shape[:2] for p in t.pages if p.is_tiled]
    assert [l.shape[:2] for l in t.series[0].levels] == levels, (t.series[0].levels, levels)
elif mode == 'noassoc':
    import openslide
    slide = openslide.OpenSlide(sys.argv[2])
    assert slide.properties.get('openslide.vendor') == 'aperio'
    assert float(slide.properties['openslide.mpp-x']) == 0.2499
    assert not slide.associated_images, list(slide.associated_images)
elif mode == 'levels':
    import openslide, tifffile
    slide = openslide.OpenSlide(sys.argv[2])
    pages = [p for p in tifffile.TiffFile(sys.argv[2]).pages if p.is_tiled]
    assert slide.level_count == len(pages), (slide.level_count, len(pages))
    for l, page in enumerate(pages):
        want = page.asarray()
        got = np.asarray(slide.read_region((0, 0), l, slide.level_dimensions[l]))[..., :3]
        assert got.shape == want.shape, (l, got.shape, want.shape)
        bad = np.argwhere((got != want).any(axis=2))
        assert len(bad) == 0, (l, len(bad), bad[0].tolist())
elif mode == 'generic':
    import openslide, tifffile
    slide = openslide.OpenSlide(sys.argv[2])
    assert slide.properties.get('openslide.vendor') != 'aperio'
    desc = tifffile.TiffFile(sys.argv[2]).pages[0].description
    assert desc.startswith(sys.argv[3]), desc[:100]
elif mode == 'ome':
    import tifffile
    import xml.etree.ElementTree as ET
    ns = {'o': 'http://www.openmicroscopy.org/Schemas/OME/2016-06'}
    root = ET.fromstring(tifffile.TiffFile(sys.argv[2]).ome_metadata)
    power, key, value = float(sys.argv[3]), sys.argv[4], sys.argv[5]
    image = root.find('o:Image', ns)
    objectives = root.findall('o:Instrument/o:Objective', ns)
    if power == 0:
        assert not objectives and image.find('o:ObjectiveSettings', ns) is None
    else:
        ref = image.find('o:ObjectiveSettings', ns).get('ID')
        inst = image.find('o:InstrumentRef', ns).get('ID')
        obj = [o for o in objectives if o.get('ID') == ref]
        assert len(obj) == 1, ref
        assert float(obj[0].get('NominalMagnification')) == power, obj[0].attrib
        assert root.find("o:Instrument[@ID='%s']" % inst, ns) is not None, inst
    refs = [r.get('ID') for r in image.findall('o:AnnotationRef', ns)]
    pairs = {}
    for m in root.findall('o:StructuredAnnotations/o:MapAnnotation', ns):
        if m.get('ID') in refs:
            pairs.update({e.get('K'): (e.text or '') for e in m.findall('o:Value/o:M', ns)})
    assert pairs.get(key) == value, (key, pairs.get(key), len(pairs))
elif mode == 'bounded':
    import tifffile
    import xml.etree.ElementTree as ET
    limit = int(sys.argv[3])
    with tifffile.TiffFile(sys.argv[2]) as t:
        for p in t.pages:
            tag = p.tags.get(270)
            if tag is None:
                continue
            raw = tag.value.encode('utf-8', 'surrogateescape') if isinstance(tag.value, str) else tag.value
            assert len(raw) <= limit, len(raw)
            raw.decode('utf-8')
            if b'<OME' in raw:
                ET.fromstring(raw)
)PY";

constexpr const char* kAperioDescription =
    "Aperio Image Library v12.0.5\r\n400x320 [0,0 400x320] (64x64) JPEG/RGB Q=70|AppMag = 40|MPP = 0.2499|"
    "ScanScope ID = SS1234|Filename = 4711|Date = 11/25/26|Left = 25.5|User = b\xC3\xA4r";

class MetadataCli : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!test::python_has("openslide") || !test::python_has("tifffile"))
      GTEST_SKIP() << "openslide-python or tifffile missing";
    oracle_ = tmp_.file("metadata_oracle.py");
    std::ofstream(oracle_) << kOracle;
  }

  // An Aperio-like SVS as the scanner lays it out: JPEG level 0, a stripped
  // thumbnail second, a reduced level, then label and macro named on the
  // second line of their descriptions.
  std::string svs(const std::string& name, const std::string& description) {
    const std::string path = tmp_.file(name);
    test::TiffSpec spec;
    spec.compression = 7;  // JPEG
    spec.tile_w = spec.tile_h = 64;
    spec.description = description;
    test::write_tiff(path, test::pattern_image(kRgb8, 400, 320, 1).view(), spec);
    test::TiffSpec strip;
    strip.tiled = false;
    strip.rows_per_strip = 16;
    strip.description = "Aperio Image Library v12.0.5\r\n400x320 -> 100x80 - |AppMag = 40";
    test::append_tiff_directory(path, test::pattern_image(kRgb8, 100, 80, 2).view(), strip, 0);
    spec.description = "Aperio Image Library v12.0.5\r\n400x320 -> 200x160";
    test::append_tiff_directory(path, test::pattern_image(kRgb8, 200, 160, 3).view(), spec, 0);
    // LF alone, as Aperio writes them (OpenSlide finds no name after a CRLF).
    strip.description = "Aperio Image Library v12.0.5\nlabel 80x60";
    test::append_tiff_directory(path, test::pattern_image(kRgb8, 80, 60, 4).view(), strip, 1);
    strip.description = "Aperio Image Library v12.0.5\nmacro 160x60";
    test::append_tiff_directory(path, test::pattern_image(kRgb8, 160, 60, 5).view(), strip, 9);
    return path;
  }

  void pyramid(const std::vector<std::string>& args) {
    std::vector<std::string> argv{"pyramid"};
    argv.insert(argv.end(), args.begin(), args.end());
    const auto r = test::run_cli(argv);
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }

  void oracle(const std::vector<std::string>& args) {
    const auto c = test::run_python(oracle_, args);
    EXPECT_EQ(c.exit_code, 0) << args[0] << " " << args[1] << ": " << c.err;
  }

  test::TempDir tmp_;
  std::string oracle_;
};

// The generic .tif of an SVS opens in OpenSlide as Aperio, with the pixel
// size, objective, properties and associated images, whichever reader read
// the source; its levels are what tifffile decodes.
TEST_F(MetadataCli, AperioSourceStaysAperio) {
  const std::string src = svs("slide.svs", kAperioDescription);
  const std::string out = tmp_.file("out.tif"), lossless = tmp_.file("lossless.tif"), os = tmp_.file("os.tif");
  pyramid({src, out, "--min-size", "64"});
  oracle({"aperio", out, src});
  // Tiles no wider than any level: OpenSlide 3.4 reads deflate tiles
  // through libtiff's TIFFRGBAImage, which misreads a tile wider than its
  // image (libtiff 4.5: "Raster width ... shall not be larger").
  pyramid({src, lossless, "--min-size", "50", "--tile", "32", "--compression", "deflate"});
  oracle({"aperio", lossless, src});
  oracle({"levels", lossless});
  oracle({"svs", lossless});
  pyramid({src, os, "--reader", "openslide", "--min-size", "64"});
  oracle({"aperio", os, src});
  // Our own reader reads the output back with the same metadata.
  const auto info = test::run_cli({"info", out, "--json"});
  ASSERT_EQ(info.exit_code, 0) << info.err;
  const auto j = nlohmann::json::parse(info.out);
  EXPECT_NEAR(j["mpp_x"].get<double>(), 0.2499, 1e-6);  // from the resolution tags' float
  EXPECT_DOUBLE_EQ(j["objective_power"].get<double>(), 40);
  EXPECT_EQ(j["vendor_properties"]["aperio.ScanScope ID"], "SS1234");
  EXPECT_EQ(j["associated"].size(), 3u) << j["associated"].dump();
}

// Without associated images the output is still Aperio, with none.
TEST_F(MetadataCli, AperioWithoutAssociatedImages) {
  const std::string src = svs("slide.svs", kAperioDescription), out = tmp_.file("out.tif");
  pyramid({src, out, "--min-size", "50", "--tile", "32", "--compression", "deflate", "--no-associated"});
  oracle({"noassoc", out});
  oracle({"levels", out});
}

TEST_F(MetadataCli, OmeTiffHasObjectiveAndProperties) {
  const std::string src = svs("slide.svs", kAperioDescription), out = tmp_.file("out.ome.tif");
  pyramid({src, out, "--min-size", "64"});
  oracle({"ome", out, "40", "aperio.ScanScope ID", "SS1234"});
  oracle({"ome", out, "40", "aperio.User", "b\xC3\xA4r"});
  // Through OpenSlide's reader, the same.
  const std::string os = tmp_.file("os.ome.tif");
  pyramid({src, os, "--min-size", "64", "--reader", "openslide"});
  oracle({"ome", os, "40", "aperio.MPP", "0.2499"});
}

TEST_F(MetadataCli, ZarrAttrsHaveObjectiveAndProperties) {
  const std::string src = svs("slide.svs", kAperioDescription), out = tmp_.file("out.zarr");
  pyramid({src, out, "--min-size", "64"});
  const nlohmann::json a = test::read_json(out + "/.zattrs");
  ASSERT_TRUE(a.contains("tilewave")) << a.dump();
  EXPECT_DOUBLE_EQ(a["tilewave"]["objective_power"].get<double>(), 40);
  EXPECT_EQ(a["tilewave"]["properties"]["aperio.Filename"], "4711");
  EXPECT_EQ(a["tilewave"]["properties"]["aperio.User"], "b\xC3\xA4r");
}

// A 10 MB description, a flood of '|', bytes that are not UTF-8 and
// control characters: every layout is written, bounded and well formed.
TEST_F(MetadataCli, HostileDescriptionIsBounded) {
  std::string d = "Aperio Image Library \xFF\x01v1\r\n400x320|AppMag = 20|MPP = 0.5|K\xFF\xFE = v\x01\xC3|";
  d += std::string(4 << 20, '|');
  for (int i = 0; i < 100000; ++i) d += "Key" + std::to_string(i) + " = " + std::string(40, 'x') + "|";
  d += std::string(10 << 20, 'y');
  const std::string src = svs("hostile.svs", d);
  const std::string tif = tmp_.file("h.tif"), ome = tmp_.file("h.ome.tif"), zarr = tmp_.file("h.zarr");
  pyramid({src, tif, "--min-size", "64"});
  pyramid({src, ome, "--min-size", "64"});
  pyramid({src, zarr, "--min-size", "64"});
  oracle({"bounded", tif, std::to_string(kMaxVendorDescriptionBytes + 64)});
  oracle({"bounded", ome, std::to_string(512 * 1024)});
  // (Not through --reader openslide: OpenSlide 3.4.1 itself logs a
  // GLib-CRITICAL line for each of the 4 million fields without '=', for a
  // minute. The bounds on what it hands over are checked in
  // VendorMetadata.CleanTextIsValidUtf8AndBounded.)
  // OpenSlide still reads it as Aperio with its MPP and objective (the
  // property values are cleaned, so those may differ: not compared here).
  const auto p = test::run({test::python(), "-c",
                            "import openslide,sys; s=openslide.OpenSlide(sys.argv[1]); p=s.properties; "
                            "assert p['openslide.vendor']=='aperio'; assert float(p['openslide.mpp-x'])==0.5; "
                            "assert p['openslide.objective-power']=='20'; assert len(p) < 400, len(p)",
                            tif});
  EXPECT_EQ(p.exit_code, 0) << p.err;
  std::ifstream f(zarr + "/.zattrs", std::ios::binary | std::ios::ate);
  EXPECT_LT(static_cast<int64_t>(f.tellg()), 256 * 1024);
  const nlohmann::json a = test::read_json(zarr + "/.zattrs");
  EXPECT_LE(a["tilewave"]["properties"].size(), kMaxVendorProperties);
}

// Sources that are not Aperio keep today's description and no Aperio layout.
TEST_F(MetadataCli, OtherSourcesKeepTheirDescription) {
  const std::string out = tmp_.file("s.tif");
  pyramid({"synthetic:600x400", out, "--min-size", "64"});
  oracle({"generic", out, "Tilewave pyramid of "});
  const std::string tif = tmp_.file("plain.tif"), out2 = tmp_.file("p.tif");
  test::TiffSpec spec;
  spec.description = "Not an Aperio slide|AppMag = 40|MPP = 0.25";
  spec.xres = 40000;  // 0.25 um
  test::write_tiff(tif, test::pattern_image(kRgb8, 300, 200, 7).view(), spec);
  pyramid({tif, out2, "--min-size", "64"});
  oracle({"generic", out2, "Tilewave pyramid of "});
  const std::string ome = tmp_.file("p.ome.tif");
  pyramid({tif, ome, "--min-size", "64"});
  const auto c = test::run_python(oracle_, {"ome", ome, "0", "x", "y"});
  EXPECT_NE(c.exit_code, 0);  // no objective, no properties
  EXPECT_NE(c.err.find("'x'"), std::string::npos) << c.err;
}

// The rewriting itself: our size and tiles replace the source's header,
// the fields follow, and a field cannot smuggle in a '|' or a newline.
TEST(VendorMetadata, AperioDescriptionRewritten) {
  SourceInfo info;
  read_aperio_description(info, kAperioDescription);
  EXPECT_EQ(info.objective_power, 40);
  ASSERT_GE(info.vendor_properties.size(), 7u);
  EXPECT_EQ(info.vendor_properties[0], std::make_pair(std::string("aperio.AppMag"), std::string("40")));
  const std::string d = aperio_pyramid_description(info, 1000, 800, 256, 256);
  EXPECT_EQ(d.rfind("Aperio Image Library v12.0.5\r\n1000x800 (256x256) Tilewave pyramid|AppMag = 40|MPP = 0.2499|", 0),
            0u)
      << d;
  EXPECT_EQ(d.find("400x320"), std::string::npos) << d;
  info.vendor_properties.emplace_back("aperio.Evil", "a|b\r\nlabel");
  const std::string e = aperio_pyramid_description(info, 10, 10, 16, 16);
  EXPECT_NE(e.find("|Evil = a/b  label"), std::string::npos) << e;
  EXPECT_EQ(aperio_pyramid_description(SourceInfo{}, 10, 10, 16, 16), "");
}

TEST(VendorMetadata, CleanTextIsValidUtf8AndBounded) {
  EXPECT_EQ(clean_metadata_text("a\xFF"
                                "b\x01"
                                "c\xC3\xA4",
                                100),
            "a?b c\xC3\xA4");
  EXPECT_EQ(clean_metadata_text("ab\xC3\xA4", 3), "ab");  // never cuts a character
  EXPECT_EQ(clean_metadata_text("a\r\nb", 10, true), "a\r\nb");
  SourceInfo info;
  for (int i = 0; i < 1000; ++i) add_vendor_property(info, "k" + std::to_string(i), std::string(5000, 'v'));
  size_t total = 0;
  for (const auto& kv : info.vendor_properties) total += kv.first.size() + kv.second.size();
  EXPECT_LE(info.vendor_properties.size(), kMaxVendorProperties);
  EXPECT_LE(total, size_t{64 * 1024});
  EXPECT_FALSE(add_vendor_property(info, "", "x"));
}

}  // namespace
}  // namespace tw
