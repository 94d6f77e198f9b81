#pragma once
// The pyramid job's sink for OME-Zarr 0.4 (a Zarr v2 directory store):
// one array per level ("0", "1", ...) of axes (c, y, x), one chunk per pass
// tile at L/0/TY/TX, the multiscales and omero metadata in the group's
// .zattrs (io/zarr/zarr_metadata.hpp). The store is written under a
// temporary folder name and renamed into place by finish()
// (engine/output_folder.hpp). Holds no tile index: each chunk is its own
// file, which encode() writes on the worker thread that compressed it
// (write() has nothing left to do).
#include <memory>

#include "engine/pyramid_sink.hpp"
#include "io/open_sink.hpp"

namespace tw {

// What an existing OUT.zarr must be for a run to replace it: a folder with
// a .zgroup (an earlier run's store, or another Zarr group).
bool is_zarr_store(const std::string& path);

class ZarrSink : public PyramidSink {
 public:
  // InputError for a codec or path the store cannot take, before any work.
  explicit ZarrSink(const SinkRequest& r);
  ~ZarrSink() override;

  void encode(int level, const ImageView& tile, std::vector<uint8_t>& out) override;
  void write(int level, int64_t tx, int64_t ty, const std::vector<uint8_t>& bytes) override;
  double compression_ratio_estimate() const override;
  void finish() override;
  uint64_t bytes_written() const override;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tw
