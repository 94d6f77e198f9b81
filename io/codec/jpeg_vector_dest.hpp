#pragma once
// A libjpeg destination that writes into a std::vector<uint8_t>, growing it
// as the encoder asks: shared by the TIFF tile encoder (jpeg_codec.cpp) and
// the encoder of whole JPEG files (Deep Zoom tiles, regions).
// jpeglib.h needs size_t and FILE declared first.
#include <jpeglib.h>

#include <cstddef>
#include <cstdio>
#include <vector>

namespace tw {

struct JpegVectorDest {
  jpeg_destination_mgr pub;
  std::vector<uint8_t>* out = nullptr;
  size_t initial = 16384;

  // Installs this destination into c; set `out` before each compression.
  void attach(j_compress_ptr c) {
    pub.init_destination = init;
    pub.empty_output_buffer = empty;
    pub.term_destination = term;
    c->dest = &pub;
  }

 private:
  static JpegVectorDest* self(j_compress_ptr c) { return reinterpret_cast<JpegVectorDest*>(c->dest); }
  static void init(j_compress_ptr c) {
    JpegVectorDest* d = self(c);
    if (d->out->size() < d->initial) d->out->resize(d->initial);
    d->pub.next_output_byte = d->out->data();
    d->pub.free_in_buffer = d->out->size();
  }
  static boolean empty(j_compress_ptr c) {
    JpegVectorDest* d = self(c);
    const size_t old = d->out->size();
    d->out->resize(old * 2);
    d->pub.next_output_byte = d->out->data() + old;
    d->pub.free_in_buffer = old;
    return TRUE;
  }
  static void term(j_compress_ptr c) {
    JpegVectorDest* d = self(c);
    d->out->resize(d->out->size() - d->pub.free_in_buffer);
  }
};

}  // namespace tw
