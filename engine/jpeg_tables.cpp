#include "engine/jpeg_tables.hpp"

#include <algorithm>

namespace tw {

void merge_jpeg_tables(const std::vector<uint8_t>& tables, const std::vector<uint8_t>& tile,
                       std::vector<uint8_t>& out) {
  const bool tables_end_eoi = tables.size() >= 4 && tables[tables.size() - 2] == 0xff && tables.back() == 0xd9;
  const bool tile_starts_soi = tile.size() >= 2 && tile[0] == 0xff && tile[1] == 0xd8;
  if (!tables_end_eoi || !tile_starts_soi) {
    out = tile;
    return;
  }
  out.resize(tables.size() - 2 + tile.size() - 2);
  std::copy(tables.begin(), tables.end() - 2, out.begin());
  std::copy(tile.begin() + 2, tile.end(), out.begin() + static_cast<long>(tables.size() - 2));
}

}  // namespace tw
