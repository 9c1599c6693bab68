// Argument conversion between Python objects and the C++ API's types.
#include <fmt/format.h>

#include "strata/python/binding.h"

namespace strata::python {

namespace {

bool IsNumpyBool(py::handle h) {
  return std::string_view(Py_TYPE(h.ptr())->tp_name) == "numpy.bool" ||
         std::string_view(Py_TYPE(h.ptr())->tp_name) == "numpy.bool_";
}

}  // namespace

int64_t ToInt64Arg(py::handle h, std::string_view what, int64_t min, int64_t max) {
  PyObject* o = h.ptr();
  if (PyBool_Check(o) || IsNumpyBool(h) || !PyIndex_Check(o)) {
    throw py::type_error(fmt::format("{} must be an int, got {}", what, TypeName(h)));
  }
  py::object index = py::reinterpret_steal<py::object>(PyNumber_Index(o));
  if (!index) throw py::error_already_set();
  int overflow = 0;
  const long long v = PyLong_AsLongLongAndOverflow(index.ptr(), &overflow);
  if (overflow != 0 || v < min || v > max) {
    throw py::value_error(fmt::format("{} {} is out of range ({} to {})", what,
                                      py::str(index).cast<std::string>(), min, max));
  }
  return v;
}

bool ToBoolArg(py::handle h, std::string_view what) {
  if (PyBool_Check(h.ptr())) return h.ptr() == Py_True;
  if (IsNumpyBool(h)) return py::bool_(py::reinterpret_borrow<py::object>(h));
  throw py::type_error(fmt::format("{} must be True or False, got {}", what, TypeName(h)));
}

std::string ToStrArg(py::handle h, std::string_view what) {
  if (!py::isinstance<py::str>(h)) {
    throw py::type_error(fmt::format("{} must be a str, got {}", what, TypeName(h)));
  }
  return h.cast<std::string>();
}

ByteSize ToByteSizeArg(py::handle h, std::string_view what) {
  if (h.is_none()) return ByteSize();
  if (py::isinstance<py::str>(h)) return ByteSize(h.cast<std::string>());
  if (PyFloat_Check(h.ptr())) {
    const double v = PyFloat_AsDouble(h.ptr());
    // 2^63 is the first double past int64.
    if (!(v >= 0 && v < 9223372036854775808.0)) {
      throw py::value_error(fmt::format("{} {} is out of range (0 to {} bytes)", what,
                                        py::repr(h).cast<std::string>(), INT64_MAX));
    }
    return ByteSize(static_cast<int64_t>(v));
  }
  if (!PyBool_Check(h.ptr()) && !IsNumpyBool(h) && PyIndex_Check(h.ptr())) {
    return ByteSize(ToInt64Arg(h, what, 0, INT64_MAX));
  }
  throw py::type_error(fmt::format("{} must be a size such as '2GB' or a number of bytes, got {}",
                                   what, TypeName(h)));
}

DType ToDType(const std::string& name) { return Unwrap(ParseDTypeName(name)); }

bool IsScalar(py::handle h) {
  return PyBool_Check(h.ptr()) || PyLong_Check(h.ptr()) || PyFloat_Check(h.ptr()) ||
         PyComplex_Check(h.ptr());
}

Scalar ToScalar(py::handle h) {
  PyObject* o = h.ptr();
  if (PyBool_Check(o)) return Scalar(o == Py_True);
  if (PyLong_Check(o)) {
    int overflow = 0;
    long long v = PyLong_AsLongLongAndOverflow(o, &overflow);
    if (overflow != 0) {
      throw py::value_error(fmt::format(
          "the Python int {} does not fit in int64, the widest integer Strata computes with",
          py::str(h).cast<std::string>()));
    }
    return Scalar(v);
  }
  if (PyFloat_Check(o)) return Scalar(PyFloat_AsDouble(o));
  if (PyComplex_Check(o)) {
    return Scalar(std::complex<double>(PyComplex_RealAsDouble(o), PyComplex_ImagAsDouble(o)));
  }
  throw py::type_error(fmt::format("expected a bool, int, float or complex scalar, got {}",
                                   py::str(py::type::of(h).attr("__name__")).cast<std::string>()));
}

namespace {

AxisChunks ToAxisChunks(py::handle h, int axis) {
  if (h.is_none()) return AxisChunks::Full();
  if (py::isinstance<py::str>(h)) {
    if (h.cast<std::string>() == "auto") return AxisChunks::Auto();
    throw py::value_error(fmt::format("chunks: axis {}: expected an int, -1, None, 'auto' or a "
                                      "tuple of sizes, got '{}'",
                                      axis, h.cast<std::string>()));
  }
  if (PyLong_Check(h.ptr()) && !PyBool_Check(h.ptr())) {
    const Index v = h.cast<Index>();
    return v == -1 ? AxisChunks::Full() : AxisChunks::Size(v);
  }
  if (py::isinstance<py::tuple>(h) || py::isinstance<py::list>(h)) {
    std::vector<Index> sizes;
    for (py::handle s : h) {
      if (!PyLong_Check(s.ptr()) || PyBool_Check(s.ptr())) {
        throw py::type_error(fmt::format("chunks: axis {}: block sizes must be ints, got {}", axis,
                                         py::repr(h).cast<std::string>()));
      }
      sizes.push_back(s.cast<Index>());
    }
    return AxisChunks::Sizes(std::move(sizes));
  }
  throw py::type_error(fmt::format(
      "chunks: axis {}: expected an int, -1, None, 'auto' or a tuple of sizes, got {}", axis,
      py::str(py::type::of(h).attr("__name__")).cast<std::string>()));
}

}  // namespace

ChunksRequest ToChunks(py::handle h) {
  ChunksRequest r;
  if (h.is_none()) return r;  // auto
  if (py::isinstance<py::str>(h)) {
    std::string s = h.cast<std::string>();
    if (s != "auto") r.auto_bytes = ByteSize(s);  // "100MB"
    return r;
  }
  if (PyLong_Check(h.ptr()) && !PyBool_Check(h.ptr())) {
    r.all = ToAxisChunks(h, 0);
    return r;
  }
  if (py::isinstance<py::tuple>(h) || py::isinstance<py::list>(h)) {
    int axis = 0;
    for (py::handle a : h) r.axes.push_back(ToAxisChunks(a, axis++));
    if (r.axes.empty()) r.all = AxisChunks::Full();  // () for a 0-d array
    return r;
  }
  if (py::isinstance<py::dict>(h)) {
    throw py::type_error("chunks: a dict must be expanded to a tuple first");
  }
  throw py::type_error(fmt::format(
      "chunks: expected 'auto', a size such as '100MB', an int or a tuple, got {}",
      py::str(py::type::of(h).attr("__name__")).cast<std::string>()));
}

Array WithGrid(Array x, const ChunkGrid& grid) { return Checked(rechunk(Checked(x), grid)); }

py::array ToNumpy(NDArray a) {
  py::dtype dt(std::string(a.dtype().name()));
  std::vector<py::ssize_t> shape(a.shape().begin(), a.shape().end());
  Shape strides = ContiguousStrides(a.shape(), a.dtype().size());
  std::vector<py::ssize_t> st(strides.begin(), strides.end());
  if (a.nbytes() == 0) return py::array(dt, shape, st);
  auto owned = std::make_unique<NDArray>(std::move(a));
  void* data = owned->data();
  py::capsule base(owned.get(), [](void* p) { delete static_cast<NDArray*>(p); });
  owned.release();  // now the capsule's
  return py::array(dt, shape, st, data, base);
}

std::shared_ptr<const NDArray> FromNumpy(py::array a) {
  const DType dtype = ToDType(py::str(a.dtype().attr("name")).cast<std::string>());
  Shape shape(a.shape(), a.shape() + a.ndim());
  const int64_t nbytes = NumElements(shape) * dtype.size();
  if (nbytes == 0) {
    return std::make_shared<const NDArray>(
        Unwrap(NDArray::Allocate(*MemoryPool::Default(), dtype, shape)));
  }
  // The NDArray keeps a reference to the numpy array; it is dropped with the
  // GIL, from whichever thread frees the NDArray last, unless Python is
  // already shutting down (then it is left: the process is ending).
  auto* ref = new py::object(a);
  std::shared_ptr<void> owner(ref, [](void* p) {
    auto* o = static_cast<py::object*>(p);
    if (Py_IsInitialized() && !_Py_IsFinalizing()) {
      py::gil_scoped_acquire gil;
      delete o;
    }
  });
  auto* data = static_cast<std::byte*>(const_cast<void*>(a.data()));
  return std::make_shared<const NDArray>(
      NDArray::FromBuffer(Buffer::External(data, nbytes, std::move(owner)), dtype, shape));
}

py::array ViewToNumpy(const ConstArrayView& v, py::handle base) {
  py::dtype dt(std::string(v.dtype().name()));
  std::vector<py::ssize_t> shape(v.shape().begin(), v.shape().end());
  std::vector<py::ssize_t> st(v.byte_strides().begin(), v.byte_strides().end());
  py::array out(dt, shape, st, v.data(), base);
  out.attr("setflags")(py::arg("write") = false);
  return out;
}

Spec ToSpec(py::handle h) {
  if (h.is_none()) return Spec();
  return h.cast<Spec>();
}

}  // namespace strata::python
