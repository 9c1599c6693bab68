// Exception translation: a Status becomes the Python exception a numpy,
// Dask or Cubed user expects, carrying Strata's message.
#include <fmt/format.h>

#include <atomic>
#include <map>

#include "strata/base/thread_annotations.h"
#include "strata/python/binding.h"

namespace strata::python {
namespace {

PyObject* g_plan_error = nullptr;
PyObject* g_linalg_error = nullptr;

Mutex g_errors_mu;
// Leaked at exit.
std::map<uint64_t, py::object>* g_errors STRATA_GUARDED_BY(g_errors_mu) = nullptr;
std::atomic<uint64_t> g_next_error{1};

constexpr std::string_view kTag = " [python exception ";

// The id of the stashed Python exception named in `message`, and where its
// tag starts; npos when there is none.
std::pair<uint64_t, size_t> FindTag(std::string_view message) {
  const size_t at = message.find(kTag);
  if (at == std::string_view::npos) return {0, at};
  uint64_t id = 0;
  for (size_t i = at + kTag.size(); i < message.size() && message[i] >= '0' && message[i] <= '9';
       ++i) {
    id = id * 10 + static_cast<uint64_t>(message[i] - '0');
  }
  return {id, at};
}

// The stashed Python exception named in `message`, removed from the stash.
py::object TakePythonError(std::string_view message) {
  const auto [id, at] = FindTag(message);
  if (at == std::string_view::npos) return py::object();
  MutexLock lock(&g_errors_mu);
  if (!g_errors) return py::object();
  auto it = g_errors->find(id);
  if (it == g_errors->end()) return py::object();
  py::object e = std::move(it->second);
  g_errors->erase(it);
  return e;
}

PyObject* ExceptionType(const Status& s, Phase phase) {
  switch (s.code()) {
    case StatusCode::kInvalidArgument:
      return PyExc_ValueError;
    case StatusCode::kFailedPrecondition:
      // A matrix a linalg op cannot factor (api/linalg_extension.h).
      if (s.message().find("linalg.") != std::string_view::npos) return g_linalg_error;
      return PyExc_ValueError;
    case StatusCode::kOutOfRange:
      return PyExc_IndexError;
    case StatusCode::kNotFound:
      return PyExc_FileNotFoundError;
    case StatusCode::kAlreadyExists:
      return PyExc_FileExistsError;
    case StatusCode::kPermissionDenied:
      return PyExc_PermissionError;
    case StatusCode::kResourceExhausted:
      if (phase == Phase::kPlan) return g_plan_error;
      // A full disk is storage; a pool over its cap is memory.
      if (s.message().find("No space left") != std::string_view::npos) return PyExc_OSError;
      return PyExc_MemoryError;
    case StatusCode::kUnimplemented:
      return PyExc_NotImplementedError;
    case StatusCode::kCancelled:
      return PyExc_KeyboardInterrupt;
    case StatusCode::kUnavailable:
    case StatusCode::kDeadlineExceeded:
    case StatusCode::kDataLoss:
    case StatusCode::kAborted:
    case StatusCode::kUnknown:
      return PyExc_OSError;
    default:
      return PyExc_RuntimeError;
  }
}

}  // namespace

std::string StashPythonError(py::error_already_set& e) {
  const uint64_t id = g_next_error++;
  std::string what = fmt::format("{}: {}", py::str(e.type().attr("__name__")).cast<std::string>(),
                                 py::str(e.value()).cast<std::string>());
  {
    MutexLock lock(&g_errors_mu);
    if (!g_errors) g_errors = new std::map<uint64_t, py::object>();
    (*g_errors)[id] = e.value();
  }
  return fmt::format("{}{}{}]", what, kTag, id);
}

std::string StashPythonObject(py::object exception) {
  const uint64_t id = g_next_error++;
  {
    MutexLock lock(&g_errors_mu);
    if (!g_errors) g_errors = new std::map<uint64_t, py::object>();
    (*g_errors)[id] = std::move(exception);
  }
  return fmt::format("{}{}]", kTag, id);
}

py::object TakeStashedPythonError(std::string* message) {
  py::object e = TakePythonError(*message);
  if (!e) return py::none();
  const size_t at = FindTag(*message).second;
  const size_t end = message->find(']', at);
  message->erase(at, end == std::string::npos ? std::string::npos : end - at + 1);
  return e;
}

void RegisterErrors(py::module_& m) {
  // A plan that does not fit allowed_mem: a MemoryError (the issue) and a
  // ValueError (what Cubed raises for it), so code written for either works.
  py::tuple bases = py::make_tuple(py::handle(PyExc_MemoryError), py::handle(PyExc_ValueError));
  g_plan_error = PyErr_NewExceptionWithDoc(
      "strata.PlanError",
      "The plan cannot run within its Spec: a task's projected memory is over allowed_mem, or "
      "the results do not fit in total_system_mem. Raised before anything runs.",
      bases.ptr(), nullptr);
  m.add_object("PlanError", py::handle(g_plan_error));
  // numpy.linalg's name; a ValueError too, as the message is about the data.
  g_linalg_error = PyErr_NewExceptionWithDoc(
      "strata.linalg.LinAlgError",
      "A matrix the linalg op cannot handle: singular (inv, solve, matrix_power with n < 0), not "
      "positive definite (cholesky), or an SVD or eigensolver that did not converge. Raised by "
      "the compute that meets it.",
      PyExc_ValueError, nullptr);
  m.add_object("LinAlgError", py::handle(g_linalg_error));

  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const StatusError& e) {
      const std::string message(e.status.message());
      py::object original = TakePythonError(message);
      if (original) {
        // The function's own exception, with where it happened as a note.
        std::string note = message;
        const size_t at = FindTag(note).second;
        const size_t end = note.find(']', at);
        note.erase(at, end == std::string::npos ? std::string::npos : end - at + 1);
        if (py::hasattr(original, "add_note")) original.attr("add_note")("strata: " + note);
        PyErr_SetObject(reinterpret_cast<PyObject*>(Py_TYPE(original.ptr())), original.ptr());
        return;
      }
      PyErr_SetString(ExceptionType(e.status, e.phase), message.c_str());
    }
  });
}

}  // namespace strata::python
