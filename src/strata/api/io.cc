// to_zarr and compute/plan.
#include <fmt/format.h>

#include "strata/api/internal.h"
#include "strata/api/plan_checks.h"
#include "strata/base/byte_size.h"
#include "strata/strata.h"

namespace strata {

Array to_zarr(const Array& x, const std::string& path, ToZarrOptions options) {
  if (!x.ok()) return x;
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
  m.fill_value = options.fill_value.value_or(ZeroFillValue(in.dtype()));
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
  Node node;
  node.op_name = "to_zarr";
  node.kind = NodeKind::kStore;
  node.shape = in.shape();
  node.dtype = in.dtype();
  node.grid = in.chunks();
  node.inputs.push_back(in.node());
  node.maps.push_back(InputMap::IdentityMap(in.chunks().grid_shape()));
  node.target = *target;
  node.spec = in.spec();
  std::shared_ptr<const Node> made = MakeNode(std::move(node));
  Status aliasing = internal_api::CheckNoAliasing({made});
  if (!aliasing.ok()) return Array::FromStatus(aliasing);
  return Array(std::move(made));
}

Result<std::shared_ptr<const Plan>> plan(const std::vector<Array>& arrays,
                                         const PlanOptions& options) {
  STRATA_RETURN_IF_ERROR(internal_api::FirstError(arrays));
  if (arrays.empty()) return InvalidArgumentError("plan: no arrays given");
  STRATA_ASSIGN_OR_RETURN(ResolvedSpec spec, ResolveSpec(*internal_api::SpecOf(arrays)));
  std::vector<std::shared_ptr<const Node>> nodes;
  for (const Array& a : arrays) nodes.push_back(a.node());
  STRATA_RETURN_IF_ERROR(internal_api::CheckGridLimits(nodes));
  STRATA_RETURN_IF_ERROR(internal_api::CheckNoAliasing(nodes));
  return BuildPlan(nodes, spec, options);
}

Result<std::vector<NDArray>> compute(const std::vector<Array>& arrays,
                                     const ComputeOptions& options,
                                     const PlanOptions& plan_options) {
  STRATA_ASSIGN_OR_RETURN(std::shared_ptr<const Plan> p, plan(arrays, plan_options));
  STRATA_ASSIGN_OR_RETURN(ComputeResult result, Execute(*p, options));
  std::vector<NDArray> out;
  for (auto& a : result.arrays) out.push_back(a ? std::move(*a) : NDArray());
  return out;
}

Result<NDArray> compute(const Array& array, const ComputeOptions& options,
                        const PlanOptions& plan_options) {
  STRATA_ASSIGN_OR_RETURN(std::vector<NDArray> out, compute(std::vector<Array>{array}, options,
                                                            plan_options));
  return std::move(out[0]);
}

Array rechunk(const Array& x, Shape chunks, ByteSize min_mem) {
  if (!x.ok()) return x;
  Result<ChunkGrid> grid = internal_api::GridFor(x.shape(), chunks, x.dtype(), *x.spec(), "rechunk");
  if (!grid.ok()) return Array::FromStatus(grid.status());
  // The exchange's key functions hold an entry per block along each axis.
  Status limits = internal_api::CheckBlockCount(x.chunks(), fmt::format("rechunk: {}", x.name()));
  if (limits.ok()) limits = internal_api::CheckBlockCount(*grid, "rechunk: the target");
  if (!limits.ok()) return Array::FromStatus(limits);
  int64_t min_bytes = -1;
  if (min_mem.is_set()) {
    Result<int64_t> r = min_mem.Resolve("rechunk min_mem");
    if (!r.ok()) return Array::FromStatus(r.status());
    min_bytes = *r;
  }
  return internal_api::RechunkToGrid(x, *grid, min_bytes);
}

}  // namespace strata
