#pragma once
// Where the records go: a CSV table (a header row, then one row per object)
// or a GeoJSON FeatureCollection QuPath imports as detections (one Feature
// per object: its outline, objectType "detection", its label, and the same
// values as the CSV under "measurements", the name -> number object QuPath
// 0.4+ writes and reads). Both stream: a record is formatted and written
// when it comes, through a buffer, to a temporary file renamed into place
// by finish().
#include <memory>
#include <string>
#include <vector>

#include "engine/output_file.hpp"
#include "jobs/features/object_stats.hpp"
#include "jobs/features/trace.hpp"

namespace tw::features {

// The columns: which optional ones there are, and their names.
struct TableLayout {
  double mpp_x = 0, mpp_y = 0;             // > 0: the µm columns are there
  std::vector<std::string> channel_names;  // intensity channels (+ "hematoxylin")

  bool has_um() const { return mpp_x > 0 && mpp_y > 0; }
  std::vector<std::string> column_names() const;
  // The record's values, in column order (integers stay integers).
  struct Value {
    double v;
    bool integer;
  };
  std::vector<Value> values(const ObjectRecord& r) const;
};

class TableWriter {
 public:
  virtual ~TableWriter() = default;
  // polygons are used by writers that need_outlines().
  virtual void write(const ObjectRecord& r, const std::vector<Polygon>& polygons) = 0;
  virtual bool needs_outlines() const = 0;
  // Completes the file and renames it into place; returns its size.
  virtual uint64_t finish() = 0;
};

enum class TableFormat { kCsv, kGeoJson };

// The format an output path's extension names (.csv, .geojson or .json);
// InputError for another.
TableFormat table_format_of(const std::string& path);

std::unique_ptr<TableWriter> make_table_writer(TableFormat f, const std::string& path, TableLayout layout);

}  // namespace tw::features
