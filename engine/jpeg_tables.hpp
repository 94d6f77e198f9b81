#pragma once
// TIFF stores JPEG tiles "abbreviated": the tables once per level (the
// JPEGTables tag), each tile without them. Decoders that take one complete
// stream per image (nvJPEG) need them joined back.
#include <cstdint>
#include <vector>

namespace tw {

// out = tables without their EOI, then the tile without its SOI. A tile that
// is already complete (or tables that are absent) is copied as it is.
void merge_jpeg_tables(const std::vector<uint8_t>& tables, const std::vector<uint8_t>& tile, std::vector<uint8_t>& out);

}  // namespace tw
