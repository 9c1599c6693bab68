#include <fmt/format.h>

#include <cmath>
#include <complex>
#include <cstring>
#include <functional>
#include <nlohmann/json.hpp>

#include "strata/base/byte_size.h"
#include "strata/core/chunk_grid.h"
#include "strata/core/dtype_dispatch.h"
#include "strata/storage/open_store.h"
#include "strata/storage/zarr/hierarchy.h"
#include "strata/storage/zarr/zarr_array.h"
#include "strata/tools/commands.h"

namespace strata {
namespace {

std::string FormatFillValue(DType dtype, const FillValue& fill) {
  if (fill.is_null) return "null";
  if (fill.bytes.size() != static_cast<size_t>(dtype.size())) return "?";
  return FormatElement(dtype, fill.bytes.data());
}

std::string OrderName(const ArrayMetadata& m) {
  const std::vector<int>& t = m.encoding.transpose;
  if (t.empty()) return "C";
  bool reversed = true;
  for (int i = 0; i < m.rank(); ++i) reversed = reversed && t[i] == m.rank() - 1 - i;
  if (reversed) return "F";
  return fmt::format("transpose({})", fmt::join(t, ","));
}

nlohmann::json AttributesJson(const std::string& text) {
  nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  return j.is_discarded() ? nlohmann::json(text) : j;
}

std::string DimsText(const std::vector<std::optional<std::string>>& dims) {
  std::vector<std::string> names;
  for (const auto& d : dims) names.push_back(d.value_or("-"));
  return fmt::format("({})", fmt::join(names, ", "));
}

// A group: its attributes and a tree of its members (arrays with shape,
// dtype, chunks, dimensions and codecs).
Status InfoGroup(const InfoOptions& options, Store& store, const std::string& prefix) {
  STRATA_ASSIGN_OR_RETURN(Hierarchy h, ReadHierarchy(store, prefix));
  const HierarchyNode& root = h.nodes.front();
  const int format = static_cast<int>(root.zarr_format);
  if (options.json) {
    nlohmann::json members = nlohmann::json::array();
    for (size_t i = 1; i < h.nodes.size(); ++i) {
      const HierarchyNode& n = h.nodes[i];
      nlohmann::json m = {{"path", n.path},
                          {"node_type", n.is_array ? "array" : "group"},
                          {"attributes", AttributesJson(n.attributes_json())}};
      if (n.is_array) {
        const ArrayMetadata& a = *n.array;
        m["shape"] = a.shape;
        m["chunks"] = a.chunk_shape;
        m["inner_chunks"] = a.sharding ? nlohmann::json(a.sharding->inner_chunk_shape)
                                       : nlohmann::json(nullptr);
        m["dtype"] = a.dtype().ToString();
        m["codecs"] = DescribeEncoding(a);
        m["fill_value"] = FormatFillValue(a.dtype(), a.fill_value);
        nlohmann::json dims = nlohmann::json::array();
        for (const auto& d : n.dimensions) dims.push_back(d ? nlohmann::json(*d) : nullptr);
        m["dimensions"] = std::move(dims);
      }
      members.push_back(std::move(m));
    }
    nlohmann::json j = {{"path", options.path},
                        {"zarr_format", format},
                        {"node_type", "group"},
                        {"consolidated", h.from_consolidated},
                        {"attributes", AttributesJson(root.attributes_json())},
                        {"members", std::move(members)}};
    fmt::print("{}\n", j.dump(2));
    return Status::Ok();
  }
  int arrays = 0, groups = 0;
  for (size_t i = 1; i < h.nodes.size(); ++i) (h.nodes[i].is_array ? arrays : groups)++;
  fmt::print("path:         {}\n", options.path);
  fmt::print("node:         group ({} arrays, {} groups{})\n", arrays, groups,
             h.from_consolidated ? "; read from consolidated metadata" : "");
  fmt::print("zarr_format:  {}\n", format);
  if (root.attributes_json() != "{}") {
    // One line, whatever the layout of the stored document.
    const nlohmann::json attributes = AttributesJson(root.attributes_json());
    fmt::print("attributes:   {}\n",
               attributes.is_string() ? root.attributes_json() : attributes.dump());
  }
  fmt::print("members:\n");
  // A tree: each node under its parent, "├──"/"└──" by whether a later
  // sibling follows.
  auto parent_of = [](const std::string& path) {
    size_t slash = path.rfind('/');
    return slash == std::string::npos ? std::string() : path.substr(0, slash);
  };
  std::function<void(const std::string&, const std::string&)> print =
      [&](const std::string& parent, const std::string& indent) {
        std::vector<const HierarchyNode*> children;
        for (size_t i = 1; i < h.nodes.size(); ++i) {
          if (parent_of(h.nodes[i].path) == parent) children.push_back(&h.nodes[i]);
        }
        for (size_t c = 0; c < children.size(); ++c) {
          const HierarchyNode& n = *children[c];
          const bool last = c + 1 == children.size();
          const std::string name = n.path.substr(parent.empty() ? 0 : parent.size() + 1);
          std::string line = indent + (last ? "└── " : "├── ") + name;
          if (n.is_array) {
            const ArrayMetadata& a = *n.array;
            line = fmt::format("{:<32} {} {} chunks {}", line, a.dtype().ToString(),
                               ShapeToString(a.shape), ShapeToString(a.read_chunk_shape()));
            if (a.sharding) line += fmt::format(" in shards {}", ShapeToString(a.chunk_shape));
            if (!n.dimensions.empty()) line += " dims " + DimsText(n.dimensions);
            line += "  " + DescribeEncoding(a);
          } else {
            line += "/";
          }
          fmt::print("  {}\n", line);
          const std::string attrs = n.attributes_json();
          // Attributes other than the dimension names xarray keeps in v2.
          if (attrs != "{}") {
            Result<std::string> shown = EditAttributes(attrs, "_ARRAY_DIMENSIONS", std::nullopt);
            if (shown.ok() && *shown != "{}") {
              fmt::print("  {}{}    attributes {}\n", indent, last ? " " : "│", *shown);
            }
          }
          if (!n.is_array) print(n.path, indent + (last ? "    " : "│   "));
        }
      };
  print("", "");
  return Status::Ok();
}

}  // namespace

Status RunInfo(const InfoOptions& options) {
  STRATA_ASSIGN_OR_RETURN(StoreAndPrefix at, OpenStoreUrl(options.path, /*create=*/false));
  STRATA_ASSIGN_OR_RETURN(NodeInfo node, InspectNode(*at.store, at.prefix));
  const int format = static_cast<int>(node.zarr_format);
  if (node.kind == NodeInfo::Kind::kGroup) return InfoGroup(options, *at.store, at.prefix);
  const ArrayMetadata& m = *node.array;
  STRATA_ASSIGN_OR_RETURN(ChunkGrid grid, ChunkGrid::Regular(m.shape, m.chunk_shape));
  const bool complete = node.kind == NodeInfo::Kind::kArray;
  ZarrArray::StoredChunks stored;
  if (complete) {
    STRATA_ASSIGN_OR_RETURN(std::shared_ptr<ZarrArray> array, ZarrArray::Open(at.store, at.prefix));
    STRATA_ASSIGN_OR_RETURN(stored, array->CountStoredChunks());
  }
  const int64_t logical = NumElements(m.shape) * m.dtype().size();
  const int64_t chunk_bytes = NumElements(m.chunk_shape) * m.dtype().size();
  std::string dtype_name = m.dtype().ToString();
  if (m.zarr_format == ZarrFormat::kV2) {
    dtype_name += " (" + m.dtype().ZarrV2Name(m.encoding.endian) + ")";
  } else if (m.dtype().is_fixed_length()) {
    dtype_name += fmt::format(" ({}, {} bytes)", m.dtype().name(), m.dtype().size());
  }
  std::string example_key = m.ChunkKey(Shape(m.rank(), 0));
  if (options.json) {
    nlohmann::json j = {
        {"path", options.path},
        {"zarr_format", format},
        {"node_type", "array"},
        {"complete", complete},
        {"shape", m.shape},
        {"chunks", m.chunk_shape},
        {"inner_chunks", m.sharding ? nlohmann::json(m.sharding->inner_chunk_shape)
                                    : nlohmann::json(nullptr)},
        {"dtype", m.dtype().ToString()},
        {"endian", std::string(EndianName(m.encoding.endian))},
        {"order", OrderName(m)},
        {"fill_value", FormatFillValue(m.dtype(), m.fill_value)},
        {"codecs", DescribeEncoding(m)},
        {"chunk_key_example", example_key},
        {"chunks_total", grid.num_blocks()},
        {"chunks_stored", stored.count},
        {"bytes_stored", stored.bytes},
        {"bytes_logical", logical},
        {"attributes", nlohmann::json::parse(m.attributes_json, nullptr, false)},
    };
    fmt::print("{}\n", j.dump(2));
    return Status::Ok();
  }
  fmt::print("path:         {}\n", options.path);
  fmt::print("node:         array{}\n", complete ? "" : " (INCOMPLETE: an interrupted strata run was writing it)");
  fmt::print("zarr_format:  {}\n", format);
  fmt::print("shape:        {}\n", ShapeToString(m.shape));
  fmt::print("chunks:       {}  ({} chunks in grid {}, {} each)\n", ShapeToString(m.chunk_shape),
             grid.num_blocks(), ShapeToString(grid.grid_shape()), FormatBytes(chunk_bytes));
  if (m.sharding) {
    const Shape& inner = m.sharding->inner_chunk_shape;
    fmt::print("shards:       {} inner chunks of {} per shard ({} each)\n",
               NumElements(m.chunk_shape) / NumElements(inner), ShapeToString(inner),
               FormatBytes(NumElements(inner) * m.dtype().size()));
  }
  fmt::print("dtype:        {}\n", dtype_name);
  fmt::print("order:        {}\n", OrderName(m));
  fmt::print("fill_value:   {}\n", FormatFillValue(m.dtype(), m.fill_value));
  fmt::print("codecs:       {}\n", DescribeEncoding(m));
  fmt::print("chunk keys:   \"{}\", ...\n", example_key);
  if (complete) {
    double ratio = stored.bytes > 0 ? static_cast<double>(logical) / stored.bytes : 0.0;
    fmt::print("stored:       {} / {} chunks, {} stored, {} logical (ratio {:.2f})\n", stored.count,
               grid.num_blocks(), FormatBytes(stored.bytes), FormatBytes(logical), ratio);
  } else {
    fmt::print("stored:       unknown until complete; {} logical\n", FormatBytes(logical));
  }
  if (m.attributes_json != "{}") fmt::print("attributes:   {}\n", m.attributes_json);
  if (m.dimension_names) {
    std::vector<std::string> names;
    for (const auto& n : *m.dimension_names) names.push_back(n.value_or("null"));
    fmt::print("dimensions:   {}\n", fmt::join(names, ", "));
  }
  return Status::Ok();
}

}  // namespace strata
