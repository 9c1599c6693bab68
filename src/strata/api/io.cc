// to_zarr: a store node writing an array into a new or existing Zarr array.
#include "strata/api/io.h"

#include <fmt/format.h>

#include "strata/api/chunks.h"
#include "strata/api/elementwise.h"
#include "strata/api/internal.h"
#include "strata/api/plan_checks.h"
#include "strata/base/byte_size.h"
#include "strata/core/checked_index.h"
#include "strata/storage/open_store.h"
#include "strata/storage/zarr/zarr_array.h"

namespace strata {

namespace {

// The store node writing `in`, block for block, into `target`; refused when
// the target aliases any Zarr array the graph reads.
Array StoreNode(const Array& in, std::shared_ptr<ZarrTarget> target, std::string op_name) {
  Node node;
  node.op_name = std::move(op_name);
  node.kind = NodeKind::kStore;
  node.shape = in.shape();
  node.dtype = in.dtype();
  node.grid = in.chunks();
  node.inputs.push_back(in.node());
  node.maps.push_back(InputMap::IdentityMap(in.chunks().grid_shape()));
  node.target = std::move(target);
  node.spec = in.spec();
  std::shared_ptr<const Node> made = MakeNode(std::move(node));
  Status aliasing = internal_api::CheckNoAliasing({made});
  if (!aliasing.ok()) return Array::FromStatus(aliasing);
  return Array(std::move(made));
}

// numpy's kinds in the order of its "same_kind" casting rule: values may be
// written into a dtype of their own kind or a later one (uint8 into int16,
// int32 into float32, float64 into float32), never an earlier one (float
// into int, complex into float, a number into bool). -1: not a number.
int SameKindRank(DType d) {
  if (d.is_bool()) return 0;
  if (d.is_unsigned_integer()) return 1;
  if (d.is_signed_integer()) return 2;
  if (d.is_float() || d.is_float16()) return 3;
  if (d.is_complex()) return 4;
  return -1;
}

bool CastsSameKind(DType from, DType to) {
  if (from == to) return true;
  const int f = SameKindRank(from), t = SameKindRank(to);
  return f >= 0 && t >= 0 && f <= t;
}

// to_zarr into part of an existing array (region_origin or append_dim).
Array ToZarrRegion(const Array& x, const std::string& path, const ToZarrOptions& options) {
  auto fail = [&](const Status& s) {
    return Array::FromStatus(s.WithContext(fmt::format("to_zarr {}", path)));
  };
  auto invalid = [&](std::string message) { return fail(InvalidArgumentError(std::move(message))); };
  if (options.region_origin && options.append_dim) {
    return invalid("give region_origin or append_dim, not both");
  }
  Result<StoreAndPrefix> at = OpenStoreUrl(path, /*create=*/false);
  if (!at.ok()) return fail(at.status());
  Result<std::shared_ptr<ZarrArray>> existing = ZarrArray::Open(at->store, at->prefix);
  if (!existing.ok()) return fail(existing.status());
  ArrayMetadata m = (*existing)->metadata();
  const int rank = m.rank();
  if (x.ndim() != rank) {
    return invalid(fmt::format("x has rank {}, the array {} has rank {}", x.ndim(),
                               ShapeToString(m.shape), rank));
  }
  ZarrTarget::Mode mode;
  Shape origin(rank, 0);
  if (options.append_dim) {
    const int axis = *options.append_dim;
    if (axis < 0 || axis >= rank) {
      return invalid(fmt::format("append_dim {} is out of range for rank {}", axis, rank));
    }
    for (int i = 0; i < rank; ++i) {
      if (i != axis && x.shape()[i] != m.shape[i]) {
        return invalid(fmt::format("appending {} along axis {} to {}: the other extents differ",
                                   ShapeToString(x.shape()), axis, ShapeToString(m.shape)));
      }
    }
    origin[axis] = m.shape[axis];
    Result<Index> grown = CheckedAdd(
        m.shape[axis], x.shape()[axis],
        fmt::format("appending {} along axis {} to {}", ShapeToString(x.shape()), axis,
                    ShapeToString(m.shape)));
    if (!grown.ok()) return fail(grown.status());
    m.shape[axis] = *grown;
    mode.kind = ZarrTarget::Mode::Kind::kAppend;
    mode.append_axis = axis;
  } else {
    origin = *options.region_origin;
    if (static_cast<int>(origin.size()) != rank) {
      return invalid(fmt::format("region origin {} has rank {}, the array {}",
                                 ShapeToString(origin), origin.size(), rank));
    }
    const Box region(origin, x.shape());
    if (Status s = CheckBox(region, "region"); !s.ok()) return fail(s);
    if (!Box::FromShape(m.shape).Contains(region)) {
      return invalid(fmt::format("region at {} of shape {} is outside the array of shape {}",
                                 ShapeToString(origin), ShapeToString(x.shape()),
                                 ShapeToString(m.shape)));
    }
    mode.kind = ZarrTarget::Mode::Kind::kRegion;
  }
  mode.region_origin = origin;
  if (!CastsSameKind(x.dtype(), m.dtype())) {
    return invalid(fmt::format("x has dtype {}, the array {}: writing it would change its kind "
                               "(numpy's same_kind casting refuses it); cast x first",
                               x.dtype().ToString(), m.dtype().ToString()));
  }
  Array in = x;
  if (in.dtype() != m.dtype()) {
    in = astype(in, m.dtype());
    if (!in.ok()) return in;
  }
  // One block per chunk of the array the region touches: boundaries at the
  // array's chunk boundaries, shifted into x's coordinates.
  const Shape& chunks = m.chunk_shape;
  std::vector<std::vector<Index>> sizes(rank);
  for (int i = 0; i < rank; ++i) {
    Index pos = 0, n = x.shape()[i];
    while (pos < n) {
      const Index global = origin[i] + pos;
      const Index size = std::min(n - pos, chunks[i] - global % chunks[i]);
      sizes[i].push_back(size);
      pos += size;
    }
  }
  Result<ChunkGrid> grid = ChunkGrid::Rectilinear(sizes);
  if (!grid.ok()) return fail(grid.status());
  if (!(in.chunks() == *grid)) in = internal_api::RechunkToGrid(in, *grid);
  if (!in.ok()) return in;
  Result<std::shared_ptr<ZarrTarget>> target =
      ZarrTarget::Make(path, std::move(m), /*overwrite=*/false, mode);
  if (!target.ok()) return fail(target.status());
  // Backfilling an array from itself (or from inside it) would read chunks
  // while they are rewritten: refused, as every other write is.
  return StoreNode(in, *std::move(target), options.append_dim ? "append" : "write_region");
}

}  // namespace

Array to_zarr(const Array& x, const std::string& path, ToZarrOptions options) {
  if (!x.ok()) return x;
  if (options.region_origin || options.append_dim) return ToZarrRegion(x, path, options);
  Array in = x;
  if (!in.chunks().is_regular()) {
    // Zarr needs a regular grid: rechunk to the nominal chunk shape.
    in = rechunk(in, in.chunksize());
    if (!in.ok()) return in;
  }
  ArrayMetadata m;
  m.zarr_format = options.zarr_format;
  m.shape = in.shape();
  m.chunk_shape = in.chunksize();
  m.encoding.dtype = in.dtype();
  if (!options.no_compression) {
    if (options.codecs.empty()) {
      BloscSpec blosc;
      options.codecs.push_back(blosc);
    }
    m.encoding.bytes_codecs = options.codecs;
  }
  m.fill_value = ZeroFillValue(in.dtype());
  if (options.fill_value &&
      (options.fill_value->bytes.size() == static_cast<size_t>(in.dtype().size()) ||
       options.fill_value->is_null)) {
    m.fill_value = *options.fill_value;
    if (m.fill_value.is_null) {
      // Zarr v2's null still pads edge chunks and stands for missing ones
      // with zeros, as a null parsed from metadata does (its bytes are
      // zero, never empty); v3 has no null fill value.
      m.fill_value = ZeroFillValue(in.dtype());
      m.fill_value.is_null = m.zarr_format == ZarrFormat::kV2;
    }
  }
  m.attributes_json = options.attributes_json;
  if (m.zarr_format == ZarrFormat::kV3) m.dimension_names = options.dimension_names;
  if (m.zarr_format == ZarrFormat::kV3) {
    m.chunk_key_encoding = {ChunkKeyEncoding::Kind::kDefault, '/'};
  }
  if (options.shards) {
    auto fail = [&](std::string message) {
      return Array::FromStatus(
          InvalidArgumentError(fmt::format("to_zarr {}: {}", path, std::move(message))));
    };
    if (m.zarr_format != ZarrFormat::kV3) return fail("sharding needs Zarr format 3");
    const Shape& shards = *options.shards;
    if (shards.size() != m.shape.size()) {
      return fail(fmt::format("shards {} do not match the rank of {}", ShapeToString(shards),
                              ShapeToString(m.shape)));
    }
    for (size_t i = 0; i < shards.size(); ++i) {
      if (shards[i] < 1 || shards[i] % m.chunk_shape[i] != 0) {
        return fail(fmt::format("shards {} must be a multiple of the chunks {}",
                                ShapeToString(shards), ShapeToString(m.chunk_shape)));
      }
    }
    ShardingSpec sharding;
    sharding.inner_chunk_shape = m.chunk_shape;
    sharding.inner_encoding = m.encoding;
    m.encoding.bytes_codecs.clear();
    m.chunk_shape = shards;
    m.sharding = std::move(sharding);
    // The store's tasks are shards: gather them from x's input directly when
    // x is itself a rechunk (one exchange, not two).
    Array base = in;
    if (in.node()->kind == NodeKind::kRechunk && in.node()->inputs[0]->grid.is_regular()) {
      base = Array(in.node()->inputs[0]);
    }
    if (base.chunksize() != shards || !base.chunks().is_regular()) {
      in = rechunk(base, shards);
      if (!in.ok()) return in;
    } else {
      in = base;
    }
  }
  Result<std::shared_ptr<ZarrTarget>> target = ZarrTarget::Make(path, std::move(m), options.overwrite);
  if (!target.ok()) return Array::FromStatus(target.status().WithContext(fmt::format("to_zarr {}", path)));
  return StoreNode(in, *std::move(target), "to_zarr");
}

}  // namespace strata
