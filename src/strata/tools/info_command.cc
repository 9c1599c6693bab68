#include <fmt/format.h>

#include <cmath>
#include <complex>
#include <cstring>
#include <nlohmann/json.hpp>

#include "strata/base/byte_size.h"
#include "strata/core/chunk_grid.h"
#include "strata/core/dtype_dispatch.h"
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

}  // namespace

Status RunInfo(const InfoOptions& options) {
  STRATA_ASSIGN_OR_RETURN(StoreAndPrefix at, OpenStoreUrl(options.path, /*create=*/false));
  STRATA_ASSIGN_OR_RETURN(NodeInfo node, InspectNode(*at.store, at.prefix));
  const int format = static_cast<int>(node.zarr_format);
  if (node.kind == NodeInfo::Kind::kGroup) {
    if (options.json) {
      nlohmann::json j = {{"path", options.path}, {"zarr_format", format}, {"node_type", "group"}};
      fmt::print("{}\n", j.dump(2));
    } else {
      fmt::print("path:         {}\nnode:         group\nzarr_format:  {}\n", options.path, format);
    }
    return Status::Ok();
  }
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
