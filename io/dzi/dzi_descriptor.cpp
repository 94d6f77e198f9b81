#include "io/dzi/dzi_descriptor.hpp"

#include <libxml/xmlwriter.h>

#include <memory>

#include "engine/error.hpp"

namespace tw {
namespace {

const xmlChar* x(const char* s) {
  return reinterpret_cast<const xmlChar*>(s);
}

}  // namespace

std::string dzi_descriptor(int64_t width, int64_t height, int64_t tile, int overlap, const std::string& format) {
  std::unique_ptr<xmlBuffer, void (*)(xmlBufferPtr)> buf(xmlBufferCreate(), xmlBufferFree);
  if (!buf) throw std::bad_alloc();
  std::unique_ptr<xmlTextWriter, void (*)(xmlTextWriterPtr)> w(xmlNewTextWriterMemory(buf.get(), 0), xmlFreeTextWriter);
  if (!w) throw std::bad_alloc();
  auto attr = [&](const char* name, const std::string& value) {
    return xmlTextWriterWriteAttribute(w.get(), x(name), x(value.c_str()));
  };
  bool ok =
      xmlTextWriterSetIndent(w.get(), 1) >= 0 && xmlTextWriterStartDocument(w.get(), nullptr, "UTF-8", nullptr) >= 0;
  ok = ok &&
       xmlTextWriterStartElementNS(w.get(), nullptr, x("Image"), x("http://schemas.microsoft.com/deepzoom/2008")) >= 0;
  ok = ok && attr("Format", format) >= 0 && attr("Overlap", std::to_string(overlap)) >= 0 &&
       attr("TileSize", std::to_string(tile)) >= 0;
  ok = ok && xmlTextWriterStartElement(w.get(), x("Size")) >= 0 && attr("Height", std::to_string(height)) >= 0 &&
       attr("Width", std::to_string(width)) >= 0 && xmlTextWriterEndElement(w.get()) >= 0;
  ok = ok && xmlTextWriterEndElement(w.get()) >= 0 && xmlTextWriterEndDocument(w.get()) >= 0;
  if (!ok) throw InternalError("libxml2 could not write the Deep Zoom descriptor");
  w.reset();  // flushes into buf
  return std::string(reinterpret_cast<const char*>(xmlBufferContent(buf.get())),
                     static_cast<size_t>(xmlBufferLength(buf.get())));
}

}  // namespace tw
