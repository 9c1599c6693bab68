// `_strata.read_hierarchy`: a Zarr group and its members as
// storage/zarr/hierarchy.h reads them (consolidated metadata, dimension
// names, fill values), for strata.xarray: one parser of Zarr datasets for the
// CLI and Python. Conversion only; what a node is is decided in C++.
//
// Thread-safety: the GIL is released while the store is read.
#include "strata/storage/zarr/hierarchy.h"

#include "strata/python/binding.h"
#include "strata/storage/open_store.h"

namespace strata::python {
namespace {

py::object Dimensions(const HierarchyNode& node) {
  if (!node.is_array || node.dimensions.empty()) return py::none();
  py::list names;
  for (const auto& d : node.dimensions) {
    if (d) {
      names.append(py::str(*d));
    } else {
      names.append(py::none());
    }
  }
  return py::tuple(names);
}

// One node as a dict: path, is_array, zarr_format, attributes (JSON text),
// document (JSON text), dimensions (a tuple, None per unnamed axis; None
// when the array has none), variable_length; for an array of Strata's
// dtypes also dtype (numpy's typestr), shape, chunks, fill_value (the
// element's little-endian bytes, None for Zarr v2's null).
py::dict NodeDict(const HierarchyNode& node) {
  py::dict d;
  d["path"] = node.path;
  d["is_array"] = node.is_array;
  d["zarr_format"] = node.zarr_format == ZarrFormat::kV2 ? 2 : 3;
  d["attributes"] = node.attributes_json();
  d["document"] = node.document;
  d["dimensions"] = Dimensions(node);
  d["variable_length"] = node.variable_length;
  if (node.variable_length) d["shape"] = IndexTuple(node.variable_length_shape);
  if (node.array) {
    const ArrayMetadata& a = *node.array;
    d["dtype"] = a.dtype().ZarrV2Name(Endian::kLittle);
    d["shape"] = IndexTuple(a.shape);
    d["chunks"] = IndexTuple(a.read_chunk_shape());
    if (a.fill_value.is_null) {
      d["fill_value"] = py::none();
    } else {
      d["fill_value"] = py::bytes(reinterpret_cast<const char*>(a.fill_value.bytes.data()),
                                  a.fill_value.bytes.size());
    }
  }
  return d;
}

}  // namespace

void RegisterHierarchy(py::module_& m) {
  m.def(
      "read_hierarchy",
      [](const std::string& url, py::object consolidated) {
        HierarchyOptions options;
        options.keep_documents = true;
        options.keep_variable_length = true;
        if (!consolidated.is_none()) {
          options.consolidated = ToBoolArg(consolidated, "consolidated")
                                     ? HierarchyOptions::Consolidated::kRequire
                                     : HierarchyOptions::Consolidated::kIgnore;
        }
        Hierarchy h;
        {
          py::gil_scoped_release release;
          StoreAndPrefix s = Unwrap(OpenStoreUrl(url, /*create=*/false));
          h = Unwrap(ReadHierarchy(*s.store, s.prefix, options));
        }
        py::list nodes;
        for (const HierarchyNode& node : h.nodes) nodes.append(NodeDict(node));
        return py::make_tuple(nodes, h.from_consolidated);
      },
      py::arg("url"), py::arg("consolidated") = py::none(),
      "(nodes, from_consolidated) of the Zarr group or array at url: a dict per node, the root "
      "first (storage/zarr/hierarchy.h). consolidated: None (used when present), True "
      "(required) or False (not read). FileNotFoundError when nothing is there.");
}

}  // namespace strata::python
