// `_strata`: the operations of issue 16 (api/*_extras.h, nan reductions go
// through `reduce`, scans, sorting, searching, set functions, NumPy
// indexing, pad, group-by options) and the data type functions, each
// converted and forwarded as it is. The `strata` package gives them their
// Array API and numpy names and signatures.
#include <fmt/format.h>

#include "strata/api/quantiles.h"
#include "strata/python/binding.h"

namespace strata::python {
namespace {

std::optional<DType> OptionalDType(const std::optional<std::string>& name) {
  if (!name) return std::nullopt;
  return ToDType(*name);
}

// A Status the standard reports as TypeError (finfo of an integer dtype):
// raised with Strata's message.
template <typename T>
T UnwrapAsTypeError(Result<T> r) {
  if (!r.ok()) throw py::type_error(std::string(r.status().message()));
  return std::move(r).value();
}

// An invalid index is an IndexError in Python, whatever code the C++ API
// gives it (InvalidArgument: "index 12 is out of bounds for axis 1").
Array CheckedIndex(Array a) {
  if (!a.ok() && a.status().code() == StatusCode::kInvalidArgument) {
    throw py::index_error(std::string(a.status().message()));
  }
  return Checked(std::move(a));
}

std::vector<Array> CheckedAll(std::vector<Array> arrays) {
  for (const Array& a : arrays) Checked(a);
  return arrays;
}

// *_like with chunks as Python writes them (None: x's own grid, rectilinear
// included).
template <typename Make>
Array Like(const Array& x, const std::optional<std::string>& dtype, py::handle chunks,
           std::string_view op, Make make) {
  Checked(x);
  std::optional<DType> t = OptionalDType(dtype);
  if (chunks.is_none()) return Checked(make(t, Shape{}));
  ChunkGrid grid =
      Unwrap(NormalizeChunks(ToChunks(chunks), x.shape(), t.value_or(x.dtype()), *x.spec(), op));
  return WithGrid(Checked(make(t, grid.chunk_shape())), grid);
}

// x[items] terms: integers, slices, None, Ellipsis, and arrays (strata
// Arrays of integers or bools; the package turns lists and numpy arrays into
// Arrays first).
std::vector<Indexer> ToIndexers(py::tuple key) {
  std::vector<Indexer> items;
  for (py::handle k : key) {
    if (k.is_none()) {
      items.emplace_back(newaxis);
    } else if (k.ptr() == Py_Ellipsis) {
      items.emplace_back(ellipsis);
    } else if (PySlice_Check(k.ptr())) {
      Slice s;
      auto part = [&](const char* name) -> std::optional<Index> {
        py::object v = k.attr(name);
        if (v.is_none()) return std::nullopt;
        return py::int_(v.attr("__index__")()).cast<Index>();
      };
      s.start = part("start");
      s.stop = part("stop");
      s.step = part("step").value_or(1);
      items.emplace_back(s);
    } else if (PyLong_Check(k.ptr()) && !PyBool_Check(k.ptr())) {
      items.emplace_back(k.cast<Index>());
    } else if (IsArray(k)) {
      items.emplace_back(k.cast<Array>());
    } else {
      throw py::type_error(fmt::format(
          "index: expected integers, slices, None, ... or arrays, got {}",
          py::str(py::type::of(k).attr("__name__")).cast<std::string>()));
    }
  }
  return items;
}

std::optional<Array> OptionalArray(py::handle h) {
  if (h.is_none()) return std::nullopt;
  return h.cast<Array>();
}

GroupbyOptions GroupbyOptionsOf(Index num_groups, std::optional<bool> skipna, int ddof,
                                int split_every) {
  GroupbyOptions o;
  o.num_groups = num_groups;
  o.skipna = skipna;
  o.ddof = ddof;
  o.split_every = split_every;
  return o;
}

PadMode ToPadMode(const std::string& mode) {
  if (mode == "constant") return PadMode::kConstant;
  if (mode == "edge") return PadMode::kEdge;
  if (mode == "reflect") return PadMode::kReflect;
  if (mode == "symmetric") return PadMode::kSymmetric;
  if (mode == "wrap") return PadMode::kWrap;
  throw py::value_error(fmt::format(
      "pad: unknown mode '{}' (expected constant, edge, reflect, symmetric or wrap)", mode));
}

// A reduction op's Python name as the C++ enum.
ReduceOp ToReduceOp(std::string_view name) {
  for (int i = 0; i < 256; ++i) {
    const auto op = static_cast<ReduceOp>(i);
    if (ReduceOpName(op) == name) return op;
  }
  throw py::value_error(fmt::format("unknown reduction '{}'", name));
}

}  // namespace

void RegisterArrayExtras(py::module_& m) {
  // Data type functions (api/dtype_info.h). Dtypes cross as their names.
  m.def("finfo", [](const std::string& dtype) {
    FloatInfo f = UnwrapAsTypeError(finfo(ToDType(dtype)));
    py::dict d;
    d["bits"] = f.bits;
    d["eps"] = f.eps;
    d["max"] = f.max;
    d["min"] = f.min;
    d["smallest_normal"] = f.smallest_normal;
    d["dtype"] = std::string(f.dtype.name());
    return d;
  });
  m.def("iinfo", [](const std::string& dtype) {
    IntInfo i = UnwrapAsTypeError(iinfo(ToDType(dtype)));
    py::dict d;
    d["bits"] = i.bits;
    d["max"] = i.dtype.is_unsigned_integer() ? py::int_(i.max_unsigned) : py::int_(i.max);
    d["min"] = i.min;
    d["dtype"] = std::string(i.dtype.name());
    return d;
  });
  m.def("can_cast", [](const std::string& from, const std::string& to) {
    return can_cast(ToDType(from), ToDType(to));
  });
  // kinds: (name, is_kind_name) pairs; any matches.
  m.def("isdtype", [](const std::string& dtype,
                      const std::vector<std::pair<std::string, bool>>& kinds) {
    std::vector<DTypeKind> ks;
    for (const auto& [name, is_kind] : kinds) {
      if (is_kind) {
        ks.emplace_back(std::string_view(name));
      } else {
        ks.emplace_back(ToDType(name));
      }
    }
    return Unwrap(isdtype(ToDType(dtype), ks));
  });
  // operands: Arrays, dtype names and Python scalars.
  m.def("result_type", [](py::list operands) {
    std::vector<TypeOperand> ops;
    for (py::handle h : operands) {
      if (IsArray(h)) {
        ops.emplace_back(h.cast<Array>());
      } else if (py::isinstance<py::str>(h)) {
        ops.emplace_back(ToDType(h.cast<std::string>()));
      } else {
        ops.emplace_back(ToScalar(h));
      }
    }
    return std::string(Unwrap(result_type(ops)).name());
  });

  // Creation (api/creation_extras.h).
  m.def("zeros_like", [](const Array& x, std::optional<std::string> dtype, py::handle chunks) {
    return Like(x, dtype, chunks, "zeros_like",
                [&](std::optional<DType> t, Shape c) { return zeros_like(x, t, c); });
  });
  m.def("ones_like", [](const Array& x, std::optional<std::string> dtype, py::handle chunks) {
    return Like(x, dtype, chunks, "ones_like",
                [&](std::optional<DType> t, Shape c) { return ones_like(x, t, c); });
  });
  m.def("empty_like", [](const Array& x, std::optional<std::string> dtype, py::handle chunks) {
    return Like(x, dtype, chunks, "empty_like",
                [&](std::optional<DType> t, Shape c) { return empty_like(x, t, c); });
  });
  m.def("full_like", [](const Array& x, py::handle value, std::optional<std::string> dtype,
                        py::handle chunks) {
    Scalar v = ToScalar(value);
    return Like(x, dtype, chunks, "full_like",
                [&](std::optional<DType> t, Shape c) { return full_like(x, v, t, c); });
  });
  m.def("meshgrid", [](const std::vector<Array>& arrays, const std::string& indexing) {
    if (indexing != "xy" && indexing != "ij") {
      throw py::value_error(
          fmt::format("meshgrid: indexing must be 'xy' or 'ij', got '{}'", indexing));
    }
    return CheckedAll(
        meshgrid(arrays, indexing == "xy" ? MeshIndexing::kXY : MeshIndexing::kIJ));
  });
  m.def("tril", [](const Array& x, Index k) { return Checked(tril(x, k)); });
  m.def("triu", [](const Array& x, Index k) { return Checked(triu(x, k)); });
  // A numpy array of any strides (negative included) without a copy: a
  // C-contiguous one is viewed in place, others gathered per block.
  m.def("from_external", [](py::array a, py::handle chunks, py::handle spec) {
    Spec s = ToSpec(spec);
    ExternalArray e;
    e.dtype = ToDType(py::str(a.dtype().attr("name")).cast<std::string>());
    e.shape.assign(a.shape(), a.shape() + a.ndim());
    e.byte_strides.assign(a.strides(), a.strides() + a.ndim());
    e.data = a.data();
    auto* ref = new py::object(a);
    e.owner = std::shared_ptr<const void>(ref, [](const void* p) {
      auto* o = static_cast<py::object*>(const_cast<void*>(p));
      if (Py_IsInitialized() && !_Py_IsFinalizing()) {
        py::gil_scoped_acquire gil;
        delete o;
      }
    });
    const Shape shape = e.shape;
    const DType dtype = e.dtype;
    ChunkGrid grid = Unwrap(NormalizeChunks(ToChunks(chunks), shape, dtype, s, "from_dlpack"));
    return WithGrid(Checked(from_external(std::move(e), grid.chunk_shape(), s)), grid);
  });

  // Manipulation (api/manipulation_extras.h).
  m.def("broadcast_shapes",
        [](const std::vector<Shape>& shapes) { return Unwrap(broadcast_shapes(shapes)); });
  m.def("broadcast_arrays",
        [](const std::vector<Array>& arrays) { return CheckedAll(broadcast_arrays(arrays)); });
  m.def("moveaxis", [](const Array& x, std::vector<int> source, std::vector<int> destination) {
    return Checked(moveaxis(x, std::move(source), std::move(destination)));
  });
  m.def("matrix_transpose", [](const Array& x) { return Checked(matrix_transpose(x)); });
  m.def("repeat", [](const Array& x, py::handle repeats, std::optional<int> axis) {
    if (IsArray(repeats)) return Checked(repeat(x, repeats.cast<Array>(), axis));
    if (PyLong_Check(repeats.ptr()) && !PyBool_Check(repeats.ptr())) {
      return Checked(repeat(x, repeats.cast<Index>(), axis));
    }
    return Checked(repeat(x, repeats.cast<std::vector<Index>>(), axis));
  });
  m.def("roll", [](const Array& x, std::vector<Index> shifts, std::vector<int> axes) {
    return Checked(roll(x, std::move(shifts), std::move(axes)));
  });
  m.def("tile", [](const Array& x, std::vector<Index> reps) {
    return Checked(tile(x, std::move(reps)));
  });
  m.def("unstack", [](const Array& x, int axis) { return CheckedAll(unstack(x, axis)); });
  m.def("vecdot", [](const Array& a, const Array& b, int axis) {
    return Checked(vecdot(a, b, axis));
  });

  // Sorting, scans, searching, sets (api/sorting.h, scans.h, searching.h,
  // set_functions.h).
  m.def("sort", [](const Array& x, int axis, bool descending, bool stable) {
    return Checked(sort(x, axis, descending, stable));
  });
  m.def("argsort", [](const Array& x, int axis, bool descending, bool stable) {
    return Checked(argsort(x, axis, descending, stable));
  });
  // Quantiles (api/quantiles.h): q flattened, method by numpy's name.
  m.def("quantile", [](const Array& x, std::vector<double> q, bool q_is_scalar,
                       std::optional<std::vector<int>> axes, const std::string& method,
                       bool keepdims, bool skipna) {
    QuantileOptions options;
    options.axes = std::move(axes);
    options.method = Unwrap(ParseQuantileMethod(method));
    options.keepdims = keepdims;
    options.skipna = skipna;
    return Checked(quantile(x, std::move(q), options, q_is_scalar));
  });
  m.def("median", [](const Array& x, std::optional<std::vector<int>> axes, bool keepdims,
                     bool skipna) { return Checked(median(x, std::move(axes), keepdims, skipna)); });
  m.def("take_along_axis", [](const Array& x, const Array& indices, int axis) {
    return CheckedIndex(take_along_axis(x, indices, axis));
  });
  m.def("cumulative_sum", [](const Array& x, std::optional<int> axis,
                             std::optional<std::string> dtype, bool include_initial) {
    return Checked(cumulative_sum(x, axis, OptionalDType(dtype), include_initial));
  });
  m.def("cumulative_prod", [](const Array& x, std::optional<int> axis,
                              std::optional<std::string> dtype, bool include_initial) {
    return Checked(cumulative_prod(x, axis, OptionalDType(dtype), include_initial));
  });
  m.def("nancumsum", [](const Array& x, std::optional<int> axis) {
    return Checked(nancumsum(x, axis));
  });
  m.def("nancumprod", [](const Array& x, std::optional<int> axis) {
    return Checked(nancumprod(x, axis));
  });
  m.def("diff", [](const Array& x, int axis, int n, py::handle prepend, py::handle append) {
    return Checked(diff(x, axis, n, OptionalArray(prepend), OptionalArray(append)));
  });
  m.def("searchsorted", [](const Array& x1, const Array& x2, const std::string& side,
                           py::handle sorter) {
    if (side != "left" && side != "right") {
      throw py::value_error(
          fmt::format("searchsorted: side must be 'left' or 'right', got '{}'", side));
    }
    return Checked(searchsorted(x1, x2, side == "left" ? SearchSide::kLeft : SearchSide::kRight,
                                OptionalArray(sorter)));
  });
  m.def("isin", [](const Array& x, const Array& test_elements, bool invert) {
    return Checked(isin(x, test_elements, invert));
  });
  // The set functions compute eagerly (the count of unique values is the
  // shape): without the GIL.
  m.def("unique_values", [](const Array& x) {
    Array r;
    {
      py::gil_scoped_release release;
      r = unique_values(x);
    }
    return Checked(r);
  });
  m.def("unique_counts", [](const Array& x) {
    UniqueCounts r;
    {
      py::gil_scoped_release release;
      r = unique_counts(x);
    }
    return py::make_tuple(Checked(r.values), Checked(r.counts));
  });
  m.def("unique_inverse", [](const Array& x) {
    UniqueInverse r;
    {
      py::gil_scoped_release release;
      r = unique_inverse(x);
    }
    return py::make_tuple(Checked(r.values), Checked(r.inverse_indices));
  });
  m.def("unique_all", [](const Array& x) {
    UniqueAll r;
    {
      py::gil_scoped_release release;
      r = unique_all(x);
    }
    return py::make_tuple(Checked(r.values), Checked(r.indices), Checked(r.inverse_indices),
                          Checked(r.counts));
  });

  // Indexing (api/advanced_indexing.h). Index arrays and boolean masks
  // decide the output's shape, so index/vindex/nonzero may compute them (or
  // count a mask) first: without the GIL.
  m.def("index", [](const Array& x, py::tuple key) {
    std::vector<Indexer> items = ToIndexers(key);
    Array r;
    {
      py::gil_scoped_release release;
      r = index(x, std::move(items));
    }
    return CheckedIndex(r);
  });
  m.def("vindex", [](const Array& x, py::tuple key) {
    std::vector<Indexer> items = ToIndexers(key);
    Array r;
    {
      py::gil_scoped_release release;
      r = vindex(x, std::move(items));
    }
    return CheckedIndex(r);
  });
  m.def("take_array", [](const Array& x, const Array& indices, std::optional<int> axis) {
    Array r;
    {
      py::gil_scoped_release release;
      r = take(x, indices, axis);
    }
    return CheckedIndex(r);
  });
  m.def("nonzero", [](const Array& x) {
    std::vector<Array> r;
    {
      py::gil_scoped_release release;
      r = nonzero(x);
    }
    return CheckedAll(std::move(r));
  });

  // pad (api/overlap.h).
  m.def("pad", [](const Array& x, std::vector<std::pair<Index, Index>> width,
                  const std::string& mode, py::handle constant_value) {
    return Checked(pad(x, std::move(width), ToPadMode(mode), ToScalar(constant_value)));
  });

  // Group-by with options (api/groupby_extras.h); labels host-side or an
  // Array.
  m.def("groupby_reduce_ex", [](const Array& x, py::handle labels, int axis, const std::string& op,
                                Index num_groups, std::optional<bool> skipna, int ddof,
                                int split_every) {
    GroupbyOptions o = GroupbyOptionsOf(num_groups, skipna, ddof, split_every);
    const ReduceOp r = ToReduceOp(op);
    Array out;
    if (IsArray(labels)) {
      const Array lab = labels.cast<Array>();
      py::gil_scoped_release release;  // may compute the number of groups
      out = groupby_reduce(x, lab, axis, r, o);
    } else {
      out = groupby_reduce(x, labels.cast<std::vector<int64_t>>(), axis, r, o);
    }
    return Checked(out);
  });
}

}  // namespace strata::python
