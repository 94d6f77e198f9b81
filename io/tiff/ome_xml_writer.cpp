#include "io/tiff/ome_xml_writer.hpp"

#include <libxml/xmlwriter.h>

#include <algorithm>
#include <cstdio>
#include <memory>

#include "engine/error.hpp"
#include "io/vendor_metadata.hpp"

namespace tw {
namespace {

constexpr const char* kOmeNs = "http://www.openmicroscopy.org/Schemas/OME/2016-06";

// Text as XML 1.0 may hold it: a description or channel name from an input
// file can be Latin-1 (an Aperio µ) or carry control bytes, which libxml2
// would refuse or write as references no XML parser accepts. Valid UTF-8 is
// kept; every byte or character XML cannot hold becomes U+FFFD.
std::string xml_text(const std::string& in) {
  static const char kReplacement[] = "\xEF\xBF\xBD";
  std::string out;
  out.reserve(in.size());
  const auto* s = reinterpret_cast<const unsigned char*>(in.data());
  const size_t n = in.size();
  for (size_t i = 0; i < n;) {
    const unsigned char c = s[i];
    size_t len = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
    uint32_t cp = len == 1 ? c : len == 2 ? c & 0x1Fu : len == 3 ? c & 0x0Fu : c & 0x07u;
    bool ok = len > 0 && i + len <= n;
    for (size_t k = 1; ok && k < len; ++k) {
      ok = (s[i + k] & 0xC0) == 0x80;
      cp = (cp << 6) | (s[i + k] & 0x3Fu);
    }
    // Overlong forms, surrogates, and what XML 1.0's Char production leaves out.
    static const uint32_t kMin[5] = {0, 0, 0x80, 0x800, 0x10000};
    ok = ok && cp >= kMin[len] && cp <= 0x10FFFF && !(cp >= 0xD800 && cp <= 0xDFFF) && cp != 0xFFFE && cp != 0xFFFF &&
         (cp >= 0x20 || cp == 0x9 || cp == 0xA || cp == 0xD);
    if (ok) {
      out.append(in, i, len);
      i += len;
    } else {
      out += kReplacement;
      i += 1;
    }
  }
  return out;
}

// Owns the buffer and the writer; every call's result is checked, since
// libxml2 reports failures (out of memory, bad UTF-8) only by return codes.
class XmlWriter {
 public:
  XmlWriter() : buf_(xmlBufferCreate()), w_(buf_ ? xmlNewTextWriterMemory(buf_, 0) : nullptr) {
    if (!w_) throw InternalError("libxml2: cannot create an XML writer");
    check(xmlTextWriterSetIndent(w_, 1), "indent");
    check(xmlTextWriterSetIndentString(w_, BAD_CAST "  "), "indent");
  }
  ~XmlWriter() {
    if (w_) xmlFreeTextWriter(w_);
    if (buf_) xmlBufferFree(buf_);
  }
  XmlWriter(const XmlWriter&) = delete;
  XmlWriter& operator=(const XmlWriter&) = delete;

  void start_document() { check(xmlTextWriterStartDocument(w_, nullptr, "UTF-8", nullptr), "document"); }
  void start(const char* element) { check(xmlTextWriterStartElement(w_, BAD_CAST element), element); }
  void end() { check(xmlTextWriterEndElement(w_), "end element"); }
  void attr(const char* name, const std::string& value) {
    check(xmlTextWriterWriteAttribute(w_, BAD_CAST name, BAD_CAST xml_text(value).c_str()), name);
  }
  void attr(const char* name, int64_t value) { attr(name, std::to_string(value)); }
  void attr(const char* name, double value) {
    char s[32];
    std::snprintf(s, sizeof s, "%.17g", value);  // round-trips the double
    attr(name, std::string(s));
  }
  void text(const std::string& text) { check(xmlTextWriterWriteString(w_, BAD_CAST xml_text(text).c_str()), "text"); }
  void text_element(const char* name, const std::string& text) {
    check(xmlTextWriterWriteElement(w_, BAD_CAST name, BAD_CAST xml_text(text).c_str()), name);
  }
  std::string finish() {
    check(xmlTextWriterEndDocument(w_), "end document");
    xmlFreeTextWriter(w_);  // flushes into buf_
    w_ = nullptr;
    return std::string(reinterpret_cast<const char*>(xmlBufferContent(buf_)),
                       static_cast<size_t>(xmlBufferLength(buf_)));
  }

 private:
  static void check(int rc, const char* what) {
    if (rc < 0) throw InternalError(std::string("libxml2 failed writing OME-XML (") + what + ")");
  }
  xmlBufferPtr buf_;
  xmlTextWriterPtr w_;
};

// The scanner's objective, as Bio-Formats' SVS reader records AppMag.
void write_instrument(XmlWriter& x, const OmeImage& im, size_t index) {
  const std::string id = std::to_string(index);
  x.start("Instrument");
  x.attr("ID", "Instrument:" + id);
  x.start("Objective");
  x.attr("ID", "Objective:" + id + ":0");
  x.attr("NominalMagnification", im.objective_power);
  x.end();
  x.end();
}

// The vendor's key/values (OME's MapAnnotation, which QuPath and
// Bio-Formats show as the image's metadata).
void write_map_annotation(XmlWriter& x, const OmeImage& im, size_t index) {
  x.start("MapAnnotation");
  x.attr("ID", "Annotation:" + std::to_string(index));
  x.attr("Namespace", std::string("tilewave/vendor-properties"));
  x.start("Value");
  for (const auto& [k, v] : im.vendor_properties) {
    x.start("M");
    x.attr("K", k);
    x.text(v);
    x.end();
  }
  x.end();  // Value
  x.end();  // MapAnnotation
}

void write_image(XmlWriter& x, const OmeImage& im, size_t index) {
  const std::string id = std::to_string(index);
  x.start("Image");
  x.attr("ID", "Image:" + id);
  if (!im.name.empty()) x.attr("Name", im.name);
  if (!im.description.empty()) x.text_element("Description", im.description);
  // The schema's order: InstrumentRef and ObjectiveSettings before Pixels.
  if (im.objective_power > 0) {
    x.start("InstrumentRef");
    x.attr("ID", "Instrument:" + id);
    x.end();
    x.start("ObjectiveSettings");
    x.attr("ID", "Objective:" + id + ":0");
    x.end();
  }
  x.start("Pixels");
  x.attr("ID", "Pixels:" + id);
  // XYCZT: plane c of the one Z and T is the image's c-th directory.
  x.attr("DimensionOrder", std::string("XYCZT"));
  x.attr("Type", std::string(ome_pixel_type(im.fmt.type)));
  x.attr("SizeX", im.width);
  x.attr("SizeY", im.height);
  x.attr("SizeC", static_cast<int64_t>(im.fmt.channels));
  x.attr("SizeZ", int64_t{1});
  x.attr("SizeT", int64_t{1});
  x.attr("Interleaved", std::string(im.interleaved ? "true" : "false"));
  x.attr("SignificantBits", static_cast<int64_t>(sample_bytes(im.fmt.type) * 8));
  x.attr("BigEndian", std::string("false"));
  if (plausible_mpp(im.mpp_x) && plausible_mpp(im.mpp_y)) {
    x.attr("PhysicalSizeX", im.mpp_x);
    x.attr("PhysicalSizeXUnit", std::string("\xC2\xB5m"));  // µm, UTF-8
    x.attr("PhysicalSizeY", im.mpp_y);
    x.attr("PhysicalSizeYUnit", std::string("\xC2\xB5m"));
  }
  const int channels = im.interleaved ? 1 : im.fmt.channels;
  for (int c = 0; c < channels; ++c) {
    x.start("Channel");
    x.attr("ID", "Channel:" + id + ":" + std::to_string(c));
    if (static_cast<size_t>(c) < im.channel_names.size() && !im.channel_names[c].empty())
      x.attr("Name", im.channel_names[c]);
    x.attr("SamplesPerPixel", static_cast<int64_t>(im.interleaved ? im.fmt.channels : 1));
    x.end();
  }
  for (int c = 0; c < channels; ++c) {
    x.start("TiffData");
    x.attr("IFD", static_cast<int64_t>(im.first_ifd + c));
    x.attr("FirstC", static_cast<int64_t>(c));
    x.attr("FirstZ", int64_t{0});
    x.attr("FirstT", int64_t{0});
    x.attr("PlaneCount", int64_t{1});
    x.end();
  }
  x.end();  // Pixels
  if (!im.vendor_properties.empty()) {
    x.start("AnnotationRef");
    x.attr("ID", "Annotation:" + id);
    x.end();
  }
  x.end();  // Image
}

}  // namespace

const char* ome_pixel_type(SampleType t) {
  switch (t) {
    case SampleType::kU8:
      return "uint8";
    case SampleType::kU16:
      return "uint16";
    case SampleType::kU32:
      return "uint32";
    case SampleType::kI32:
      return "int32";
    case SampleType::kF32:
      return "float";
  }
  return "uint8";
}

std::string ome_xml(const std::vector<OmeImage>& images, const std::string& creator) {
  XmlWriter x;
  x.start_document();
  x.start("OME");
  x.attr("xmlns", std::string(kOmeNs));
  x.attr("xmlns:xsi", std::string("http://www.w3.org/2001/XMLSchema-instance"));
  x.attr("xsi:schemaLocation", std::string(kOmeNs) + " " + kOmeNs + "/ome.xsd");
  x.attr("Creator", creator);
  // The schema's order: Instruments, Images, then StructuredAnnotations.
  for (size_t i = 0; i < images.size(); ++i)
    if (images[i].objective_power > 0) write_instrument(x, images[i], i);
  for (size_t i = 0; i < images.size(); ++i) write_image(x, images[i], i);
  if (std::any_of(images.begin(), images.end(), [](const OmeImage& im) { return !im.vendor_properties.empty(); })) {
    x.start("StructuredAnnotations");
    for (size_t i = 0; i < images.size(); ++i)
      if (!images[i].vendor_properties.empty()) write_map_annotation(x, images[i], i);
    x.end();
  }
  x.end();  // OME
  return x.finish();
}

}  // namespace tw
