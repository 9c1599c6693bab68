// `_strata`: map_blocks, map_overlap and apply_gufunc with Python functions.
//
// A Python function runs on the engine's worker threads and holds the GIL
// only for its call and the conversions around it; the copy of its result
// into the task's pool runs without. Its inputs are read-only numpy views of
// the engine's blocks (no copy; valid during the call only, so a function
// that keeps one is refused). Its result is turned into the declared dtype
// where numpy's same_kind casting allows (else the block is refused) and
// copied into a buffer of the task's MemoryPool, so that it is measured. A
// Python exception is stashed and raised as itself by compute(), with the op
// and the block in a note. The ops carry calling_process_only: the processes
// and mpi executors refuse them (the function lives in this interpreter);
// the dask executor's workers make them again from their records, the
// function shipped by cloudpickle (python/strata/_dask.py).
//
// Thread-safety: the MapBlocksFunction/GufuncFunction made here may be
// called from any thread, concurrently; each call takes the GIL.
#include <fmt/format.h>

#include <chrono>
#include <memory>
#include <optional>
#include <thread>

#include "strata/api/gufunc.h"
#include "strata/api/overlap.h"
#include "strata/python/binding.h"

namespace strata::python {
namespace {

// A Python function with what its results must be.
struct PythonFunction {
  std::shared_ptr<py::object> fn;  // released with the GIL (see Hold)
  std::vector<DType> dtypes;       // one per result
  bool several = false;            // returns a tuple of len(dtypes) arrays
  bool pass_block_id = false;
};

// The function object is released with the GIL, whichever thread drops the
// last reference, unless the interpreter is already gone.
std::shared_ptr<py::object> Hold(py::object fn) {
  auto* ref = new py::object(std::move(fn));
  return std::shared_ptr<py::object>(ref, [](py::object* o) {
    if (Py_IsInitialized() && !_Py_IsFinalizing()) {
      py::gil_scoped_acquire gil;
      delete o;
    }
  });
}

// `result` (anything numpy.asarray takes) as a block of `dtype` in `pool`.
// Called with the GIL; releases it for the copy.
Result<NDArray> ToBlock(py::handle result, DType dtype, std::string_view which, MemoryPool& pool) {
  py::module_ np = py::module_::import("numpy");
  py::array a = np.attr("asarray")(result);
  const std::string got = py::str(a.dtype().attr("name")).cast<std::string>();
  const std::string want(dtype.name());
  if (a.dtype().attr("kind").cast<std::string>() == "O") {
    return InvalidArgumentError(fmt::format("the function returned {} ({}), not an array of {}",
                                            TypeName(result), which, want));
  }
  if (!a.dtype().equal(py::dtype(want))) {
    if (!np.attr("can_cast")(a.dtype(), want, py::arg("casting") = "same_kind").cast<bool>()) {
      return InvalidArgumentError(fmt::format(
          "the function returned a {} block ({}) where {} was declared, and numpy's same_kind "
          "casting does not turn one into the other; declare the function's dtype, or cast in "
          "the function",
          got, which, want));
    }
    a = a.attr("astype")(want);
  }
  Shape shape(a.shape(), a.shape() + a.ndim());
  Result<NDArray> out = NDArray::Allocate(pool, dtype, shape);
  if (!out.ok()) {
    return out.status().WithContext(
        fmt::format("the function's result ({}, shape {})", which, ShapeToString(shape)));
  }
  if (out->nbytes() > 0) {
    Shape strides(a.strides(), a.strides() + a.ndim());
    const ConstArrayView from(static_cast<const std::byte*>(a.data()), dtype, shape, strides);
    py::gil_scoped_release release;  // `a` stays referenced; only its bytes are read
    CopyArray(from, out->view());
  }
  return out;
}

// How often a reference still held after the call is looked at again, a
// millisecond apart, before the block is refused.
constexpr int kKeptChecks = 20;

Result<std::vector<NDArray>> Call(const PythonFunction& f, std::span<const ConstArrayView> blocks,
                                  const BlockInfo& info, MemoryPool& pool) {
  py::gil_scoped_acquire gil;
  try {
    // The views' base (numpy wants one to not copy); they point into
    // Strata's memory, which outlives the call.
    py::object keeper = py::str("strata input block");
    py::tuple args(blocks.size());
    for (size_t i = 0; i < blocks.size(); ++i) args[i] = ViewToNumpy(blocks[i], keeper);
    py::dict kwargs;
    if (f.pass_block_id) kwargs["block_id"] = IndexTuple(info.block);
    std::vector<NDArray> out;
    {
      py::object r = (*f.fn)(*args, **kwargs);
      if (!f.several) {
        STRATA_ASSIGN_OR_RETURN(NDArray b, ToBlock(r, f.dtypes[0], "its result", pool));
        out.push_back(std::move(b));
      } else {
        if (!py::isinstance<py::tuple>(r) && !py::isinstance<py::list>(r)) {
          return InvalidArgumentError(
              fmt::format("the function returned {}, expected a tuple of {} arrays (one per output)",
                          TypeName(r), f.dtypes.size()));
        }
        py::sequence results = py::reinterpret_borrow<py::sequence>(r);
        if (results.size() != f.dtypes.size()) {
          return InvalidArgumentError(
              fmt::format("the function returned {} arrays, the signature has {} outputs",
                          results.size(), f.dtypes.size()));
        }
        for (size_t j = 0; j < f.dtypes.size(); ++j) {
          py::object item = results[j];
          STRATA_ASSIGN_OR_RETURN(
              NDArray b, ToBlock(item, f.dtypes[j], fmt::format("output {}", j), pool));
          out.push_back(std::move(b));
        }
      }
    }
    // A reference the function kept would outlive the block's memory. A
    // sampling profiler (Dask's workers run one) may hold the call's frame,
    // and with it the inputs, for a moment after the call returns: let other
    // threads run before deciding.
    for (int wait = 0;; ++wait) {
      std::optional<size_t> kept;
      for (size_t i = 0; i < blocks.size() && !kept; ++i) {
        if (Py_REFCNT(PyTuple_GET_ITEM(args.ptr(), static_cast<py::ssize_t>(i))) > 1) kept = i;
      }
      if (!kept) break;
      if (wait == kKeptChecks) {
        return InvalidArgumentError(fmt::format(
            "the function kept a reference to input {}; inputs are read-only views of Strata's "
            "memory, valid only during the call: keep a copy (numpy.array(x)) instead",
            *kept));
      }
      py::gil_scoped_release release;
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    return out;
  } catch (py::error_already_set& e) {
    // Not retried (the function would fail again): Unknown is not retryable.
    return UnknownError(StashPythonError(e));
  }
}

MapBlocksFunction OneResult(PythonFunction f) {
  return [f = std::move(f)](std::span<const ConstArrayView> blocks, const BlockInfo& info,
                            MemoryPool& pool) -> Result<NDArray> {
    STRATA_ASSIGN_OR_RETURN(std::vector<NDArray> out, Call(f, blocks, info, pool));
    return std::move(out[0]);
  };
}

PythonFunction Function(py::object fn, std::vector<DType> dtypes, bool pass_block_id,
                        std::string_view op) {
  if (!PyCallable_Check(fn.ptr())) {
    throw py::type_error(
        fmt::format("{}: {} is not callable", op, py::repr(fn).cast<std::string>()));
  }
  PythonFunction f;
  f.several = dtypes.size() > 1;
  f.dtypes = std::move(dtypes);
  f.pass_block_id = pass_block_id;
  f.fn = Hold(std::move(fn));
  return f;
}

constexpr char kReason[] = "calls a Python function";

Array MapBlocks(py::object fn, std::vector<Array> arrays, const std::string& dtype,
                std::optional<Shape> chunks, int64_t extra_mem, std::string name,
                bool pass_block_id) {
  const DType t = ToDType(dtype);
  MapBlocksOptions options;
  if (chunks) options.chunks = *chunks;
  options.extra_mem = extra_mem;
  options.name = std::move(name);
  options.calling_process_only = kReason;
  return Checked(map_blocks(
      options, OneResult(Function(std::move(fn), {t}, pass_block_id, "map_blocks")), arrays, t));
}

Boundary ToBoundary(const std::string& b) {
  if (b == "none") return Boundary::kNone;
  if (b == "constant") return Boundary::kConstant;
  if (b == "nearest") return Boundary::kNearest;
  if (b == "reflect") return Boundary::kReflect;
  if (b == "periodic") return Boundary::kPeriodic;
  throw py::value_error(fmt::format(
      "map_overlap: unknown boundary '{}' (expected none, constant, nearest, reflect or periodic)",
      b));
}

Array MapOverlap(py::object fn, std::vector<Array> arrays, const std::string& dtype,
                 std::vector<Index> depth, std::vector<Index> depth_after,
                 const std::vector<std::string>& boundary, py::handle constant_value, bool trim,
                 int64_t extra_mem, std::string name, bool pass_block_id) {
  const DType t = ToDType(dtype);
  OverlapOptions options;
  options.depth = std::move(depth);
  options.depth_after = std::move(depth_after);
  options.boundary.clear();
  for (const std::string& b : boundary) options.boundary.push_back(ToBoundary(b));
  options.constant_value = ToScalar(constant_value);
  options.trim = trim;
  options.extra_mem = extra_mem;
  options.name = std::move(name);
  options.calling_process_only = kReason;
  return Checked(map_overlap(OneResult(Function(std::move(fn), {t}, pass_block_id, "map_overlap")),
                             arrays, t, std::move(options)));
}

std::vector<Array> ApplyGufunc(py::object fn, const std::string& signature,
                               std::vector<Array> arrays, const std::vector<std::string>& dtypes,
                               std::map<std::string, Index> output_sizes, int64_t extra_mem,
                               bool allow_rechunk, std::string name) {
  std::vector<DType> types;
  for (const std::string& d : dtypes) types.push_back(ToDType(d));
  GufuncOptions options;
  options.output_sizes = std::move(output_sizes);
  options.extra_mem = extra_mem;
  options.allow_rechunk = allow_rechunk;
  options.name = std::move(name);
  options.calling_process_only = kReason;
  PythonFunction f = Function(std::move(fn), types, false, "apply_gufunc");
  GufuncFunction call = [f = std::move(f)](std::span<const ConstArrayView> blocks,
                                           const BlockInfo& info, MemoryPool& pool) {
    return Call(f, blocks, info, pool);
  };
  std::vector<Array> out = apply_gufunc(std::move(call), signature, arrays, types, options);
  for (const Array& a : out) Checked(a);
  return out;
}

}  // namespace

void RegisterBlockFunctions(py::module_& m) {
  m.def("map_blocks", &MapBlocks, py::arg("fn"), py::arg("arrays"), py::arg("dtype"),
        py::arg("chunks") = py::none(), py::arg("extra_mem") = 0, py::arg("name") = "map_blocks",
        py::arg("pass_block_id") = false);
  m.def("map_overlap", &MapOverlap, py::arg("fn"), py::arg("arrays"), py::arg("dtype"),
        py::arg("depth"), py::arg("depth_after"), py::arg("boundary"),
        py::arg("constant_value") = 0, py::arg("trim") = true, py::arg("extra_mem") = 0,
        py::arg("name") = "map_overlap", py::arg("pass_block_id") = false);
  m.def(
      "gufunc_signature",
      [](const std::string& signature) {
        GufuncSignature s = Unwrap(ParseGufuncSignature(signature));
        return py::make_tuple(s.inputs, s.outputs);
      },
      py::arg("signature"), "The core dimensions of a signature: (inputs, outputs).");
  m.def("apply_gufunc", &ApplyGufunc, py::arg("fn"), py::arg("signature"), py::arg("arrays"),
        py::arg("dtypes"), py::arg("output_sizes"), py::arg("extra_mem") = 0,
        py::arg("allow_rechunk") = true, py::arg("name") = "apply_gufunc");
}

}  // namespace strata::python
