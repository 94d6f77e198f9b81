#include "io/open_sink.hpp"

#include "io/tiff/tiff_pyramid_sink.hpp"

namespace tw {

size_t sink_memory_bytes(const SinkRequest& r) {
  return PyramidTiffWriter::index_bytes(r.levels);
}

std::unique_ptr<PyramidSink> open_sink(const SinkRequest& r) {
  return std::make_unique<TiffPyramidSink>(r.path, r.encode, r.levels, r.options);
}

}  // namespace tw
