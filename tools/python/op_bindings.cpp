// Every registered op on numpy arrays (tilewave.ops, generated in
// tilewave/ops.py from the table below): the arrays are wrapped as sources
// without a copy, the parameters go through the op's own OpParams (the
// CLI's parser and messages), the op runs through jobs/op_runner as the
// CLI's does, and its result is read tile by tile, in parallel, into a new
// array.
#include <pybind11/numpy.h>
#include <pybind11/stl.h>
#include <tbb/blocked_range2d.h>
#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <optional>

#include "engine/byte_counters.hpp"
#include "engine/json.hpp"
#include "engine/op_registry.hpp"
#include "jobs/op_runner.hpp"
#include "tools/python/array_source.hpp"
#include "tools/python/arrays.hpp"
#include "tools/python/bindings.hpp"
#include "tools/python/common_options.hpp"
#include "tools/python/device_arrays.hpp"
#include "tools/python/errors.hpp"
#include "tools/python/gil.hpp"
#include "tools/tilewave/output.hpp"

namespace py = pybind11;

namespace tw::python {
namespace {

// The engine's time in the last op call of this thread (the op's run and
// the read of its result), for the benchmark of the binding's overhead.
thread_local double t_last_op_seconds = 0;

std::string python_name(std::string s) {
  for (char& c : s)
    if (c == '-') c = '_';
  return s;
}

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

const char* kind_name(ParamSpec::Kind k) {
  switch (k) {
    case ParamSpec::Kind::kReal:
      return "real";
    case ParamSpec::Kind::kInteger:
      return "integer";
    case ParamSpec::Kind::kFlag:
      return "flag";
    case ParamSpec::Kind::kChoice:
      return "choice";
    case ParamSpec::Kind::kText:
      return "text";
  }
  return "text";
}

// What tilewave/ops.py builds the functions, their signatures and
// docstrings from: the registry's entries, nothing else.
py::list op_table() {
  py::list out;
  for (const auto& op : op_registry().all()) {
    py::list params;
    for (const ParamSpec& p : op->params) {
      const bool image =
          std::find(op->optional_inputs.begin(), op->optional_inputs.end(), p.name) != op->optional_inputs.end();
      params.append(py::dict(py::arg("name") = p.name, py::arg("pyname") = python_name(p.name),
                             py::arg("kind") = image ? "image" : kind_name(p.kind),
                             py::arg("placeholder") = p.placeholder, py::arg("help") = p.help, py::arg("lo") = p.lo,
                             py::arg("hi") = p.hi, py::arg("default") = p.fallback, py::arg("required") = p.required,
                             py::arg("choices") = p.choices));
    }
    std::vector<std::string> inputs;
    for (const auto& in : op->inputs) inputs.push_back(python_name(lower(in)));
    out.append(py::dict(py::arg("name") = op->name, py::arg("pyname") = python_name(op->name),
                        py::arg("command") = op->command, py::arg("category") = category_name(op->category),
                        py::arg("summary") = op->summary, py::arg("usage") = op->usage, py::arg("help") = op->help,
                        py::arg("takes") = op->takes, py::arg("inputs") = inputs,
                        py::arg("optional_inputs") = op->optional_inputs, py::arg("params") = params,
                        py::arg("image_result") = op->category != OpCategory::kReduction));
  }
  return out;
}

// The arena of calls limited to n threads: one per n, kept for the process
// (an arena made per call leaves memory behind in TBB, about 7 kB a call of
// a pixel op; calls without a limit run in the default arena).
tbb::task_arena& arena_of(int n) {
  static std::mutex mu;
  // Never destroyed: a daemon thread may still run in one while Python exits.
  static auto& arenas = *new std::map<int, std::unique_ptr<tbb::task_arena>>;
  std::lock_guard<std::mutex> l(mu);
  auto& a = arenas[n];
  if (!a) a = std::make_unique<tbb::task_arena>(n);
  return *a;
}

// Reads the whole of level 0 of src into dst, tiles in parallel.
void read_all(const TileSource& src, const ImageView& dst, int64_t tile) {
  const int64_t w = dst.rect.w, h = dst.rect.h;
  const int64_t tx = (w + tile - 1) / tile, ty = (h + tile - 1) / tile;
  tbb::parallel_for(tbb::blocked_range2d<int64_t>(0, ty, 0, tx), [&](const tbb::blocked_range2d<int64_t>& r) {
    for (int64_t j = r.rows().begin(); j < r.rows().end(); ++j)
      for (int64_t i = r.cols().begin(); i < r.cols().end(); ++i) {
        const Rect t = Rect(i * tile, j * tile, tile, tile).intersect(dst.rect);
        src.read(0, dst.sub(t));
      }
  });
}

// images: the op's inputs in order, then its given optional ones (in the
// op's order); params: name -> value as text (the kwargs, already named as
// the registry names them); options: device, memory, tile, threads.
py::object run_op(const std::string& name, const std::vector<py::object>& images,
                  const std::vector<std::string>& image_names, const std::map<std::string, std::string>& params,
                  const Options& options, bool squeeze) {
  const OpDef* op = op_registry().find(name);
  if (!op) throw py::value_error("unknown op '" + name + "'");
  OpParams p = op->params_for();
  for (const auto& [k, v] : params) {
    require_text(v, python_name(k));
    p.set(k, v);
  }
  // Arrays in GPU memory are read where they lie; the result then goes back
  // to the first one's GPU, and the op runs there unless told otherwise.
  std::vector<SourcePtr> inputs;
  int result_device = -1;
  for (size_t k = 0; k < images.size(); ++k) {
    const std::string what = k < image_names.size() ? image_names[k] : "image";
    if (is_device_array(images[k])) {
      DeviceInput d = device_array_source(images[k], what);
      inputs.push_back(std::move(d.source));
      if (result_device < 0) result_device = d.device;
    } else {
      // np.asarray, so that an object whose own __array__ fails raises its
      // error (pybind11's array::ensure would give a null array).
      py::array a = py::isinstance<py::array>(images[k])
                        ? py::reinterpret_borrow<py::array>(images[k])
                        : py::module_::import("numpy").attr("asarray")(images[k]).cast<py::array>();
      inputs.push_back(std::make_shared<ArraySource>(std::move(a), what));
    }
  }
  Options opts = options;
  const bool device_given = std::any_of(opts.begin(), opts.end(), [](const auto& o) { return o.first == "device"; });
  if (result_device >= 0 && !device_given) opts.emplace_back("device", "cuda:" + std::to_string(result_device));
  cli::CommonOptions common = parse_common_options(op->name, opts);
  ExecContext ctx = cli::context_of(common);

  // The op runs and its result is read with the GIL released: other Python
  // threads go on meanwhile. --threads limits this call's arena only.
  tbb::task_arena* limited = common.threads > 0 ? &arena_of(common.threads) : nullptr;
  auto in_arena = [&](auto&& f) {
    if (limited)
      limited->execute(f);
    else
      f();
  };
  OpResult res;
  const auto t0 = std::chrono::steady_clock::now();
  {
    ReleaseGil nogil;
    in_arena([&] { res = run_registered_op(*op, inputs, p, ctx); });
  }
  double engine_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  warn_in_python();
  if (!res.image) return py::module_::import("json").attr("loads")(dump_json(res.values, -1));
  if (result_device >= 0) {
    py::object out;
    {
      ReleaseGil nogil;
      const auto t1 = std::chrono::steady_clock::now();
      in_arena([&] { out = compute_device_array(*res.image, result_device, squeeze); });
      engine_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - t1).count();
      t_last_op_seconds = engine_s;
      res = OpResult();
      inputs.clear();
    }
    return out;
  }
  const PixelFormat fmt = res.image->info().fmt;
  const LevelInfo& l0 = res.image->level(0);
  py::array out = new_image_array(fmt, l0.width, l0.height, squeeze);
  ImageView v = view_of(out, fmt);
  {
    ReleaseGil nogil;
    const auto t1 = std::chrono::steady_clock::now();
    in_arena([&] { read_all(*res.image, v, std::max<int64_t>(ctx.tile, 64)); });
    engine_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - t1).count();
    t_last_op_seconds = engine_s;
    // The sources are let go here, off the GIL (each takes it to drop its
    // array): a whole-image op's store may take a while to free.
    res = OpResult();
    inputs.clear();
  }
  return std::move(out);
}

}  // namespace

void bind_ops(py::module_& m) {
  m.def("_op_table", &op_table, "The registered ops, their inputs and parameters (for tilewave.ops)");
  m.def("_run_op", &run_op);
  m.def("_last_op_seconds", [] { return t_last_op_seconds; });
  // Bytes the process has copied between host and device (tests: a chain of
  // GPU ops on GPU arrays moves none).
  m.def("_transfer_bytes", [] {
    const ByteCounts b = process_byte_counts();
    return py::dict(py::arg("uploaded") = b.uploaded, py::arg("downloaded") = b.downloaded);
  });
  // Whether an array is read in place (tests: no copy where none is needed).
  m.def("_reads_in_place", [](py::array a) { return ArraySource(std::move(a), "array").zero_copy(); });
}

}  // namespace tw::python
