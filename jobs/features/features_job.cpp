#include "jobs/features/features_job.hpp"

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <deque>
#include <numeric>
#include <unordered_map>

#include "engine/error.hpp"
#include "engine/memory.hpp"
#include "engine/side_task.hpp"
#include "engine/trace.hpp"
#include "jobs/features/label_set.hpp"
#include "jobs/features/object_stats.hpp"
#include "jobs/features/row_runs.hpp"
#include "jobs/features/table_writers.hpp"
#include "jobs/features/trace.hpp"
#include "jobs/features/write_queue.hpp"

namespace tw {
namespace {

using namespace features;

constexpr PixelFormat kLabels{SampleType::kU32, 1};
// What one open object costs besides its hull (the accumulator, two map
// entries, allocator overhead), for the budget check.
constexpr size_t kObjectBytes = 448;
// A batch of finished records is formatted on the worker threads, then
// written in order: at most this many records, or about this much text
// (less under a small --memory: 1/16 of it).
constexpr size_t kBatchRecords = 4096;
constexpr size_t kBatchText = size_t{8} << 20;
// Records formatted by one task.
constexpr size_t kFormatGrain = 16;

// Whether any of the u32 labels of `rect` (inside `labels`) is non-zero.
bool any_labelled(const ImageView& labels, const Rect& rect) {
  for (int64_t y = rect.y; y < rect.y1(); ++y) {
    const uint32_t* row = labels.ptr<uint32_t>(rect.x, y);
    uint32_t any = 0;
    for (int64_t x = 0; x < rect.w; ++x) any |= row[x];
    if (any) return true;
  }
  return false;
}

// Reads dst from level 0 of src in pieces of whole stored tiles' columns
// (so that a stored tile is decoded by one piece) on the worker threads.
// With `only_where` (u32 labels covering dst's rows), pieces without a
// labelled pixel are not read: only objects' pixels are measured, and most
// of a slide's tiles (glass, stroma) hold no nucleus, so most of the
// intensity's decoding is saved. What is not read is never looked at.
void read_parallel(const TileSource& src, const ImageView& dst, Border border, const ImageView* only_where = nullptr) {
  const int64_t tw = src.level(0).tile_w;
  const int64_t piece = tw > 0 && tw < src.level(0).width ? tw * std::max<int64_t>(1, 256 / tw) : 1024;
  const Rect r = dst.rect;
  auto floor_div = [&](int64_t a) { return a >= 0 ? a / piece : -((-a + piece - 1) / piece); };
  const int64_t first = floor_div(r.x), last = floor_div(r.x1() - 1);
  tbb::parallel_for(first, last + 1, [&](int64_t i) {
    const Rect p = Rect(i * piece, r.y, piece, r.h).intersect(r);
    if (only_where && !any_labelled(*only_where, p)) return;
    src.read(0, dst.sub(p), border);
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

int64_t lcm(int64_t a, int64_t b) {
  return a / std::gcd(a, b) * b;
}

// Label rows of one band: the band being scanned, and for outlines the
// bands the open objects span.
struct WindowBand {
  int64_t y0 = 0, y1 = 0;
  Image img;  // u32, columns [-2, width + 2), rows [y0 - 2, y1 + 2)
};

// A run of the rows being merged: its index there and its row.
struct RunRef {
  uint32_t index;
  int32_t row;  // from the first of those rows
};

// A run of the row above, for finding a run's object without a hash look-up.
struct PrevRun {
  int64_t x0, x1;
  uint32_t label;
  ObjectAccumulator* obj;
};

// The scan, in bands of full-width rows:
//  1. read the band (labels with a 2-row halo, intensity), rows in pieces on
//     the worker threads; each stored row is read once (the halo rows are
//     kept from the band before), and a band is whole stored tiles high
//     where the budget allows, so each stored tile is decoded once;
//  2. find the border pixels and count each row's runs (parallel);
//  3. in groups of rows whose runs fit their share of the budget: cut the
//     rows into runs (parallel), assign each run to its object in raster
//     order (serial, usually by the run of the same label overlapping it in
//     the row above), then add up each object's runs in raster order
//     (objects in parallel: the sums are those of a serial merge, bit for
//     bit);
//  4. measure, outline and format the finished records in batches on the
//     worker threads, and write them in order.
class FeatureScan {
 public:
  FeatureScan(const TileSource& labels, const TileSource* intensity, std::vector<TableWriter*> writers,
              const FeaturesOptions& opt, ExecContext& ctx, FeaturesStats& stats)
      : labels_(labels),
        intensity_(intensity),
        writers_(std::move(writers)),
        ctx_(ctx),
        stats_(stats),
        width_(labels.level(0).width),
        height_(labels.level(0).height),
        hed_(opt.hematoxylin && intensity && intensity->info().fmt == kRgb8),
        outlines_(std::any_of(writers_.begin(), writers_.end(), [](TableWriter* w) { return w->needs_outlines(); })),
        scanner_(width_, intensity ? intensity->info().fmt : kGray8, intensity != nullptr, hed_),
        output_(writers_, 2) {
    // A quarter of the budget for the band, a quarter for the open objects,
    // half for the label rows that outlines need (GeoJSON only).
    const size_t memory = ctx.memory;
    const size_t pixels = scanner_.pixel_bytes_per_row();
    const size_t worst_runs = static_cast<size_t>(width_) * (scanner_.bytes_per_run() + kRunSideBytes);
    const size_t row = pixels + worst_runs;
    const size_t band_share = outlines_ ? memory / 4 : memory / 2;
    if (row > band_share)
      throw InputError("features: a row of " + std::to_string(width_) + " labels needs " + format_bytes(row) +
                       " to scan, more than " + format_bytes(band_share) + " of --memory " + format_bytes(memory) +
                       " (raise --memory)");
    // The band's pixels take at most half the share, and leave room for
    // the runs of one row at worst (every pixel its own run); the runs of
    // the band's rows are counted before they are made, and made in groups
    // of rows that fit the rest.
    const size_t pixel_share = std::min(band_share / 2, band_share - worst_runs);
    band_rows_ = std::clamp<int64_t>(static_cast<int64_t>(pixel_share / pixels) - 4, 1, std::max<int64_t>(ctx.tile, 1));
    // Whole stored tiles high where that fits, so that each is decoded once.
    int64_t align = labels.level(0).tile_h;
    if (align > 0 && intensity && intensity->level(0).tile_h > 0) {
      const int64_t both = lcm(align, intensity->level(0).tile_h);
      if (both <= band_rows_) align = both;
    }
    if (align > 0 && align < height_ && band_rows_ >= align) band_rows_ = band_rows_ / align * align;
    band_rows_ = std::min(band_rows_, std::max<int64_t>(height_, 1));
    // The first band is 2 rows short, so that every later band's reads
    // (its rows + 2) start on a stored tile's first row.
    first_band_rows_ = align > 0 && band_rows_ % align == 0 && band_rows_ > 4 ? band_rows_ - 2 : band_rows_;
    // Where two bands fit the pixels' share, the next is read while one is
    // scanned (on a whole slide the reading, mostly the intensity's JPEG
    // decoding, was a third of the scan's time, alone on the critical path).
    const size_t band_pixels = static_cast<size_t>(band_rows_ + 4) * pixels;
    prefetch_ = 2 * band_pixels <= pixel_share;
    const size_t bands_pixels = (prefetch_ ? 2 : 1) * band_pixels;
    run_share_ = std::max(worst_runs, band_share - std::min(band_share, bands_pixels));
    stats_.read_ahead = prefetch_;
    object_share_ = memory / 4;
    window_share_ = outlines_ ? memory / 2 : 0;
    outline_limit_ = memory / 4;
    batch_text_ = std::clamp<size_t>(memory / 16, size_t{64} << 10, kBatchText);
    const int threads = std::max(1, tbb::this_task_arena::max_concurrency());
    parallel_outline_limit_ = outline_limit_ / static_cast<size_t>(threads);
    stats_.band_rows = band_rows_;
  }

  void run() {
    std::vector<int64_t> counts;
    start_fetch(0, band_end(0));
    for (int64_t y0 = 0; y0 < height_;) {
      const int64_t y1 = fetch_.y1;
      {
        TraceSpan span("features-read", y0);
        finish_fetch();
      }
      // The next band is read while this one is scanned, where two fit.
      if (prefetch_ && y1 < height_) start_fetch(y1, band_end(y1));
      const ImageView lab = band_labels().view();
      const ImageView iv = inten_.view();
      {
        TraceSpan span("features-prepare", y0);
        scanner_.prepare(lab, y0, y1, counts);
      }
      // Groups of rows whose runs fit the share.
      const size_t per_run = scanner_.bytes_per_run() + kRunSideBytes;
      for (int64_t s0 = y0; s0 < y1;) {
        int64_t s1 = s0;
        size_t runs = 0;
        while (s1 < y1 &&
               (s1 == s0 || (runs + static_cast<size_t>(counts[static_cast<size_t>(s1 - y0)])) * per_run <= run_share_))
          runs += static_cast<size_t>(counts[static_cast<size_t>(s1 - y0)]), ++s1;
        merge_rows(lab, intensity_ ? &iv : nullptr, s0, s1, counts.data() + (s0 - y0));
        emit_ready();
        s0 = s1;
      }
      keep_halo(y1);
      trim_window(y1);
      if (ctx_.progress) ctx_.progress("features", static_cast<double>(y1) / static_cast<double>(height_));
      if (!prefetch_ && y1 < height_) start_fetch(y1, band_end(y1));
      y0 = y1;
    }
    for (ObjectAccumulator* obj : by_first_) obj->finished = true;
    emit_ready();
    output_.drain();
    stats_.outlines_reread = outlines_reread_.load();
  }

 private:
  // Per run besides LabelRun and its statistics: its RunRef and object.
  static constexpr size_t kRunSideBytes = sizeof(RunRef) + sizeof(ObjectAccumulator*);

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

  const Image& band_labels() const { return outlines_ ? window_.back().img : current_; }

  int64_t band_end(int64_t y0) const { return std::min(height_, y0 + (y0 == 0 ? first_band_rows_ : band_rows_)); }

  // Starts reading the band [y0, y1): labels rows [y0 - 2, y1 + 2) and
  // intensity rows [y0, y1 + 2), except the rows before y0 + 2, which come
  // from the band before (halo_, inten_halo_) when it is installed. With
  // prefetch_ the reads run on a thread of their own (their tiles decoded
  // on the worker threads) while the band before is scanned; the images
  // are taken here, on the scan's thread, which owns the spares.
  void start_fetch(int64_t y0, int64_t y1) {
    fetch_.y0 = y0, fetch_.y1 = y1;
    fetch_.lab = take_band_image(y0, y1);
    const int64_t read_from = y0 == 0 ? -2 : y0 + 2;
    const ImageView lab = fetch_.lab.view().sub(Rect(-2, read_from, width_ + 4, y1 + 2 - read_from));
    ImageView inten;
    if (intensity_) {
      const PixelFormat f = intensity_->info().fmt;
      const Rect r(0, y0, width_, std::min(height_, y1 + 2) - y0);
      if (fetch_.inten.can_hold(f, r))
        fetch_.inten.reshape(f, r);
      else
        fetch_.inten = Image(f, r);
      const int64_t from = y0 == 0 ? 0 : std::min(y0 + 2, r.y1());
      inten = fetch_.inten.view().sub(Rect(0, from, width_, r.y1() - from));
    }
    auto read = [this, lab, inten] {
      read_parallel(labels_, lab, Border{BorderMode::kConstant, 0});
      // The intensity's rows lie within the labels' rows just read.
      if (!inten.rect.empty()) read_parallel(*intensity_, inten, Border{}, &lab);
    };
    if (prefetch_)
      fetch_task_.start(read);
    else
      read();
  }

  // Waits for the band start_fetch began (rethrowing what its reads threw),
  // adds the rows it takes from the band before and makes it current.
  void finish_fetch() {
    fetch_task_.finish();
    const int64_t y0 = fetch_.y0, y1 = fetch_.y1;
    Image lab = std::move(fetch_.lab);
    if (y0 > 0)
      for (int64_t y = y0 - 2; y < y0 + 2; ++y)
        std::memcpy(lab.row_bytes(y), halo_.row_bytes(y), lab.view().row_length_bytes());
    if (intensity_) {
      const int64_t from = y0 == 0 ? 0 : std::min(y0 + 2, std::min(height_, y1 + 2));
      for (int64_t y = y0; y < from; ++y)
        std::memcpy(fetch_.inten.row_bytes(y), inten_halo_.row_bytes(y), fetch_.inten.view().row_length_bytes());
      std::swap(inten_, fetch_.inten);  // the band before's image is the next fetch's
    }
    if (outlines_) {
      window_.push_back({y0, y1, std::move(lab)});
    } else {
      if (!current_.empty()) spare_.push_back(std::move(current_));
      current_ = std::move(lab);
    }
  }

  // Keeps the rows the next band (from y1) takes from this one.
  void keep_halo(int64_t y1) {
    if (y1 >= height_) return;
    const Image& lab = band_labels();
    const Rect hr(-2, y1 - 2, width_ + 4, 4);
    if (halo_.empty()) halo_ = Image(kLabels, hr);
    halo_.set_origin(-2, y1 - 2);
    for (int64_t y = y1 - 2; y < y1 + 2; ++y)
      std::memcpy(halo_.row_bytes(y), lab.row_bytes(y), lab.view().row_length_bytes());
    if (intensity_) {
      const int64_t n = std::min<int64_t>(2, height_ - y1);
      const Rect ir(0, y1, width_, n);
      if (!inten_halo_.can_hold(inten_.fmt(), ir))
        inten_halo_ = Image(inten_.fmt(), ir);
      else
        inten_halo_.reshape(inten_.fmt(), ir);
      for (int64_t y = y1; y < y1 + n; ++y)
        std::memcpy(inten_halo_.row_bytes(y), inten_.row_bytes(y), inten_.view().row_length_bytes());
    }
  }

  // Rows [s0, s1) (counts: their runs per row).
  void merge_rows(const ImageView& lab, const ImageView* inten, int64_t s0, int64_t s1, const int64_t* counts) {
    const int64_t rows = s1 - s0;
    const int S = scanner_.stat_channels();
    offsets_.resize(static_cast<size_t>(rows + 1));
    offsets_[0] = 0;
    for (int64_t r = 0; r < rows; ++r)
      offsets_[static_cast<size_t>(r + 1)] = offsets_[static_cast<size_t>(r)] + counts[r];
    const size_t n = static_cast<size_t>(offsets_.back());
    runs_.resize(n);
    run_stats_.resize(n * 2 * static_cast<size_t>(S));
    run_obj_.resize(n);
    refs_.resize(n);
    {
      TraceSpan span("features-scan", s0);
      scanner_.scan(lab, inten, s0, s1, offsets_.data(), runs_.data(), run_stats_.data());
    }
    {  // serial
      TraceSpan assign("features-assign", s0);

      // Each run's object, in raster order: the object of the run of the same
      // label overlapping it in the row above, else a look-up.
      touched_.clear();
      for (int64_t r = 0; r < rows; ++r) {
        const int64_t y = s0 + r;
        next_.clear();
        size_t j = 0;
        ObjectAccumulator* last = nullptr;
        for (int64_t k = offsets_[static_cast<size_t>(r)]; k < offsets_[static_cast<size_t>(r + 1)]; ++k) {
          const LabelRun& run = runs_[static_cast<size_t>(k)];
          while (j < prev_.size() && prev_[j].x1 <= run.x0) ++j;
          ObjectAccumulator* obj = nullptr;
          for (size_t q = j; q < prev_.size() && prev_[q].x0 < run.x1; ++q)
            if (prev_[q].label == run.label) {
              obj = prev_[q].obj;
              break;
            }
          if (!obj) obj = last && last->label == run.label ? last : find_or_open(run, y);
          last = obj;
          obj->seen_row = y;
          if (obj->band_runs++ == 0) touched_.push_back(obj);
          run_obj_[static_cast<size_t>(k)] = obj;
          next_.push_back({run.x0, run.x1, run.label, obj});
        }
        std::swap(prev_, next_);
      }
      // Each object's runs together, in raster order.
      size_t at = 0;
      for (ObjectAccumulator* obj : touched_) {
        obj->band_first = at;
        at += static_cast<size_t>(obj->band_runs);
        obj->runs_total += obj->band_runs;
        obj->band_runs = 0;
      }
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t k = offsets_[static_cast<size_t>(r)]; k < offsets_[static_cast<size_t>(r + 1)]; ++k) {
          ObjectAccumulator* obj = run_obj_[static_cast<size_t>(k)];
          refs_[obj->band_first + static_cast<size_t>(obj->band_runs++)] = {static_cast<uint32_t>(k),
                                                                            static_cast<int32_t>(r)};
        }
    }
    // Each object adds up its runs, in raster order: the same operations in
    // the same order as a serial merge.
    TraceSpan sum("features-sum", s0);
    tbb::parallel_for(tbb::blocked_range<size_t>(0, touched_.size(), 64), [&](const tbb::blocked_range<size_t>& range) {
      for (size_t t = range.begin(); t < range.end(); ++t) {
        ObjectAccumulator* obj = touched_[t];
        for (int64_t i = 0; i < obj->band_runs; ++i) {
          const RunRef ref = refs_[obj->band_first + static_cast<size_t>(i)];
          const LabelRun& run = runs_[ref.index];
          const double* st = run_stats_.data() + static_cast<size_t>(ref.index) * 2 * static_cast<size_t>(S);
          const int64_t len = run.x1 - run.x0;
          for (int c = 0; c < S; ++c)
            obj->intensity[static_cast<size_t>(c)].merge(obj->n, len, st[2 * c], st[2 * c + 1]);
          obj->add_run(s0 + ref.row, run.x0, run.x1);
          for (int c = 0; c < 3; ++c) obj->perim[c] += run.perim[c];
        }
        obj->band_runs = 0;
      }
    });
    // An object with no run in the last row is complete.
    for (ObjectAccumulator* obj : carried_)
      if (obj->seen_row < s1 - 1) obj->finished = true;
    carried_.clear();
    for (ObjectAccumulator* obj : touched_) {
      if (obj->seen_row < s1 - 1)
        obj->finished = true;
      else
        carried_.push_back(obj);
    }
  }

  ObjectAccumulator* find_or_open(const LabelRun& run, int64_t y) {
    auto it = objects_.find(run.label);
    // A label seen again after a row without it is refused whether or not
    // its record is written yet, so the outcome never depends on the bands.
    if (it != objects_.end() && it->second->seen_row >= y - 1) return it->second.get();
    if (it != objects_.end() || emitted_.contains(run.label))
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
    by_first_.push_back(p);  // objects open in raster order of their first pixels
    stats_.peak_open_objects = std::max(stats_.peak_open_objects, objects_.size());
    check_object_memory(*p);
    return p;
  }

  void check_object_memory(const ObjectAccumulator& newest) const {
    const size_t per = kObjectBytes + 16 * static_cast<size_t>(scanner_.stat_channels());
    if (objects_.size() * per <= object_share_) return;
    const ObjectAccumulator& oldest = *by_first_.front();
    // Finished objects wait for their band's end too (records go out in
    // order of first pixels): a smaller band (--tile) holds fewer.
    throw InputError("features: " + std::to_string(objects_.size()) + " objects are held at once at row " +
                     std::to_string(newest.first_y) + " (open, or complete and waiting for their band of " +
                     std::to_string(band_rows_) + " rows to be written in order; the first, label " +
                     std::to_string(oldest.label) + ", began at row " + std::to_string(oldest.first_y) +
                     "): more than the " + format_bytes(object_share_) +
                     " of --memory they may take (raise --memory, or give a smaller --tile)");
  }

  // Text a record may take, for the size of a batch.
  size_t text_estimate(const ObjectAccumulator& obj) const {
    return writers_.size() * (512 + 24 * obj.intensity.size()) +
           (outlines_ ? 4 * 16 * static_cast<size_t>(obj.runs_total) : 0);
  }

  size_t outline_bytes(const ObjectAccumulator& obj) const {
    const int64_t w = obj.x1 - obj.x0, h = obj.y1 - obj.y0;
    return static_cast<size_t>(w) * static_cast<size_t>(h) * 6 + static_cast<size_t>(w + h) * 8;
  }

  // Writes the records of the objects that are complete and have no open
  // object begun before them.
  void emit_ready() {
    while (!by_first_.empty() && by_first_.front()->finished) {
      // A batch, in order.
      batch_.clear();
      size_t text = 0;
      while (!by_first_.empty() && batch_.size() < kBatchRecords && text < batch_text_) {
        ObjectAccumulator* obj = by_first_.front();
        if (!obj->finished) break;
        auto node = objects_.find(obj->label);
        batch_.push_back(std::move(node->second));
        objects_.erase(node);
        by_first_.pop_front();
        emitted_.insert(obj->label);
        text += text_estimate(*obj);
      }
      write_batch();
    }
  }

  void write_batch() {
    TraceSpan span("features-format", static_cast<int64_t>(batch_.size()));
    const size_t n = batch_.size();
    std::vector<std::vector<Polygon>> big(n);
    std::vector<char> traced(n, 0);
    if (outlines_) {
      // Outlines too large to trace several at once are traced here, one at
      // a time (their masks are what is large; the rings are not), and the
      // first too large for the budget is refused in record order.
      for (size_t i = 0; i < n; ++i) {
        const size_t need = outline_bytes(*batch_[i]);
        if (need <= parallel_outline_limit_) continue;
        if (need > outline_limit_) {
          const ObjectAccumulator& obj = *batch_[i];
          throw InputError("features: the outline of label " + std::to_string(obj.label) + " (bounding box " +
                           std::to_string(obj.x1 - obj.x0) + " x " + std::to_string(obj.y1 - obj.y0) + ") needs " +
                           format_bytes(need) + ", more than " + format_bytes(outline_limit_) +
                           " of --memory (raise --memory, or write CSV)");
        }
        big[i] = outline(*batch_[i]);
        traced[i] = 1;
      }
    }
    const size_t groups = (n + kFormatGrain - 1) / kFormatGrain;
    const size_t W = writers_.size();
    std::vector<std::string> texts(groups * W);
    tbb::parallel_for(size_t{0}, groups, [&](size_t g) {
      for (size_t i = g * kFormatGrain; i < std::min(n, (g + 1) * kFormatGrain); ++i) {
        ObjectAccumulator& obj = *batch_[i];
        std::vector<Polygon> polys;
        if (traced[i])
          polys = std::move(big[i]);
        else if (outlines_)
          polys = outline(obj);
        const ObjectRecord rec = measure(obj);
        for (size_t w = 0; w < W; ++w) writers_[w]->format(rec, polys, texts[g * W + w]);
        batch_[i].reset();  // freed here rather than on the one thread
      }
    });

    output_.push(std::move(texts));
    stats_.objects += static_cast<int64_t>(n);
    batch_.clear();
  }

  // The object's polygons from the label rows it spans: from the window, or
  // (when the window had to let its first rows go) from a re-read. Called
  // on the worker threads.
  std::vector<Polygon> outline(const ObjectAccumulator& obj) const {
    const int64_t w = obj.x1 - obj.x0, h = obj.y1 - obj.y0;
    std::vector<uint8_t> mask(static_cast<size_t>(w * h));
    Image reread;
    const bool from_window = !window_.empty() && obj.y0 >= window_.front().y0;
    if (!from_window) {
      reread = labels_.read(0, Rect(obj.x0, obj.y0, w, h));
      ++outlines_reread_;
    }
    // The window band holding the first row (bands are sorted by rows).
    size_t b = 0;
    if (from_window) {
      b = static_cast<size_t>(std::upper_bound(window_.begin(), window_.end(), obj.y0,
                                               [](int64_t y, const WindowBand& wb) { return y < wb.y0; }) -
                              window_.begin()) -
          1;
    }
    for (int64_t y = obj.y0; y < obj.y1; ++y) {
      const uint32_t* row;
      if (from_window) {
        while (y >= window_[b].y1) ++b;
        row = window_[b].img.ptr<uint32_t>(obj.x0, y);
      } else {
        row = reread.ptr<uint32_t>(obj.x0, y);
      }
      uint8_t* m = mask.data() + (y - obj.y0) * w;
      for (int64_t x = 0; x < w; ++x) m[x] = row[x] == obj.label;
    }
    return trace_polygons(mask.data(), w, h, obj.x0, obj.y0);
  }

  void trim_window(int64_t next_row) {
    const int64_t keep_from = by_first_.empty() ? next_row : by_first_.front()->first_y;
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
  std::vector<TableWriter*> writers_;
  ExecContext& ctx_;
  FeaturesStats& stats_;
  const int64_t width_, height_;
  const bool hed_, outlines_;
  RowScanner scanner_;
  int64_t band_rows_ = 1, first_band_rows_ = 1;
  size_t run_share_ = 0, object_share_ = 0, window_share_ = 0, outline_limit_ = 0, parallel_outline_limit_ = 0;
  size_t batch_text_ = kBatchText;

  // The band: its labels (current_, or the window's last band), intensity,
  // and the rows the next band takes from it.
  Image current_, inten_, halo_, inten_halo_;
  // The runs of the rows being merged, their statistics, objects and refs.
  std::vector<int64_t> offsets_;
  std::vector<LabelRun> runs_;
  std::vector<double> run_stats_;
  std::vector<ObjectAccumulator*> run_obj_;
  std::vector<RunRef> refs_;
  std::vector<PrevRun> prev_, next_;  // the runs of the row above, of this row
  std::vector<ObjectAccumulator*> touched_, carried_;

  std::unordered_map<uint32_t, std::unique_ptr<ObjectAccumulator>> objects_;
  std::deque<ObjectAccumulator*> by_first_;  // live objects in raster order of their first pixels
  LabelSet emitted_;                         // the labels written
  std::vector<std::unique_ptr<ObjectAccumulator>> batch_;
  WriteQueue output_;
  mutable std::atomic<int64_t> outlines_reread_{0};
  std::deque<WindowBand> window_;
  std::vector<Image> spare_;
  // The band being read (ahead of the one scanned, with prefetch_).
  struct Fetch {
    int64_t y0 = 0, y1 = 0;
    Image lab, inten;
  } fetch_;
  bool prefetch_ = false;
  SideTask fetch_task_;  // last: joined before the images it fills go
};

}  // namespace

FeaturesStats write_features(std::shared_ptr<const TileSource> labels, std::shared_ptr<const TileSource> intensity,
                             const std::vector<std::string>& out_paths, const FeaturesOptions& opt, ExecContext& ctx) {
  const auto t0 = std::chrono::steady_clock::now();
  TW_ASSERT(labels != nullptr);
  TW_ASSERT(!out_paths.empty());
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
  std::vector<TableFormat> formats;
  for (const std::string& p : out_paths) formats.push_back(table_format_of(p));
  const bool hed = opt.hematoxylin && intensity && intensity->info().fmt == kRgb8;
  TableLayout layout;
  layout.mpp_x = opt.mpp > 0 ? opt.mpp : li.mpp_x;
  layout.mpp_y = opt.mpp > 0 ? opt.mpp : li.mpp_y;
  layout.channel_names = channel_names(intensity.get(), hed);
  std::vector<std::unique_ptr<TableWriter>> writers;
  std::vector<TableWriter*> ptrs;
  for (size_t i = 0; i < out_paths.size(); ++i) {
    writers.push_back(make_table_writer(formats[i], out_paths[i], layout));
    ptrs.push_back(writers.back().get());
  }
  FeatureScan scan(*labels, intensity.get(), ptrs, opt, ctx, stats);
  scan.run();
  for (auto& w : writers) {
    stats.output_bytes.push_back(w->finish());
    stats.bytes += stats.output_bytes.back();
  }
  stats.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ctx.report["features"] = {{"objects", stats.objects},
                            {"band_rows", stats.band_rows},
                            {"read_ahead", stats.read_ahead},
                            {"peak_open_objects", stats.peak_open_objects},
                            {"outlines_reread", stats.outlines_reread},
                            {"bytes", stats.bytes},
                            {"seconds", stats.seconds}};
  return stats;
}

FeaturesStats write_features(std::shared_ptr<const TileSource> labels, std::shared_ptr<const TileSource> intensity,
                             const std::string& out_path, const FeaturesOptions& opt, ExecContext& ctx) {
  return write_features(std::move(labels), std::move(intensity), std::vector<std::string>{out_path}, opt, ctx);
}

}  // namespace tw
