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

#include "engine/output_folder.hpp"
#include "engine/pyramid_sink.hpp"
#include "io/open_sink.hpp"

namespace tw {

// What an existing OUT.zarr must be for a run to replace it: an earlier
// OME-Zarr image store, as this sink writes it: .zgroup, a .zattrs with
// multiscales, and level arrays "0", "1", ... (each a folder with a
// .zarray), nothing else (.zmetadata aside, which consolidating tools add).
// A user's folder that merely holds a .zgroup is not (deleting its other
// files would lose them), as dzi_output.hpp's is_deep_zoom_files_folder.
bool is_zarr_store(const std::string& path);
// The FolderKind for OutputFolder and check_output_folder.
const FolderKind& zarr_store_kind();

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
