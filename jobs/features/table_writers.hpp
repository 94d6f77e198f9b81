#pragma once
// Where the records go: a CSV table (a header row, then one row per object)
// or a GeoJSON FeatureCollection QuPath imports as detections (one Feature
// per object: its outline, objectType "detection", its label, and the same
// values as the CSV under "measurements", the name -> number object QuPath
// 0.4+ writes and reads). Both stream: records are formatted in batches on
// the worker threads and written in order, through a buffer, to a temporary
// file renamed into place by finish(). The text is written directly (not
// through nlohmann::json, which took most of the time), byte for byte as
// nlohmann's dump() writes the same document.
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

// Records are formatted on the worker threads (format() is const and
// thread-safe) and written in order by one thread (write()).
class TableWriter {
 public:
  virtual ~TableWriter() = default;
  // Whether format() uses the outlines (else it is given none).
  virtual bool needs_outlines() const = 0;
  // Appends the record's text to out, a separator() first unless out is
  // empty.
  virtual void format(const ObjectRecord& r, const std::vector<Polygon>& polygons, std::string& out) const = 0;
  // Appends text holding whole records (from format()) to the file.
  virtual void write(const std::string& text) = 0;
  // Completes the file and renames it into place; returns its size.
  virtual uint64_t finish() = 0;
};

enum class TableFormat { kCsv, kGeoJson };

// The format an output path's extension names (.csv, .geojson or .json);
// InputError for another.
TableFormat table_format_of(const std::string& path);

std::unique_ptr<TableWriter> make_table_writer(TableFormat f, const std::string& path, TableLayout layout);

}  // namespace tw::features
