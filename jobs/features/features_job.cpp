#include "jobs/features/features_job.hpp"

#include <algorithm>
#include <chrono>
#include <deque>
#include <map>
#include <unordered_map>

#include "engine/error.hpp"
#include "engine/memory.hpp"
#include "engine/parallel.hpp"
#include "jobs/features/object_stats.hpp"
#include "jobs/features/row_runs.hpp"
#include "jobs/features/table_writers.hpp"
#include "jobs/features/trace.hpp"

namespace tw {
namespace {

using namespace features;

constexpr PixelFormat kLabels{SampleType::kU32, 1};
// What one open object costs besides its hull (the accumulator, two map
// entries, allocator overhead), for the budget check.
constexpr size_t kObjectBytes = 448;

// Reads dst from level 0 of src in pieces of 1024 columns (aligned, so a
// stored tile is decoded by one piece) on the worker threads.
void read_parallel(const TileSource& src, const ImageView& dst, Border border) {
  constexpr int64_t kPiece = 1024;
  const Rect r = dst.rect;
  const int64_t first = (r.x >= 0 ? r.x / kPiece : -((-r.x + kPiece - 1) / kPiece));
  const int64_t last = (r.x1() - 1 >= 0 ? (r.x1() - 1) / kPiece : -((-(r.x1() - 1) + kPiece - 1) / kPiece));
  parallel_for_each(first, last + 1, [&](int64_t i) {
    const Rect piece = Rect(i * kPiece, r.y, kPiece, r.h).intersect(r);
    src.read(0, dst.sub(piece), border);
  });
}

std::vector<std::string> channel_names(const TileSource* intensity, bool hed) {
  std::vector<std::string> n;
  if (intensity) {
    const PixelFormat f = intensity->info().fmt;
    if (f.channels == 1)
      n.push_back("intensity");
    else if (f.channels == 3)
      n.insert(n.end(), {"red", "green", "blue"});
    else
      for (int c = 0; c < f.channels; ++c) n.push_back("channel" + std::to_string(c));
  }
  if (hed) n.push_back("hematoxylin");
  return n;
}

// Label rows kept for outlines: the bands the open objects span.
struct WindowBand {
  int64_t y0 = 0, y1 = 0;
  Image img;  // u32, columns [-2, width + 2), rows [y0 - 2, y1 + 2)
};

class FeatureScan {
 public:
  FeatureScan(const TileSource& labels, const TileSource* intensity, TableWriter& writer, const FeaturesOptions& opt,
              ExecContext& ctx, FeaturesStats& stats)
      : labels_(labels),
        intensity_(intensity),
        writer_(writer),
        ctx_(ctx),
        stats_(stats),
        width_(labels.level(0).width),
        height_(labels.level(0).height),
        hed_(opt.hematoxylin && intensity && intensity->info().fmt == kRgb8),
        scanner_(width_, intensity ? intensity->info().fmt : kGray8, intensity != nullptr, hed_) {
    // A quarter of the budget for the band, a quarter for the open objects,
    // half for the label rows that outlines need (GeoJSON only).
    const size_t memory = ctx.memory;
    const size_t row = scanner_.bytes_per_row();
    const size_t band_share = writer.needs_outlines() ? memory / 4 : memory / 2;
    if (row > band_share)
      throw InputError("features: a row of " + std::to_string(width_) + " labels needs " + format_bytes(row) +
                       " to scan, more than " + format_bytes(band_share) + " of --memory " + format_bytes(memory) +
                       " (raise --memory)");
    band_rows_ = std::clamp<int64_t>(static_cast<int64_t>(band_share / row), 1, std::max<int64_t>(ctx.tile, 1));
    band_rows_ = std::min(band_rows_, std::max<int64_t>(height_, 1));
    object_share_ = memory / 4;
    window_share_ = writer.needs_outlines() ? memory / 2 : 0;
    outline_limit_ = memory / 4;
    stats_.band_rows = band_rows_;
  }

  void run() {
    BandRuns band;
    for (int64_t y0 = 0; y0 < height_; y0 += band_rows_) {
      const int64_t y1 = std::min(height_, y0 + band_rows_);
      Image lab = take_band_image(y0, y1);
      read_parallel(labels_, lab.view(), Border{BorderMode::kConstant, 0});
      Image inten;
      if (intensity_) {
        inten = Image(intensity_->info().fmt, Rect(0, y0, width_, y1 - y0));
        read_parallel(*intensity_, inten.view(), Border{});
      }
      const ImageView iv = inten.view();
      scanner_.scan(lab.view(), intensity_ ? &iv : nullptr, y0, y1, band);
      if (writer_.needs_outlines()) {
        window_.push_back({y0, y1, std::move(lab)});
      } else {
        spare_.clear();
        spare_.push_back(std::move(lab));
      }
      for (int64_t r = 0; r < y1 - y0; ++r)
        merge_row(y0 + r, band.runs[static_cast<size_t>(r)], band.stats[static_cast<size_t>(r)]);
      emit_ready();
      trim_window(y1);
      if (ctx_.progress) ctx_.progress("features", static_cast<double>(y1) / static_cast<double>(height_));
    }
    for (auto& [first, obj] : by_first_) obj->finished = true;
    emit_ready();
  }

 private:
  Image take_band_image(int64_t y0, int64_t y1) {
    const Rect r(-2, y0 - 2, width_ + 4, y1 - y0 + 4);
    if (!spare_.empty()) {
      Image img = std::move(spare_.back());
      spare_.pop_back();
      if (img.can_hold(kLabels, r)) {
        img.reshape(kLabels, r);
        return img;
      }
    }
    return Image(kLabels, r);
  }

  bool emitted(uint32_t label) const {
    const size_t i = label >> 6;
    return i < emitted_.size() && (emitted_[i] >> (label & 63) & 1);
  }
  void mark_emitted(uint32_t label) {
    const size_t i = label >> 6;
    if (i >= emitted_.size()) emitted_.resize(std::max(i + 1, emitted_.size() * 2), 0);
    emitted_[i] |= uint64_t{1} << (label & 63);
  }

  void merge_row(int64_t y, const std::vector<LabelRun>& runs, const std::vector<double>& st) {
    const int S = scanner_.stat_channels();
    touched_now_.clear();
    ObjectAccumulator* last = nullptr;
    for (size_t k = 0; k < runs.size(); ++k) {
      const LabelRun& run = runs[k];
      ObjectAccumulator* obj = last && last->label == run.label ? last : find_or_open(run, y);
      last = obj;
      if (obj->cur_row != y) touched_now_.push_back(obj);
      const int64_t len = run.x1 - run.x0;
      for (int c = 0; c < S; ++c)
        obj->intensity[static_cast<size_t>(c)].merge(obj->n, len, st[(k * S + c) * 2], st[(k * S + c) * 2 + 1]);
      obj->add_run(y, run.x0, run.x1);
      for (int c = 0; c < 3; ++c) obj->perim[c] += run.perim[c];
    }
    // An object with pixels in the last row but none in this one is complete.
    for (ObjectAccumulator* obj : touched_prev_)
      if (obj->cur_row != y) obj->finished = true;
    std::swap(touched_prev_, touched_now_);
  }

  ObjectAccumulator* find_or_open(const LabelRun& run, int64_t y) {
    auto it = objects_.find(run.label);
    // A label seen again after a row without it is refused whether or not
    // its record is written yet, so the outcome never depends on the bands.
    if (it != objects_.end() && !it->second->finished) return it->second.get();
    if (it != objects_.end() || emitted(run.label))
      throw InputError("features: label " + std::to_string(run.label) + " has pixels again at (" +
                       std::to_string(run.x0) + ", " + std::to_string(y) +
                       ") after a row without any; each label's pixels must lie in consecutive rows (connected "
                       "objects do: relabel with `tilewave label`)");
    auto obj = std::make_unique<ObjectAccumulator>();
    obj->label = run.label;
    obj->first_x = run.x0, obj->first_y = y;
    obj->intensity.resize(static_cast<size_t>(scanner_.stat_channels()));
    ObjectAccumulator* p = obj.get();
    objects_.emplace(run.label, std::move(obj));
    by_first_.emplace(std::make_pair(y, run.x0), p);
    stats_.peak_open_objects = std::max(stats_.peak_open_objects, objects_.size());
    check_object_memory(*p);
    return p;
  }

  void check_object_memory(const ObjectAccumulator& newest) const {
    const size_t per = kObjectBytes + 16 * static_cast<size_t>(scanner_.stat_channels());
    if (objects_.size() * per <= object_share_) return;
    const ObjectAccumulator& oldest = *by_first_.begin()->second;
    throw InputError("features: " + std::to_string(objects_.size()) + " objects are open at once at row " +
                     std::to_string(newest.first_y) + " (records are written in order of their first pixels, " +
                     "and label " + std::to_string(oldest.label) + ", begun at row " + std::to_string(oldest.first_y) +
                     ", is still open): more than " + format_bytes(object_share_) +
                     " of --memory holds (raise --memory)");
  }

  void emit_ready() {
    while (!by_first_.empty()) {
      auto it = by_first_.begin();
      ObjectAccumulator* obj = it->second;
      if (!obj->finished) break;
      std::vector<Polygon> polys;
      if (writer_.needs_outlines()) polys = outline(*obj);
      const ObjectRecord rec = measure(*obj);
      writer_.write(rec, polys);
      ++stats_.objects;
      mark_emitted(obj->label);
      by_first_.erase(it);
      objects_.erase(obj->label);
    }
  }

  // The object's polygons from the label rows it spans: from the window, or
  // (when the window had to let its first rows go) from a re-read.
  std::vector<Polygon> outline(const ObjectAccumulator& obj) {
    const int64_t w = obj.x1 - obj.x0, h = obj.y1 - obj.y0;
    const size_t need = static_cast<size_t>(w) * static_cast<size_t>(h) * 6 + static_cast<size_t>(w + h) * 8;
    if (need > outline_limit_)
      throw InputError("features: the outline of label " + std::to_string(obj.label) + " (bounding box " +
                       std::to_string(w) + " x " + std::to_string(h) + ") needs " + format_bytes(need) +
                       ", more than " + format_bytes(outline_limit_) + " of --memory (raise --memory, or write CSV)");
    std::vector<uint8_t> mask(static_cast<size_t>(w * h));
    Image reread;
    const bool from_window = !window_.empty() && obj.y0 >= window_.front().y0;
    if (!from_window) {
      reread = labels_.read(0, Rect(obj.x0, obj.y0, w, h));
      ++stats_.outlines_reread;
    }
    for (int64_t y = obj.y0; y < obj.y1; ++y) {
      const uint32_t* row;
      if (from_window) {
        const WindowBand& b = window_[static_cast<size_t>((y - window_.front().y0) / band_rows_)];
        row = b.img.ptr<uint32_t>(obj.x0, y);
      } else {
        row = reread.ptr<uint32_t>(obj.x0, y);
      }
      uint8_t* m = mask.data() + (y - obj.y0) * w;
      for (int64_t x = 0; x < w; ++x) m[x] = row[x] == obj.label;
    }
    return trace_polygons(mask.data(), w, h, obj.x0, obj.y0);
  }

  void trim_window(int64_t next_row) {
    const int64_t keep_from = by_first_.empty() ? next_row : by_first_.begin()->first.first;
    auto drop = [&] {
      spare_.clear();  // one spare band at most
      spare_.push_back(std::move(window_.front().img));
      window_.pop_front();
    };
    while (!window_.empty() && window_.front().y1 <= keep_from) drop();
    // Over its share the window lets its oldest bands go; the objects that
    // began there are outlined from a re-read of their bounding box.
    while (window_.size() > 1 && window_bytes() > window_share_) drop();
  }

  size_t window_bytes() const {
    size_t b = 0;
    for (const WindowBand& w : window_) b += w.img.size_bytes();
    return b;
  }

  const TileSource& labels_;
  const TileSource* intensity_;
  TableWriter& writer_;
  ExecContext& ctx_;
  FeaturesStats& stats_;
  const int64_t width_, height_;
  const bool hed_;
  RowScanner scanner_;
  int64_t band_rows_ = 1;
  size_t object_share_ = 0, window_share_ = 0, outline_limit_ = 0;

  std::unordered_map<uint32_t, std::unique_ptr<ObjectAccumulator>> objects_;
  std::map<std::pair<int64_t, int64_t>, ObjectAccumulator*> by_first_;  // live objects by first pixel (y, x)
  std::vector<ObjectAccumulator*> touched_prev_, touched_now_;
  std::vector<uint64_t> emitted_;  // a bit per label value written
  std::deque<WindowBand> window_;
  std::vector<Image> spare_;
};

}  // namespace

FeaturesStats write_features(std::shared_ptr<const TileSource> labels, std::shared_ptr<const TileSource> intensity,
                             const std::string& out_path, const FeaturesOptions& opt, ExecContext& ctx) {
  const auto t0 = std::chrono::steady_clock::now();
  TW_ASSERT(labels != nullptr);
  const SourceInfo& li = labels->info();
  if (li.fmt != kLabels)
    throw InputError(li.path + ": features needs a label image of u32 samples in one channel (as `tilewave label` " +
                     "writes), not " + li.fmt.str());
  FeaturesStats stats;
  stats.width = labels->level(0).width, stats.height = labels->level(0).height;
  if (intensity) {
    const LevelInfo& il = intensity->level(0);
    if (il.width != stats.width || il.height != stats.height)
      throw InputError("--intensity " + intensity->info().path + " is " + std::to_string(il.width) + " x " +
                       std::to_string(il.height) + ", the labels " + li.path + " are " + std::to_string(stats.width) +
                       " x " + std::to_string(stats.height));
  }
  const TableFormat format = table_format_of(out_path);
  const bool hed = opt.hematoxylin && intensity && intensity->info().fmt == kRgb8;
  TableLayout layout;
  layout.mpp_x = opt.mpp > 0 ? opt.mpp : li.mpp_x;
  layout.mpp_y = opt.mpp > 0 ? opt.mpp : li.mpp_y;
  layout.channel_names = channel_names(intensity.get(), hed);
  const std::unique_ptr<TableWriter> writer = make_table_writer(format, out_path, layout);
  FeatureScan scan(*labels, intensity.get(), *writer, opt, ctx, stats);
  scan.run();
  stats.bytes = writer->finish();
  stats.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ctx.report["features"] = {{"objects", stats.objects},
                            {"band_rows", stats.band_rows},
                            {"peak_open_objects", stats.peak_open_objects},
                            {"outlines_reread", stats.outlines_reread},
                            {"bytes", stats.bytes},
                            {"seconds", stats.seconds}};
  return stats;
}

}  // namespace tw
