// Shared pieces of the `_strata` extension module: the thin skin between
// Python and the C++ API (argument conversion, GIL release, exception
// translation). Nothing here decides anything about arrays; that is api/'s.
//
// Thread-safety: every function here is called with the GIL held unless its
// comment says otherwise.
#ifndef STRATA_PYTHON_BINDING_H_
#define STRATA_PYTHON_BINDING_H_

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <exception>
#include <memory>
#include <string>
#include <vector>

#include "strata/api/chunks.h"
#include "strata/base/status.h"
#include "strata/core/ndarray.h"
#include "strata/strata.h"

namespace strata::python {

namespace py = pybind11;

// Where a failed Status came from: errors of planning (a plan over
// allowed_mem) become strata.PlanError; the same code while running is a
// MemoryError.
enum class Phase { kBuild, kPlan, kCompute };

// A failed Status on its way to Python (see RegisterErrors).
struct StatusError : std::exception {
  StatusError(Status s, Phase p) : status(std::move(s)), phase(p) {}
  const char* what() const noexcept override { return "strata error"; }
  Status status;
  Phase phase;
};

[[noreturn]] inline void Throw(const Status& status, Phase phase = Phase::kBuild) {
  throw StatusError(status, phase);
}
inline void Check(const Status& status, Phase phase = Phase::kBuild) {
  if (!status.ok()) Throw(status, phase);
}
template <typename T>
T Unwrap(Result<T> r, Phase phase = Phase::kBuild) {
  if (!r.ok()) Throw(r.status(), phase);
  return std::move(r).value();
}
// An Array in an error state raises here: Python code gets its exception
// where the bad operation is written, as with numpy, Dask and Cubed.
inline Array Checked(Array a) {
  if (!a.ok()) Throw(a.status());
  return a;
}

// Python exceptions raised inside tasks (the functions of map_blocks,
// map_overlap and apply_gufunc): kept here and re-raised as they are when the
// compute's error reaches Python. The Status carries "[python exception N]"
// to find it.
std::string StashPythonError(py::error_already_set& e);
// The same for an exception object (one raised in another process): the
// text to append to a Status message, " [python exception N]".
std::string StashPythonObject(py::object exception);
// The stashed exception `*message` names, taken from the stash, with its tag
// removed from `*message`; None when there is none.
py::object TakeStashedPythonError(std::string* message);

void RegisterErrors(py::module_& m);

// Conversions.
//
// Named arguments: the one place a Python value becomes a C++ setting. A
// value of the wrong type raises TypeError and one out of range ValueError,
// each naming `what` ("Spec: retries"), where pybind11's own conversion
// gives "Unable to cast Python instance" or the whole signature.
// An int (or anything with __index__, such as numpy's; not a bool) in
// [min, max].
int64_t ToInt64Arg(py::handle h, std::string_view what, int64_t min, int64_t max);
// A bool (Python's or numpy's).
bool ToBoolArg(py::handle h, std::string_view what);
// A str.
std::string ToStrArg(py::handle h, std::string_view what);
// A size: None (unset), text such as "2GB", or a number of bytes that fits
// in int64.
ByteSize ToByteSizeArg(py::handle h, std::string_view what);

DType ToDType(const std::string& name);
Scalar ToScalar(py::handle h);
bool IsScalar(py::handle h);
ChunksRequest ToChunks(py::handle h);
// The name of h's Python type, for error messages.
inline std::string TypeName(py::handle h) {
  return py::str(py::type::of(h).attr("__name__")).cast<std::string>();
}
inline bool IsArray(py::handle h) { return py::isinstance<Array>(h); }
Spec ToSpec(py::handle h);  // a _strata.Spec or None (defaults)
// x with exactly `grid` (no-op when it already has it).
Array WithGrid(Array x, const ChunkGrid& grid);

// NDArray <-> numpy without copies: a result becomes a numpy array whose base
// is a capsule owning the NDArray; a numpy array (C-contiguous, aligned,
// native byte order, checked by the caller) becomes an NDArray over its
// memory, keeping a reference to it.
py::array ToNumpy(NDArray a);
std::shared_ptr<const NDArray> FromNumpy(py::array a);
// A read-only numpy view of `v`, valid while `base` lives.
py::array ViewToNumpy(const ConstArrayView& v, py::handle base);
// Block coordinates as a tuple of ints (a block_id).
py::tuple IndexTuple(std::span<const Index> v);

void RegisterArray(py::module_& m);
// The operations of issue 16 and the data type functions (array_extras.cc).
void RegisterArrayExtras(py::module_& m);
// The `_strata.linalg` submodule (linalg.cc).
void RegisterLinalg(py::module_& m);
void RegisterCompute(py::module_& m);
// map_blocks, map_overlap and apply_gufunc with Python functions
// (block_functions.cc).
void RegisterBlockFunctions(py::module_& m);
void RegisterExternalRun(py::module_& m);
// `_strata.Store` and `open_store` (store.cc).
void RegisterStore(py::module_& m);
void RegisterHierarchy(py::module_& m);

}  // namespace strata::python

#endif  // STRATA_PYTHON_BINDING_H_
