// OME-TIFF inputs (written by tifffile) read as one image of all their
// channels: channels stored one IFD per channel, with and without SubIFD
// levels, names from the OME-XML's Channel elements; pixels of every level
// equal to those written. Z stacks, time series, several images, planes in
// other files and OME-XML that lies about the file: one-line errors naming
// what.
#include <gtest/gtest.h>

#include <fstream>

#include "io/tiff/ome_xml_reader.hpp"
#include "io/tiff/tiff_source.hpp"
#include "tests/support/test_support.hpp"

namespace tw {
namespace {

bool have_tifffile() {
  return test::python_has("tifffile") && test::python_has("scipy");
}

// tests/oracles/channels_oracle.py ome: OUT and its levels' pixels in
// STEM_levelL.npy.
void make_ome(const std::string& out, const std::string& stem, const std::string& chw, const std::string& dtype,
              const std::vector<std::string>& opts) {
  std::vector<std::string> args{"ome", out, stem, chw, dtype};
  args.insert(args.end(), opts.begin(), opts.end());
  const auto r = test::run_python(test::oracle("channels_oracle.py"), args);
  ASSERT_EQ(r.exit_code, 0) << r.err;
}

void expect_refused(const std::string& path, const std::string& says) {
  try {
    TiffSource src(path);
    ADD_FAILURE() << path << " was read as " << src.info().fmt.str();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find(says), std::string::npos) << e.what();
    EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << "one line: " << e.what();
  }
}

TEST(OmeTiffRead, ChannelsOneIfdEachWithSubIfdLevels) {
  if (!have_tifffile()) GTEST_SKIP() << "tifffile/scipy missing";
  test::TempDir tmp;
  struct Case {
    std::string chw, dtype;
    int subifds, tile;
    std::vector<std::string> names;
  };
  const Case cases[] = {
      {"3,300,260", "u16", 2, 64, {"DAPI", "CD3", "CD8"}},
      {"8,257,513", "u16", 3, 256, {"c0", "c1", "c2", "c3", "c4", "c5", "c6", "c7"}},
      {"5,129,67", "u8", 0, 16, {"a", "b", "c", "d", "e"}},
      {"2,65,65", "f32", 1, 32, {}},
      {"4,1,300", "u8", 0, 0, {"w", "x", "y", "z"}},  // 1xN, strips
  };
  for (const Case& c : cases) {
    const std::string path = tmp.file("o.ome.tif"), stem = tmp.file("o");
    std::vector<std::string> opts{"--subifds", std::to_string(c.subifds)};
    if (c.tile) opts.insert(opts.end(), {"--tile", std::to_string(c.tile)});
    if (!c.names.empty()) {
      std::string n;
      for (const auto& s : c.names) n += (n.empty() ? "" : ",") + s;
      opts.insert(opts.end(), {"--names", n});
    }
    make_ome(path, stem, c.chw, c.dtype, opts);
    TiffSource src(path);
    const int channels = std::stoi(c.chw);
    EXPECT_EQ(src.info().fmt.channels, channels) << c.chw;
    EXPECT_EQ(src.info().channel_names, c.names) << c.chw;
    ASSERT_EQ(src.level_count(), c.subifds + 1) << c.chw;
    for (int l = 0; l <= c.subifds; ++l) {
      const Image want = test::load_npy(stem + "_level" + std::to_string(l) + ".npy");
      ASSERT_EQ(src.info().fmt, want.fmt());
      EXPECT_EQ(test::diff_images(src.read(l, src.level(l).bounds()).view(), want.view()), "")
          << c.chw << " level " << l;
    }
    // Reads of parts of chunks, through the chunk cache.
    src.set_read_cache(size_t{8} << 20);
    const Image want = test::load_npy(stem + "_level0.npy");
    const Rect r = Rect(3, 0, 40, 1).intersect(want.rect());
    Image part = src.read(0, r);
    for (int64_t y = r.y; y < r.y1(); ++y)
      EXPECT_EQ(std::memcmp(part.view().ptr_bytes(r.x, y), want.view().ptr_bytes(r.x, y),
                            static_cast<size_t>(r.w) * want.fmt().bytes_per_pixel()),
                0);
  }
}

// One IFD of three samples (RGB OME-TIFF): an ordinary image; no names
// (its one Channel stands for three samples).
TEST(OmeTiffRead, SamplesInOneIfd) {
  if (!have_tifffile()) GTEST_SKIP() << "tifffile/scipy missing";
  test::TempDir tmp;
  make_ome(tmp.file("rgb.ome.tif"), tmp.file("rgb"), "3,90,70", "u8", {"--rgb"});
  TiffSource src(tmp.file("rgb.ome.tif"));
  EXPECT_EQ(src.info().fmt, kRgb8);
  EXPECT_TRUE(src.info().channel_names.empty());
  EXPECT_EQ(
      test::diff_images(src.read(0, src.level(0).bounds()).view(), test::load_npy(tmp.file("rgb_level0.npy")).view()),
      "");
}

// A label stored as an OME Image of its own (Bio-Formats' and our writer's
// way) is the file's associated image, not a second series.
TEST(OmeTiffRead, LabelImageIsAssociated) {
  if (!have_tifffile()) GTEST_SKIP() << "tifffile/scipy missing";
  test::TempDir tmp;
  make_ome(tmp.file("l.ome.tif"), tmp.file("l"), "3,64,80", "u16", {"--subifds", "1", "--tile", "16", "--label"});
  TiffSource src(tmp.file("l.ome.tif"));
  EXPECT_EQ(src.info().fmt, (PixelFormat{SampleType::kU16, 3}));
  EXPECT_EQ(src.level_count(), 2);
  ASSERT_EQ(src.info().associated.size(), 1u);
  EXPECT_EQ(src.info().associated[0].name, "label");
  const Image label = src.read_associated("label");
  ASSERT_EQ(label.rect(), Rect(0, 0, 30, 20));
  EXPECT_EQ(label.row<uint8_t>(19)[89], 7);
}

TEST(OmeTiffRead, WhatIsNotOneImageIsRefusedByName) {
  if (!have_tifffile()) GTEST_SKIP() << "tifffile/scipy missing";
  test::TempDir tmp;
  make_ome(tmp.file("z.ome.tif"), tmp.file("z"), "2,64,64", "u8", {"--z", "5"});
  expect_refused(tmp.file("z.ome.tif"), "OME-TIFF with SizeZ=5 (a Z stack): only a single plane per channel");
  make_ome(tmp.file("t.ome.tif"), tmp.file("t"), "2,64,64", "u8", {"--t", "3"});
  expect_refused(tmp.file("t.ome.tif"), "SizeT=3 (a time series)");
  make_ome(tmp.file("s.ome.tif"), tmp.file("s"), "2,64,64", "u16", {"--series", "2"});
  expect_refused(tmp.file("s.ome.tif"), "OME-TIFF with 2 images (series)");
}

// OME-XML written by hand over pages libtiff wrote: what the XML says must
// hold of the file.
class OmeXml : public ::testing::Test {
 protected:
  // Three 64x48 u16 pages; the first carries `xml`.
  // Pages after the first are `others_width` wide (0: as the first).
  std::string write(const std::string& name, const std::string& xml, int pages = 3, int width = 64,
                    int others_width = 0) {
    const std::string path = tmp_.file(name);
    test::TiffSpec spec;
    spec.tile_w = spec.tile_h = 16;
    spec.description = xml;
    const Image page = test::random_image(PixelFormat{SampleType::kU16, 1}, width, 48, 1);
    test::write_tiff(path, page.view(), spec);
    spec.description.clear();
    for (int i = 1; i < pages; ++i)
      test::append_tiff_directory(
          path, test::random_image(page.fmt(), others_width ? others_width : width, 48, 1 + i).view(), spec, 0);
    return path;
  }
  static std::string ome(const std::string& pixels_attrs, const std::string& inside) {
    return "<?xml version=\"1.0\" encoding=\"UTF-8\"?><OME "
           "xmlns=\"http://www.openmicroscopy.org/Schemas/OME/2016-06\" UUID=\"urn:uuid:1\"><Image ID=\"Image:0\">"
           "<Pixels ID=\"Pixels:0\" Type=\"uint16\" SizeX=\"64\" SizeY=\"48\" " +
           pixels_attrs + ">" + inside + "</Pixels></Image></OME>";
  }
  test::TempDir tmp_;
};

TEST_F(OmeXml, TiffDataMapsChannelsToIfds) {
  // Channels in IFDs 0, 2, 1 (TiffData per plane), DimensionOrder XYZCT.
  const std::string xml =
      ome("DimensionOrder=\"XYZCT\" SizeC=\"3\" SizeZ=\"1\" SizeT=\"1\"",
          "<Channel ID=\"Channel:0:0\" Name=\"first\"/><Channel ID=\"Channel:0:1\" Name=\"second &amp; more\"/>"
          "<Channel ID=\"Channel:0:2\" Name=\"third\"/>"
          "<TiffData IFD=\"0\" FirstC=\"0\"/><TiffData IFD=\"2\" FirstC=\"1\"/><TiffData IFD=\"1\" FirstC=\"2\"/>");
  const std::string path = write("map.ome.tif", xml);
  TiffSource src(path);
  ASSERT_EQ(src.info().fmt, (PixelFormat{SampleType::kU16, 3}));
  EXPECT_EQ(src.info().channel_names, (std::vector<std::string>{"first", "second & more", "third"}));
  const Image all = src.read(0, src.level(0).bounds());
  const int ifd_of[3] = {0, 2, 1};
  for (int c = 0; c < 3; ++c) {
    const Image page = test::read_tiff_libtiff(path, ifd_of[c]);
    for (int64_t y = 0; y < 48; ++y)
      for (int64_t x = 0; x < 64; ++x)
        ASSERT_EQ(all.row<uint16_t>(y)[x * 3 + c], page.row<uint16_t>(y)[x])
            << "channel " << c << " at " << x << "," << y;
  }
}

TEST_F(OmeXml, LiesAndDamageAreRefused) {
  const std::string ch = "DimensionOrder=\"XYCZT\" SizeZ=\"1\" SizeT=\"1\" ";
  expect_refused(write("ifd.ome.tif", ome(ch + "SizeC=\"3\"",
                                          "<TiffData IFD=\"0\" PlaneCount=\"1\"/>"
                                          "<TiffData IFD=\"7\" FirstC=\"1\" PlaneCount=\"2\"/>")),
                 "puts channel 1 in IFD 7; the file has 3");
  expect_refused(write("none.ome.tif", ome(ch + "SizeC=\"3\"", "<TiffData IFD=\"0\" PlaneCount=\"2\"/>")),
                 "puts channel 2 in IFD (none)");
  expect_refused(write("twice.ome.tif",
                       ome(ch + "SizeC=\"2\"",
                           "<TiffData IFD=\"0\"/><TiffData IFD=\"0\" "
                           "FirstC=\"1\"/>"),
                       2),
                 "puts two channels in IFD 0");
  expect_refused(write("size.ome.tif", ome(ch + "SizeC=\"3\"", ""), 3, 80), "says the image is 64x48, its first IFD");
  expect_refused(write("other.ome.tif", ome(ch + "SizeC=\"3\"",
                                            "<TiffData IFD=\"0\" PlaneCount=\"3\"><UUID "
                                            "FileName=\"elsewhere.ome.tif\">urn:uuid:2</UUID>"
                                            "</TiffData>")),
                 "planes in another file (elsewhere.ome.tif)");
  expect_refused(write("broken.ome.tif", "<?xml version=\"1.0\"?><OME><Image><Pixels SizeC=\"3\""), "cannot be parsed");
  expect_refused(write("order.ome.tif", ome("DimensionOrder=\"XYQ\" SizeC=\"3\"", "")), "unknown DimensionOrder");
  expect_refused(write("count.ome.tif", ome(ch + "SizeC=\"-3\"", "")), "is not a valid count");
  expect_refused(write("huge.ome.tif", ome("DimensionOrder=\"XYCZT\" SizeC=\"99999999\" SizeZ=\"99999\"", "")),
                 "more planes than any slide has");
  // No external entities (no files read through the XML) and bounded
  // internal ones (libxml2's limits against "billion laughs").
  const std::string dtd =
      "<?xml version=\"1.0\"?><!DOCTYPE OME [<!ENTITY a \"aaaaaaaaaa\">"
      "<!ENTITY b \"&a;&a;&a;&a;&a;&a;&a;&a;\"><!ENTITY c SYSTEM \"file:///etc/passwd\">]>";
  const std::string body = "<OME><Image><Pixels SizeX=\"64\" SizeY=\"48\" SizeC=\"3\">";
  expect_refused(write("external.ome.tif", dtd + body + "<Channel Name=\"&c;\"/></Pixels></Image></OME>"),
                 "external entity");
  TiffSource src(write("laughs.ome.tif", dtd + body +
                                             "<Channel Name=\"&b;\"/><Channel Name=\"y\"/><Channel Name=\"x\"/>"
                                             "</Pixels></Image></OME>"));
  EXPECT_EQ(src.info().fmt.channels, 3);
  EXPECT_EQ(src.info().channel_names, (std::vector<std::string>{std::string(80, 'a'), "y", "x"}));
  // Broken XML over a single image costs only the names, also with a
  // smaller page (a label) beside it.
  TiffSource one(write("one.ome.tif", "<OME><Image", 1));
  EXPECT_EQ(one.info().fmt.channels, 1);
  TiffSource two(write("two.ome.tif", "<OME><Image", 2, 64, 32));
  EXPECT_EQ(two.info().fmt.channels, 1);
  // Pages of a stack without OME-XML stay refused.
  expect_refused(write("stack.tif", ""), "3 full-size images");
}

// The plane table itself, from OME's TiffData rules.
TEST(OmeXmlParse, PlaneTableFollowsTheSchema) {
  auto parse = [](const std::string& inside, const std::string& attrs) {
    return parse_ome_xml(
        "<OME><Image><Pixels SizeX=\"1\" SizeY=\"1\" " + attrs + ">" + inside + "</Pixels></Image></OME>", "f.ome.tif",
        1);
  };
  // No TiffData: IFDs in order.
  EXPECT_EQ(parse("", "SizeC=\"3\"").plane_ifd, (std::vector<int64_t>{0, 1, 2}));
  // IFD without PlaneCount: one plane.
  EXPECT_EQ(parse("<TiffData IFD=\"4\" FirstC=\"1\"/>", "SizeC=\"3\"").plane_ifd, (std::vector<int64_t>{-1, 4, -1}));
  // A TiffData without attributes: every plane from IFD 0.
  EXPECT_EQ(parse("<TiffData/>", "SizeC=\"2\" SizeZ=\"2\"").plane_ifd, (std::vector<int64_t>{0, 1, 2, 3}));
  // XYZCT: Z varies fastest.
  EXPECT_EQ(parse("<TiffData IFD=\"9\" FirstC=\"1\" FirstZ=\"0\"/>", "SizeC=\"2\" SizeZ=\"2\" DimensionOrder=\"XYZCT\"")
                .plane_ifd[2],
            9);
  EXPECT_EQ(parse("", "SizeC=\"2\"").images, 1);
  // Many TiffData of many planes: refused, not a hang.
  std::string many;
  for (int k = 0; k < 20; ++k) many += "<TiffData/>";
  EXPECT_THROW(parse(many, "SizeC=\"1\" SizeZ=\"1000\" SizeT=\"1000\""), InputError);
  EXPECT_TRUE(looks_like_ome("<?xml version=\"1.0\"?><OME xmlns=\"x\">"));
  EXPECT_FALSE(looks_like_ome("Aperio Image Library"));
  EXPECT_FALSE(looks_like_ome("<OMEGA>"));
}

}  // namespace
}  // namespace tw
