// Graphs for plan tests, built from plan nodes alone (no API): Zarr sources
// with metadata only, virtual arrays, elementwise ops, logical rechunks and
// stores, and specs with every size given (plans do not depend on the
// machine).
#ifndef STRATA_PLAN_PLAN_TEST_UTIL_H_
#define STRATA_PLAN_PLAN_TEST_UTIL_H_

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "strata/plan/planner.h"
#include "strata/storage/memory_store.h"
#include "strata/storage/store.h"
#include "strata/storage/zarr/zarr_array.h"

namespace strata::testing_util {

inline ArrayMetadata BloscMetadata(const Shape& shape, const Shape& chunks, DType dtype,
                                   bool compressed = true) {
  ArrayMetadata m;
  m.zarr_format = ZarrFormat::kV2;
  m.shape = shape;
  m.chunk_shape = chunks;
  m.encoding.dtype = dtype;
  if (compressed) m.encoding.bytes_codecs = {BloscSpec{}};
  m.fill_value = ZeroFillValue(dtype);
  return m;
}

// A Zarr source with metadata only (no chunk exists), blosc-compressed as
// zarr-python writes by default unless `compressed` is false.
inline std::shared_ptr<const Node> SourceNode(const Shape& shape, const Shape& chunks, DType dtype,
                                              bool compressed = true) {
  auto store = std::make_shared<MemoryStore>();
  ZarrArray::CreateOptions options;
  options.deferred_metadata = false;
  Result<std::shared_ptr<ZarrArray>> z =
      ZarrArray::Create(store, "", BloscMetadata(shape, chunks, dtype, compressed), options);
  EXPECT_TRUE(z.ok()) << z.status().ToString();
  Node n;
  n.op_name = "from_zarr";
  n.kind = NodeKind::kZarrSource;
  n.shape = shape;
  n.dtype = dtype;
  n.grid = (*z)->grid();
  n.zarr = *z;
  return MakeNode(std::move(n));
}

inline BlockFunction NotRunHere() {
  return [](const BlockRequest&) -> Result<NDArray> { return InternalError("not run here"); };
}

inline std::shared_ptr<const Node> VirtualNode(const Shape& shape, const Shape& chunks) {
  Node n;
  n.op_name = "virtual";
  n.kind = NodeKind::kVirtual;
  n.shape = shape;
  n.dtype = DTypeId::kFloat64;
  n.grid = *ChunkGrid::Regular(shape, chunks);
  n.fn = NotRunHere();
  n.virtual_fill = [](const Box&, const ArrayView&) { return Status::Ok(); };
  return MakeNode(std::move(n));
}

// An elementwise op over inputs of one grid.
inline std::shared_ptr<const Node> ElementwiseNode(
    std::vector<std::shared_ptr<const Node>> inputs, std::string name = "add",
    int64_t extra_mem = 0) {
  Node n;
  n.op_name = std::move(name);
  n.kind = NodeKind::kBlockwise;
  n.shape = inputs[0]->shape;
  n.dtype = inputs[0]->dtype;
  n.grid = inputs[0]->grid;
  for (const auto& in : inputs) n.maps.push_back(InputMap::IdentityMap(in->grid.grid_shape()));
  n.inputs = std::move(inputs);
  n.fn = NotRunHere();
  n.extra_mem = extra_mem;
  n.region_fn = [](std::span<const ConstArrayView>, const ArrayView&) { return Status::Ok(); };
  return MakeNode(std::move(n));
}

inline std::shared_ptr<const Node> RechunkNode(const std::shared_ptr<const Node>& x,
                                               const Shape& chunks, int64_t min_mem = -1) {
  return MakeRechunk(x, *ChunkGrid::Regular(x->shape, chunks), min_mem);
}

// to_zarr("target.zarr") with the input's chunks, blosc-compressed.
inline std::shared_ptr<const Node> StoreNode(const std::shared_ptr<const Node>& x) {
  Node n;
  n.op_name = "to_zarr";
  n.kind = NodeKind::kStore;
  n.shape = x->shape;
  n.dtype = x->dtype;
  n.grid = x->grid;
  n.inputs = {x};
  n.maps = {InputMap::IdentityMap(x->grid.grid_shape())};
  n.target = *ZarrTarget::Make(
      "target.zarr", BloscMetadata(x->shape, x->grid.chunk_shape(), x->dtype), false);
  return MakeNode(std::move(n));
}

inline ResolvedSpec PlanSpec(int64_t allowed, TierChoice tier = TierChoice::kAuto,
                             int64_t reserved = kDefaultReservedMem,
                             int64_t total = 16'000'000'000) {
  ResolvedSpec s;
  s.allowed_mem = allowed;
  s.reserved_mem = reserved;
  s.total_system_mem = total;
  s.workers = 2;
  s.tier = tier;
  if (tier == TierChoice::kObject) s.object_store_url = "s3://bucket/tmp";
  return s;
}

inline std::shared_ptr<const Plan> PlanOf(std::vector<std::shared_ptr<const Node>> outs,
                                          const ResolvedSpec& spec,
                                          const PlanOptions& options = {}) {
  Result<std::shared_ptr<const Plan>> p = BuildPlan(outs, spec, options);
  EXPECT_TRUE(p.ok()) << p.status().ToString();
  return p.ok() ? *p : nullptr;
}

}  // namespace strata::testing_util

#endif  // STRATA_PLAN_PLAN_TEST_UTIL_H_
