#pragma once
// Writing a command's result: any TileSource becomes a tiled pyramidal
// BigTIFF (the writer of `tilewave pyramid`), so every result opens in a
// viewer. Shared by every command that writes an image.
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "engine/exec_context.hpp"
#include "jobs/pyramid/pyramid_job.hpp"
#include "jobs/write_result.hpp"
#include "tools/tilewave/args.hpp"

namespace tw::cli {

// --compression --quality --subsampling --level --no-predictor --min-size --gpu-jpeg
std::vector<OptionSpec> output_option_specs();

struct OutputRequest {
  const TileSource* src = nullptr;
  std::string output;
  std::string description;        // ImageDescription of level 0
  bool lossless_default = false;  // default deflate rather than JPEG (results of ops)
  bool allow_passthrough = false;
  bool copy_associated = false;
  std::string progress_label;  // empty: "pyramid"
  // A pyramid of the source's own pixels: an Aperio source's description
  // replaces `description` in the generic layout (jobs/write_result.hpp).
  bool keep_vendor_description = false;
};

struct OutputResult {
  PyramidStats stats;
  uint64_t bytes = 0;
  double finish_seconds = 0;
  bool passthrough = false;
};

// What a command writes at OUTPUT: a pyramid in the layout its name picks
// (io/open_sink.hpp layout_for: a .png or .jpg name is refused), or one
// plain file (region's and thumbnail's PNG/JPEG, features' table).
enum class OutputKind { kPyramid, kFile };

// Refuses, before any work, an OUTPUT or --report path that would replace
// something other than a regular file (an OME-Zarr output: an earlier
// store), or one of `inputs` (and a report that is the output itself).
void check_paths(const std::string& output, const CommonOptions& common, const std::vector<std::string>& inputs,
                 OutputKind kind = OutputKind::kPyramid);

// The run's context (backend, threads, budgets, tile) from the options.
ExecContext context_of(const CommonOptions& c);

// The writer's settings from the output options (UsageError for bad ones).
OutputSpec output_spec(const OutputRequest& req, const Args& a);

OutputResult write_output(const OutputRequest& req, const Args& a, const CommonOptions& common);

// Sets apart, from common.memory, what `in` needs to decode its tiles or
// strips (engine/tile_source.hpp reserve_decode_memory): a file whose header
// asks for more than the budget is refused here, before any work.
void reserve_input_memory(const TileSource& in, CommonOptions& common);

// Ops read their input in tiles with halos: reserve_input_memory, then lets
// `in` keep decoded tiles (an eighth of the rest, at most 256 MiB).
void cache_input_reads(const TileSource& in, CommonOptions& common);

// "wrote OUT: N levels from W x H (fmt), size, seconds"
void print_written(const OutputRequest& req, const OutputResult& r, const std::string& what);

// --report FILE.json: the pass's figures plus op-specific JSON fields.
void write_report(const std::string& path, const std::string& command, const std::string& input,
                  const std::string& output, const OutputResult& r, double open_s, double total_s,
                  const nlohmann::json& extra = nlohmann::json::object());

}  // namespace tw::cli
