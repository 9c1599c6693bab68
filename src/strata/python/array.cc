// `_strata`: Spec, the Array handle and the array functions of the C++ API,
// each converted and forwarded as it is. The Python package (python/strata/)
// gives them their Array API names and signatures.
#include <fmt/format.h>

#include <limits>
#include <map>

#include "strata/api/subscript.h"
#include "strata/core/kernels/elementwise.h"
#include "strata/python/binding.h"
#include "strata/storage/codec/codec_spec.h"
#include "strata/storage/zarr/metadata.h"

namespace strata::python {
namespace {

// Name tables of the elementwise and reduction ops, read off the C++ enums
// (an op added in C++ appears here without a change to the binding).
template <typename Op, typename NameFn>
std::map<std::string, Op, std::less<>> OpTable(NameFn name_of) {
  std::map<std::string, Op, std::less<>> table;
  for (int i = 0; i < 256; ++i) {
    const Op op = static_cast<Op>(i);
    std::string_view name = name_of(op);
    if (name != "unknown" && name != "?") table.emplace(std::string(name), op);
  }
  return table;
}

const auto& UnaryOps() {
  static const auto* t = new auto(OpTable<UnaryOp>(UnaryOpName));
  return *t;
}
const auto& BinaryOps() {
  static const auto* t = new auto(OpTable<BinaryOp>(BinaryOpName));
  return *t;
}
const auto& ReduceOps() {
  static const auto* t = new auto(OpTable<ReduceOp>(ReduceOpName));
  return *t;
}

template <typename Table>
auto Lookup(const Table& table, std::string_view name, std::string_view what) {
  auto it = table.find(name);
  if (it == table.end()) throw py::value_error(fmt::format("unknown {} '{}'", what, name));
  return it->second;
}

template <typename Table>
std::vector<std::string> Names(const Table& table) {
  std::vector<std::string> names;
  for (const auto& [name, op] : table) names.push_back(name);
  return names;
}

py::tuple ShapeTuple(const Shape& s) {
  py::tuple t(s.size());
  for (size_t i = 0; i < s.size(); ++i) t[i] = py::int_(s[i]);
  return t;
}

py::tuple ChunksTuple(const ChunkGrid& grid) {
  py::tuple t(grid.rank());
  for (int i = 0; i < grid.rank(); ++i) {
    std::vector<Index> sizes = grid.AxisChunkSizes(i);
    py::tuple axis(sizes.size());
    for (size_t k = 0; k < sizes.size(); ++k) axis[k] = py::int_(sizes[k]);
    t[i] = axis;
  }
  return t;
}

std::vector<int> Axes(const std::optional<std::vector<int>>& axes) {
  return axes ? *axes : std::vector<int>{};
}

// A creation function given its chunks as Python wrote them: the grid is
// normalised once (api/chunks.h) and the array made with it.
template <typename Make>
Array Create(const Shape& shape, py::handle chunks, DType dtype, const Spec& spec,
             std::string_view op, Make make) {
  ChunkGrid grid = Unwrap(NormalizeChunks(ToChunks(chunks), shape, dtype, spec, op));
  return WithGrid(Checked(make(grid.chunk_shape())), grid);
}

// Every argument is converted here, by name (binding.h), so that a wrong type
// or range names the argument; the settings' own rules (retries 0..100, a
// known tier) are ResolveSpec's.
Spec MakeSpec(py::object work_dir, py::object allowed_mem, py::object reserved_mem,
              py::object total_system_mem, py::object executor, py::object workers,
              py::object tier, py::object object_store_url, py::object retries, py::object fuse,
              py::object scheduler, py::object ram_tier_mem) {
  constexpr int64_t kIntMin = std::numeric_limits<int>::min();
  constexpr int64_t kIntMax = std::numeric_limits<int>::max();
  Spec spec;
  spec.work_dir = ToStrArg(work_dir, "Spec: work_dir");
  spec.allowed_mem = ToByteSizeArg(allowed_mem, "Spec: allowed_mem");
  spec.reserved_mem = ToByteSizeArg(reserved_mem, "Spec: reserved_mem");
  spec.total_system_mem = ToByteSizeArg(total_system_mem, "Spec: total_system_mem");
  spec.executor = Unwrap(ParseExecutor(ToStrArg(executor, "Spec: executor")));
  spec.workers = static_cast<int>(ToInt64Arg(workers, "Spec: workers", kIntMin, kIntMax));
  spec.tier = Unwrap(ParseTierChoice(ToStrArg(tier, "Spec: tier")));
  spec.object_store_url = ToStrArg(object_store_url, "Spec: object_store_url");
  spec.retries = static_cast<int>(ToInt64Arg(retries, "Spec: retries", kIntMin, kIntMax));
  spec.fuse = ToBoolArg(fuse, "Spec: fuse");
  spec.scheduler = ToStrArg(scheduler, "Spec: scheduler");
  spec.ram_tier_mem = ToByteSizeArg(ram_tier_mem, "Spec: ram_tier_mem");
  // Errors in the settings now, not at the first compute. (Under MPI this
  // would be collective; the mpi executor's spec is checked by plan().)
  if (spec.executor != ExecutorKind::kMpi) Unwrap(ResolveSpec(spec));
  return spec;
}

py::dict ResolvedSpecDict(const Spec& spec) {
  if (spec.executor == ExecutorKind::kMpi) {
    throw py::value_error("Spec: the mpi executor's sizes are resolved collectively by compute()");
  }
  ResolvedSpec r = Unwrap(ResolveSpec(spec));
  py::dict d;
  d["work_dir"] = r.work_dir;
  d["allowed_mem"] = r.allowed_mem;
  d["reserved_mem"] = r.reserved_mem;
  d["total_system_mem"] = r.total_system_mem;
  d["executor"] = std::string(ExecutorName(r.executor));
  d["workers"] = r.workers;
  d["tier"] = std::string(TierChoiceName(r.tier));
  d["object_store_url"] = r.object_store_url;
  d["ram_tier_mem"] = r.ram_tier_mem;
  d["retries"] = r.retries;
  d["fuse"] = r.fuse;
  return d;
}

Array Binary(const std::string& name, py::handle a, py::handle b) {
  const BinaryOp op = Lookup(BinaryOps(), name, "binary op");
  const bool aa = IsArray(a), ba = IsArray(b);
  if (aa && ba) return Checked(binary(op, a.cast<const Array&>(), b.cast<const Array&>()));
  if (aa) return Checked(binary(op, a.cast<const Array&>(), ToScalar(b)));
  if (ba) return Checked(binary(op, ToScalar(a), b.cast<const Array&>()));
  throw py::type_error(fmt::format("{}: at least one operand must be an Array", name));
}

Array Where(const Array& cond, py::handle a, py::handle b) {
  const bool aa = IsArray(a), ba = IsArray(b);
  if (aa && ba) return Checked(where(cond, a.cast<const Array&>(), b.cast<const Array&>()));
  if (aa) return Checked(where(cond, a.cast<const Array&>(), ToScalar(b)));
  if (ba) return Checked(where(cond, ToScalar(a), b.cast<const Array&>()));
  return Checked(where(cond, ToScalar(a), ToScalar(b)));
}

Array Clip(const Array& x, py::handle lo, py::handle hi) {
  if (IsArray(lo) || IsArray(hi)) {
    if (!IsArray(lo) || !IsArray(hi)) {
      throw py::type_error("clip: give both bounds as Arrays, or both as scalars or None");
    }
    return Checked(clip(x, lo.cast<const Array&>(), hi.cast<const Array&>()));
  }
  std::optional<Scalar> l, h;
  if (!lo.is_none()) l = ToScalar(lo);
  if (!hi.is_none()) h = ToScalar(hi);
  return Checked(clip(x, l, h));
}

std::vector<SubscriptTerm> ToTerms(py::tuple key) {
  std::vector<SubscriptTerm> terms;
  for (py::handle k : key) {
    if (k.is_none()) {
      terms.push_back(SubscriptTerm::NewAxis());
    } else if (k.ptr() == Py_Ellipsis) {
      terms.push_back(SubscriptTerm::Ellipsis());
    } else if (PySlice_Check(k.ptr())) {
      Slice s;
      auto part = [&](const char* name) -> std::optional<Index> {
        py::object v = k.attr(name);
        if (v.is_none()) return std::nullopt;
        return py::int_(v.attr("__index__")()).cast<Index>();
      };
      s.start = part("start");
      s.stop = part("stop");
      std::optional<Index> step = part("step");
      s.step = step.value_or(1);
      terms.push_back(SubscriptTerm::SliceOf(s));
    } else if (PyLong_Check(k.ptr()) && !PyBool_Check(k.ptr())) {
      terms.push_back(SubscriptTerm::Integer(k.cast<Index>()));
    } else {
      throw py::type_error(fmt::format(
          "index: expected integers, slices, None or ..., got {}",
          py::str(py::type::of(k).attr("__name__")).cast<std::string>()));
    }
  }
  return terms;
}

// fill_value: None (zero), a number (of x's dtype), or "null" (Zarr v2's
// null: every chunk is written). dimension_names: names or None per axis
// (Zarr v3's dimension_names; ignored for v2, which keeps them in the
// _ARRAY_DIMENSIONS attribute). region_origin (a sequence of ints) or
// append_dim (an int): write into the existing array instead (the package
// has turned slices into origins); the other options do not apply then.
Array ToZarr(const Array& x, const std::string& path, py::object codec, int zarr_format,
             bool overwrite, const std::string& attributes_json, py::object fill_value,
             py::object dimension_names, std::optional<Shape> region_origin,
             std::optional<int> append_dim) {
  ToZarrOptions options;
  options.region_origin = std::move(region_origin);
  options.append_dim = append_dim;
  if (py::isinstance<py::str>(fill_value)) {
    if (fill_value.cast<std::string>() != "null") {
      throw py::value_error("to_zarr: fill_value must be a number, None or \"null\"");
    }
    options.fill_value = FillValue{{}, /*is_null=*/true};
  } else if (!fill_value.is_none()) {
    if (!py::isinstance<py::bool_>(fill_value) && !py::isinstance<py::int_>(fill_value) &&
        !py::isinstance<py::float_>(fill_value)) {
      throw py::type_error(
          fmt::format("to_zarr: fill_value must be a real number, None or "
                      "\"null\", not {}",
                      std::string(py::str(py::type::of(fill_value).attr("__name__")))));
    }
    if (x.ok()) options.fill_value = MakeFillValue(x.dtype(), fill_value.cast<double>());
  }
  if (!dimension_names.is_none()) {
    std::vector<std::optional<std::string>> names;
    for (py::handle n : dimension_names) {
      names.push_back(n.is_none() ? std::nullopt
                                  : std::optional<std::string>(n.cast<std::string>()));
    }
    options.dimension_names = std::move(names);
  }
  if (!codec.is_none()) {
    std::string text = codec.cast<std::string>();
    if (text == "none") {
      options.no_compression = true;
    } else {
      options.codecs = Unwrap(ParseCodecArgument(text));
    }
  }
  if (zarr_format != 2 && zarr_format != 3) {
    throw py::value_error(fmt::format("to_zarr: zarr_format must be 2 or 3, got {}", zarr_format));
  }
  options.zarr_format = static_cast<ZarrFormat>(zarr_format);
  options.overwrite = overwrite;
  options.attributes_json = attributes_json;
  return Checked(to_zarr(x, path, std::move(options)));
}

}  // namespace

void RegisterArray(py::module_& m) {
  py::class_<Spec>(m, "Spec")
      .def(py::init(&MakeSpec), py::arg("work_dir") = py::str(""),
           py::arg("allowed_mem") = py::none(), py::arg("reserved_mem") = py::none(),
           py::arg("total_system_mem") = py::none(), py::arg("executor") = py::str("threads"),
           py::arg("workers") = py::int_(0), py::arg("tier") = py::str("auto"),
           py::arg("object_store_url") = py::str(""), py::arg("retries") = py::int_(2),
           py::arg("fuse") = py::bool_(true), py::arg("scheduler") = py::str(""),
           py::arg("ram_tier_mem") = py::none())
      .def_readonly("work_dir", &Spec::work_dir)
      .def_property_readonly("executor",
                             [](const Spec& s) { return std::string(ExecutorName(s.executor)); })
      .def_readonly("workers", &Spec::workers)
      .def_property_readonly("tier", [](const Spec& s) { return std::string(TierChoiceName(s.tier)); })
      .def_readonly("object_store_url", &Spec::object_store_url)
      .def_readonly("retries", &Spec::retries)
      .def_readonly("fuse", &Spec::fuse)
      .def_readonly("scheduler", &Spec::scheduler)
      .def("resolved", &ResolvedSpecDict);

  // dynamic_attr: the package records how each array was made
  // (strata._recipe), so that a dask worker can make it again.
  py::class_<Array>(m, "Array", py::dynamic_attr())
      .def_property_readonly("shape", [](const Array& a) { return ShapeTuple(a.shape()); })
      .def_property_readonly("dtype", [](const Array& a) { return std::string(a.dtype().name()); })
      .def_property_readonly("chunks", [](const Array& a) { return ChunksTuple(a.chunks()); })
      .def_property_readonly("chunksize", [](const Array& a) { return ShapeTuple(a.chunksize()); })
      .def_property_readonly("numblocks",
                             [](const Array& a) { return ShapeTuple(a.chunks().grid_shape()); })
      .def_property_readonly("name", &Array::name)
      .def_property_readonly("op_name", [](const Array& a) { return a.node()->op_name; })
      .def_property_readonly("nbytes", &Array::nbytes)
      .def_property_readonly("spec", [](const Array& a) { return *a.spec(); });

  m.def("unary_ops", [] { return Names(UnaryOps()); });
  m.def("binary_ops", [] { return Names(BinaryOps()); });
  m.def("reduce_ops", [] { return Names(ReduceOps()); });
  // The dtype two dtypes promote to, by the rule the elementwise ops use.
  m.def("promote_types", [](const std::string& a, const std::string& b) {
    return std::string(Unwrap(PromoteTypes(ToDType(a), ToDType(b))).name());
  });

  // Creation.
  m.def("zeros", [](Shape shape, py::handle chunks, const std::string& dtype, py::handle spec) {
    Spec s = ToSpec(spec);
    DType t = ToDType(dtype);
    return Create(shape, chunks, t, s, "zeros", [&](Shape c) { return zeros(shape, c, t, s); });
  });
  m.def("ones", [](Shape shape, py::handle chunks, const std::string& dtype, py::handle spec) {
    Spec s = ToSpec(spec);
    DType t = ToDType(dtype);
    return Create(shape, chunks, t, s, "ones", [&](Shape c) { return ones(shape, c, t, s); });
  });
  m.def("empty", [](Shape shape, py::handle chunks, const std::string& dtype, py::handle spec) {
    Spec s = ToSpec(spec);
    DType t = ToDType(dtype);
    return Create(shape, chunks, t, s, "empty", [&](Shape c) { return empty(shape, c, t, s); });
  });
  m.def("full", [](Shape shape, py::handle value, py::handle chunks,
                   std::optional<std::string> dtype, py::handle spec) {
    Spec s = ToSpec(spec);
    Scalar v = ToScalar(value);
    std::optional<DType> t;
    if (dtype) t = ToDType(*dtype);
    return Create(shape, chunks, t.value_or(v.DefaultDType()), s, "full",
                  [&](Shape c) { return full(shape, v, c, t, s); });
  });
  m.def("arange", [](double start, double stop, double step, py::handle chunks,
                     std::optional<std::string> dtype, py::handle spec) {
    Spec s = ToSpec(spec);
    std::optional<DType> t;
    if (dtype) t = ToDType(*dtype);
    // The length and dtype come from arange itself; chunks are applied after.
    Array a = Checked(arange(start, stop, step, {}, t, s));
    ChunkGrid grid = Unwrap(NormalizeChunks(ToChunks(chunks), a.shape(), a.dtype(), s, "arange"));
    return Checked(arange(start, stop, step, grid.chunk_shape(), t, s));
  });
  m.def("linspace", [](double start, double stop, Index num, bool endpoint, py::handle chunks,
                       const std::string& dtype, py::handle spec) {
    Spec s = ToSpec(spec);
    DType t = ToDType(dtype);
    return Create({num}, chunks, t, s, "linspace",
                  [&](Shape c) { return linspace(start, stop, num, endpoint, c, t, s); });
  });
  m.def("eye", [](Index n, Index mcols, Index k, py::handle chunks, const std::string& dtype,
                  py::handle spec) {
    Spec s = ToSpec(spec);
    DType t = ToDType(dtype);
    if (mcols == 0 && n != 0) {
      // eye(n, 0) is an n x 0 matrix; the C++ API reads m = 0 as "square".
      return Create({n, 0}, chunks, t, s, "eye", [&](Shape c) { return zeros({n, 0}, c, t, s); });
    }
    return Create({n, mcols}, chunks, t, s, "eye",
                  [&](Shape c) { return eye(n, mcols, k, c, t, s); });
  });
  m.def("asarray", [](py::array data, py::handle chunks, py::handle spec) {
    Spec s = ToSpec(spec);
    std::shared_ptr<const NDArray> nd = FromNumpy(data);
    return Create(nd->shape(), chunks, nd->dtype(), s, "asarray",
                  [&](Shape c) { return asarray(nd, c, s); });
  });
  m.def("from_zarr", [](const std::string& path, py::handle spec) {
    Spec s = ToSpec(spec);
    Array a;
    {
      py::gil_scoped_release release;  // opening may read from S3
      a = from_zarr(path, s);
    }
    return Checked(a);
  });
  m.def("random", [](Shape shape, py::handle chunks, uint64_t seed, py::handle spec) {
    Spec s = ToSpec(spec);
    return Create(shape, chunks, DTypeId::kFloat64, s, "random",
                  [&](Shape c) { return random::random(shape, c, seed, s); });
  });
  m.def("integers", [](int64_t low, int64_t high, Shape shape, py::handle chunks, uint64_t seed,
                       const std::string& dtype, py::handle spec) {
    Spec s = ToSpec(spec);
    DType t = ToDType(dtype);
    return Create(shape, chunks, t, s, "random.integers",
                  [&](Shape c) { return random::integers(low, high, shape, c, seed, t, s); });
  });

  // Elementwise.
  m.def("unary", [](const std::string& name, const Array& x) {
    return Checked(unary(Lookup(UnaryOps(), name, "unary op"), x));
  });
  m.def("binary", &Binary);
  m.def("where", &Where);
  m.def("clip", &Clip);
  m.def("astype", [](const Array& x, const std::string& dtype) {
    return Checked(astype(x, ToDType(dtype)));
  });

  // Reductions.
  m.def(
      "reduce",
      [](const std::string& name, const Array& x, std::optional<std::vector<int>> axes,
         bool keepdims, int split_every, int ddof) {
        ReduceOptions o;
        o.keepdims = keepdims;
        o.split_every = split_every;
        o.ddof = ddof;
        return Checked(reduce(Lookup(ReduceOps(), name, "reduction"), x, Axes(axes), o));
      },
      py::arg("name"), py::arg("x"), py::arg("axes"), py::arg("keepdims") = false,
      py::arg("split_every") = 0, py::arg("ddof") = 0);
  m.def("argmin", [](const Array& x, std::optional<int> axis, bool keepdims) {
    ReduceOptions o;
    o.keepdims = keepdims;
    return Checked(argmin(x, axis, o));
  });
  m.def("argmax", [](const Array& x, std::optional<int> axis, bool keepdims) {
    ReduceOptions o;
    o.keepdims = keepdims;
    return Checked(argmax(x, axis, o));
  });

  // Linear algebra and manipulation.
  m.def("matmul", [](const Array& a, const Array& b) { return Checked(matmul(a, b)); });
  m.def("tensordot", [](const Array& a, const Array& b, std::vector<int> aa, std::vector<int> ba) {
    return Checked(tensordot(a, b, std::move(aa), std::move(ba)));
  });
  m.def("permute_dims", [](const Array& x, std::vector<int> axes) {
    return Checked(permute_dims(x, std::move(axes)));
  });
  m.def("expand_dims", [](const Array& x, int axis) { return Checked(expand_dims(x, axis)); });
  m.def("squeeze", [](const Array& x, std::vector<int> axes) {
    return Checked(squeeze(x, std::move(axes)));
  });
  m.def("broadcast_to", [](const Array& x, Shape shape) {
    return Checked(broadcast_to(x, std::move(shape)));
  });
  m.def("concat", [](std::vector<Array> arrays, int axis) { return Checked(concat(arrays, axis)); });
  m.def("stack", [](std::vector<Array> arrays, int axis) { return Checked(stack(arrays, axis)); });
  m.def("flip", [](const Array& x, std::vector<int> axes) {
    return Checked(flip(x, std::move(axes)));
  });
  m.def("reshape", [](const Array& x, Shape shape) { return Checked(reshape(x, std::move(shape))); });
  m.def("rechunk", [](const Array& x, py::handle chunks) {
    return Checked(rechunk(x, ToChunks(chunks)));
  });
  m.def("subscript", [](const Array& x, py::tuple key) {
    return Checked(subscript(x, ToTerms(key)));
  });
  m.def("setitem", [](const Array& x, py::tuple key, py::handle value) {
    if (IsArray(value)) return Checked(setitem(x, ToTerms(key), value.cast<const Array&>()));
    return Checked(setitem(x, ToTerms(key), ToScalar(value)));
  });
  m.def("take", [](const Array& x, std::vector<Index> indices, int axis) {
    return Checked(take(x, std::move(indices), axis));
  });
  m.def("groupby_reduce", [](const Array& x, std::vector<int64_t> labels, int axis,
                             const std::string& op, Index num_groups) {
    return Checked(groupby_reduce(x, std::move(labels), axis, Lookup(ReduceOps(), op, "reduction"),
                                  num_groups));
  });
  m.def("to_zarr", &ToZarr, py::arg("x"), py::arg("path"), py::arg("codec") = py::none(),
        py::arg("zarr_format") = 2, py::arg("overwrite") = false,
        py::arg("attributes_json") = "{}", py::arg("fill_value") = py::none(),
        py::arg("dimension_names") = py::none(), py::arg("region_origin") = py::none(),
        py::arg("append_dim") = py::none());
}

}  // namespace strata::python
