#include "io/tiff/ome_xml_reader.hpp"

#include <libxml/parser.h>
#include <libxml/tree.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <memory>
#include <new>

#include "engine/error.hpp"

namespace tw {
namespace {

// More planes than this is no slide (and no plane table we would build).
constexpr int64_t kMaxPlanes = int64_t{1} << 20;

bool is(const xmlNode* n, const char* local) {
  return n && n->type == XML_ELEMENT_NODE && std::strcmp(reinterpret_cast<const char*>(n->name), local) == 0;
}

// Attribute `name` of n, or "" (OME's attributes are unprefixed).
std::string attr(const xmlNode* n, const char* name) {
  xmlChar* v = xmlGetProp(n, reinterpret_cast<const xmlChar*>(name));
  if (!v) return "";
  std::string s(reinterpret_cast<const char*>(v));
  xmlFree(v);
  return s;
}

std::string text(const xmlNode* n) {
  xmlChar* v = xmlNodeGetContent(n);
  if (!v) return "";
  std::string s(reinterpret_cast<const char*>(v));
  xmlFree(v);
  return s;
}

// Elements are matched by local name: files use OME's namespaces of several
// schema years, or none.
template <class F>
void each_child(const xmlNode* n, const char* local, F&& f) {
  for (const xmlNode* c = n ? n->children : nullptr; c; c = c->next)
    if (is(c, local)) f(c);
}

const xmlNode* first_child(const xmlNode* n, const char* local) {
  for (const xmlNode* c = n ? n->children : nullptr; c; c = c->next)
    if (is(c, local)) return c;
  return nullptr;
}

std::string basename_of(const std::string& path) {
  const auto s = path.find_last_of('/');
  return s == std::string::npos ? path : path.substr(s + 1);
}

// A non-negative integer attribute; `fallback` when absent.
int64_t count_attr(const xmlNode* n, const char* name, int64_t fallback, const std::string& path) {
  const std::string v = attr(n, name);
  if (v.empty()) return fallback;
  char* end = nullptr;
  errno = 0;
  const long long x = std::strtoll(v.c_str(), &end, 10);
  if (errno != 0 || *end != '\0' || x < 0 || x > (int64_t{1} << 40))
    throw InputError("OME-XML of " + path + ": " + name + "=\"" + v.substr(0, 40) + "\" is not a valid count");
  return x;
}

struct XmlDocFree {
  void operator()(xmlDoc* d) const { xmlFreeDoc(d); }
};
struct XmlCtxtFree {
  void operator()(xmlParserCtxt* c) const { xmlFreeParserCtxt(c); }
};

}  // namespace

bool looks_like_ome(const std::string& description) {
  const auto p = description.find("<OME");
  return p != std::string::npos && p < 4096 &&
         (p + 4 == description.size() || std::strchr(" \t\r\n>", description[p + 4]) != nullptr);
}

OmePixels parse_ome_xml(const std::string& xml, const std::string& path, int samples_per_pixel) {
  // Once per process, before any thread parses (libxml2's rule).
  static const bool init = [] {
    xmlInitParser();
    return true;
  }();
  (void)init;
  std::unique_ptr<xmlParserCtxt, XmlCtxtFree> ctxt(xmlNewParserCtxt());
  if (!ctxt) throw std::bad_alloc();
  // No network, no entity expansion (XML_PARSE_NOENT is not set), nothing
  // printed: the file is not trusted.
  const int options = XML_PARSE_NONET | XML_PARSE_NOERROR | XML_PARSE_NOWARNING | XML_PARSE_NOBLANKS;
  std::unique_ptr<xmlDoc, XmlDocFree> doc(xmlCtxtReadMemory(
      ctxt.get(), xml.data(), static_cast<int>(std::min<size_t>(xml.size(), INT32_MAX)), "ome.xml", nullptr, options));
  if (!doc) {
    const xmlError* e = xmlCtxtGetLastError(ctxt.get());
    std::string why = e && e->message ? e->message : "not well-formed";
    while (!why.empty() && (why.back() == '\n' || why.back() == ' ')) why.pop_back();
    throw InputError("OME-XML of " + path + " cannot be parsed: " + why +
                     (e ? " (line " + std::to_string(e->line) + ")" : std::string()));
  }
  const xmlNode* root = xmlDocGetRootElement(doc.get());
  if (!is(root, "OME")) throw InputError("OME-XML of " + path + " has no <OME> root element");

  OmePixels px;
  const xmlNode* image = nullptr;
  each_child(root, "Image", [&](const xmlNode* n) {
    ++px.images;
    if (!image) {
      image = n;
      return;
    }
    if (px.others.size() >= 64) return;  // refused as series anyway
    OmeOtherImage o{attr(n, "Name").substr(0, 200), -1};
    if (const xmlNode* tiff_data = first_child(first_child(n, "Pixels"), "TiffData"))
      o.ifd = count_attr(tiff_data, "IFD", 0, path);
    px.others.push_back(o);
  });
  if (!image) throw InputError("OME-XML of " + path + " describes no image");
  const xmlNode* pixels = first_child(image, "Pixels");
  if (!pixels) throw InputError("OME-XML of " + path + " has an Image without Pixels");
  px.size_x = count_attr(pixels, "SizeX", 0, path);
  px.size_y = count_attr(pixels, "SizeY", 0, path);
  px.size_c = count_attr(pixels, "SizeC", 1, path);
  px.size_z = count_attr(pixels, "SizeZ", 1, path);
  px.size_t_ = count_attr(pixels, "SizeT", 1, path);
  px.type = attr(pixels, "Type");
  const std::string order = attr(pixels, "DimensionOrder");
  if (!order.empty()) px.dimension_order = order;
  if (px.size_c < 1 || px.size_z < 1 || px.size_t_ < 1)
    throw InputError("OME-XML of " + path + ": SizeC, SizeZ and SizeT must be at least 1");
  static const char* kOrders[] = {"XYZCT", "XYZTC", "XYCTZ", "XYCZT", "XYTCZ", "XYTZC"};
  if (std::none_of(std::begin(kOrders), std::end(kOrders), [&](const char* o) { return px.dimension_order == o; }))
    throw InputError("OME-XML of " + path + ": unknown DimensionOrder \"" + px.dimension_order.substr(0, 40) + "\"");
  each_child(pixels, "Channel", [&](const xmlNode* n) {
    if (px.channels.size() >= static_cast<size_t>(kMaxPlanes)) return;
    const int64_t spp = std::min<int64_t>(count_attr(n, "SamplesPerPixel", 1, path), kMaxPlanes);
    px.channels.push_back({attr(n, "Name"), static_cast<int>(spp)});
  });

  // Planes: SizeC / (samples per IFD) channel planes, times Z, times T.
  const int spp = std::max(samples_per_pixel, 1);
  if (px.size_c % spp != 0)
    throw InputError("OME-XML of " + path + ": SizeC=" + std::to_string(px.size_c) + " is not a multiple of the " +
                     std::to_string(spp) + " samples per pixel of its IFDs");
  const int64_t pc = px.size_c / spp;
  if (pc > kMaxPlanes || px.size_z > kMaxPlanes || px.size_t_ > kMaxPlanes || pc * px.size_z > kMaxPlanes / px.size_t_)
    throw InputError("OME-XML of " + path + " describes more planes than any slide has");
  const int64_t planes = pc * px.size_z * px.size_t_;
  // Strides of C, Z, T in the plane order (the first after XY varies fastest).
  int64_t stride_c = 0, stride_z = 0, stride_t = 0, s = 1;
  for (char dim : px.dimension_order.substr(2)) {
    int64_t& st = dim == 'C' ? stride_c : dim == 'Z' ? stride_z : stride_t;
    st = s;
    s *= dim == 'C' ? pc : dim == 'Z' ? px.size_z : px.size_t_;
  }
  px.plane_ifd.assign(static_cast<size_t>(planes), -1);
  const std::string own_uuid = attr(root, "UUID"), own_name = basename_of(path);
  bool any = false;
  int64_t assigned = 0;
  each_child(pixels, "TiffData", [&](const xmlNode* n) {
    any = true;
    if (const xmlNode* u = first_child(n, "UUID")) {
      const std::string file = attr(u, "FileName"), id = text(u);
      const bool other = !file.empty() ? file != own_name : (!id.empty() && id != own_uuid);
      if (other && px.other_file.empty()) px.other_file = (file.empty() ? id : file).substr(0, 200);
    }
    const bool has_ifd = !attr(n, "IFD").empty();
    const int64_t ifd = count_attr(n, "IFD", 0, path);
    const int64_t c = count_attr(n, "FirstC", 0, path), z = count_attr(n, "FirstZ", 0, path),
                  t = count_attr(n, "FirstT", 0, path);
    if (c >= pc || z >= px.size_z || t >= px.size_t_) return;  // outside the image: maps nothing
    const int64_t first = c * stride_c + z * stride_z + t * stride_t;
    // PlaneCount: given, or 1 after an IFD, or every plane (the schema's rule).
    const int64_t count = count_attr(n, "PlaneCount", has_ifd ? 1 : planes, path);
    const int64_t n_set = std::min(count, planes - first);
    // Many TiffData of many planes each would be a hang, not a slide.
    if ((assigned += n_set) > 4 * kMaxPlanes)
      throw InputError("OME-XML of " + path + " maps more planes than any slide has");
    for (int64_t i = 0; i < n_set; ++i) px.plane_ifd[static_cast<size_t>(first + i)] = ifd + i;
  });
  if (!any)  // no TiffData: the planes are the IFDs in order
    for (int64_t i = 0; i < planes; ++i) px.plane_ifd[static_cast<size_t>(i)] = i;
  return px;
}

}  // namespace tw
