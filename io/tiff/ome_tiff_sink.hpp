#pragma once
// The pyramid job's sink for OME-TIFF (OUT.ome.tif): the layout Bio-Formats
// and QuPath read as a pyramid. Each plane's reduced levels are SubIFDs of
// its full-resolution directory (io/tiff/pyramid_writer.hpp, kSubIfds), and
// the first directory's ImageDescription is OME-XML (io/tiff/ome_xml_writer.hpp).
//
// Planes: gray is one plane, 8-bit RGB one interleaved plane (JPEG as for
// `.tif`); any other image of N channels is N planes, one a channel, each
// with its own levels. The pass hands the sink interleaved tiles: encode()
// splits a tile into its channels and compresses each, write() hands each
// plane's tile to the writer.
#include <memory>
#include <string>
#include <vector>

#include "engine/pyramid_sink.hpp"
#include "io/codec/tile_codec.hpp"
#include "io/tiff/pyramid_writer.hpp"

namespace tw {

// How many planes (directories of full resolution) an image written with
// `enc` takes: 1 for gray and 8-bit RGB, else one per channel. A source's
// interleaved tiles can be copied as stored only into a file of one plane.
int ome_tiff_planes(const EncodeSettings& enc);

class OmeTiffSink : public PyramidSink, public JpegCoefSink {
 public:
  // levels[k].format: the interleaved format the pass would store at level
  // k (level 0 may be a source's raw format, for one plane only);
  // channel_names: empty or one per channel.
  OmeTiffSink(const std::string& path, const EncodeSettings& enc, std::vector<PyramidLevelSpec> levels,
              PyramidWriterOptions opt, std::vector<std::string> channel_names);
  ~OmeTiffSink() override;

  void encode(int level, const ImageView& tile, std::vector<uint8_t>& out) override;
  void write(int level, int64_t tx, int64_t ty, const std::vector<uint8_t>& bytes) override;
  double compression_ratio_estimate() const override;
  std::optional<JpegCoefSpec> jpeg_coef_spec(int level) const override;
  void encode_coefficients(int level, const int16_t* coefs, std::vector<uint8_t>& out) override;

  void add_associated(const std::string& name, const Image& img) override;
  void finish() override;
  uint64_t bytes_written() const override;
  JpegCoefSink* jpeg_coefs() override;

  // The sink's memory until finish() (the writer's tile index of every plane).
  static size_t index_bytes(const EncodeSettings& enc, const std::vector<PyramidLevelSpec>& levels);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tw
