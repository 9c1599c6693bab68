#include "strata/runtime/object_tier.h"

#include <fmt/format.h>

namespace strata {

ObjectIntermediateStore::ObjectIntermediateStore(std::shared_ptr<Store> store, std::string prefix,
                                                 ChunkGrid grid, DType dtype,
                                                 std::shared_ptr<MemoryPool> scratch)
    : store_(std::move(store)), prefix_(std::move(prefix)), grid_(std::move(grid)),
      dtype_(dtype), scratch_(std::move(scratch)) {}

ObjectIntermediateStore::~ObjectIntermediateStore() { Cleanup().IgnoreError(); }

std::string ObjectIntermediateStore::Key(std::span<const Index> block) const {
  return JoinKey(prefix_, block.empty() ? "0" : JoinIndices(block, '.'));
}

Status ObjectIntermediateStore::Put(std::span<const Index> block, NDArray data) {
  STRATA_RETURN_IF_ERROR(store_->Set(Key(block), data.bytes()));
  bytes_written_ += data.nbytes();
  return Status::Ok();
}

Result<std::shared_ptr<const NDArray>> ObjectIntermediateStore::Get(std::span<const Index> block,
                                                                    MemoryPool& pool) {
  STRATA_ASSIGN_OR_RETURN(NDArray a, NDArray::Allocate(pool, dtype_, grid_.BlockShape(block)));
  STRATA_RETURN_IF_ERROR(store_->GetInto(Key(block), a.bytes()));
  return std::make_shared<const NDArray>(std::move(a));
}

Status ObjectIntermediateStore::GetRegion(std::span<const Index> block, const Box& region,
                                          const ArrayView& out) {
  if (region.empty()) return Status::Ok();
  const Shape layout = grid_.BlockShape(block);
  const int64_t item = dtype_.size();
  const Shape strides = ContiguousStrides(layout, item);
  // Byte span from the region's first element to just past its last.
  int64_t first = 0, last = item;
  for (int i = 0; i < region.rank(); ++i) {
    first += region.origin[i] * strides[i];
    last += (region.end(i) - 1) * strides[i];
  }
  const int64_t span = last - first;
  STRATA_ASSIGN_OR_RETURN(Buffer staged, store_->GetRange(Key(block), first, span, *scratch_));
  if (staged.size() != span) {
    return DataLossError(fmt::format("{}/{}: object tier block is shorter than its block",
                                     store_->url(), Key(block)));
  }
  // The staged bytes seen as the region: the block's strides, from `first`.
  ConstArrayView view(staged.data(), dtype_, region.shape, strides);
  CopyArray(view, out);
  return Status::Ok();
}

Status ObjectIntermediateStore::Erase(std::span<const Index> block) {
  return store_->Erase(Key(block));
}

Status ObjectIntermediateStore::Cleanup() { return store_->ErasePrefix(prefix_ + "/"); }

}  // namespace strata
