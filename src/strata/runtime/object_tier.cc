#include "strata/runtime/object_tier.h"

#include <fmt/format.h>

namespace strata {

ObjectIntermediateStore::ObjectIntermediateStore(std::shared_ptr<Store> store, std::string prefix,
                                                 ChunkGrid grid, DType dtype,
                                                 std::optional<ChunkGrid> stored)
    : store_(std::move(store)),
      prefix_(std::move(prefix)),
      layout_(std::move(grid), std::move(stored)),
      dtype_(dtype) {}

ObjectIntermediateStore::~ObjectIntermediateStore() { Cleanup().IgnoreError(); }

std::string ObjectIntermediateStore::Key(const std::string& piece) const {
  return JoinKey(prefix_, piece);
}

Status ObjectIntermediateStore::Put(std::span<const Index> block, NDArray data,
                                    MemoryPool& staging) {
  // Publish-once (intermediate_store.h): a piece already stored stays. Two
  // attempts storing at the very same moment both PUT; a PUT replaces an
  // object whole with the same bytes, so readers see one or the other.
  int64_t written = 0;
  for (const StoredLayout::Piece& piece : layout_.Pieces(block)) {
    STRATA_ASSIGN_OR_RETURN(bool exists, store_->Exists(Key(piece.key)));
    if (exists) continue;
    if (piece.in_region == Box::FromShape(data.shape())) {
      STRATA_RETURN_IF_ERROR(store_->Set(Key(piece.key), data.bytes()));
      written += data.nbytes();
      continue;
    }
    // A stored chunk of the block: staged contiguous for its PUT.
    STRATA_ASSIGN_OR_RETURN(NDArray part,
                            NDArray::CopyOf(staging, data.view().Slice(piece.in_region)));
    STRATA_RETURN_IF_ERROR(store_->Set(Key(piece.key), part.bytes()));
    written += part.nbytes();
  }
  bytes_written_ += written;
  return Status::Ok();
}

Result<std::shared_ptr<const NDArray>> ObjectIntermediateStore::Get(std::span<const Index> block,
                                                                    MemoryPool& pool) {
  STRATA_ASSIGN_OR_RETURN(NDArray a,
                          NDArray::Allocate(pool, dtype_, layout_.blocks().BlockShape(block)));
  const std::vector<StoredLayout::Piece> pieces = layout_.Pieces(block);
  if (pieces.size() == 1 && pieces[0].in_region == Box::FromShape(a.shape())) {
    STRATA_RETURN_IF_ERROR(store_->GetInto(Key(pieces[0].key), a.bytes()));
  } else {
    STRATA_RETURN_IF_ERROR(GetRegion(block, Box::FromShape(a.shape()), a.view(), pool));
  }
  return std::make_shared<const NDArray>(std::move(a));
}

Status ObjectIntermediateStore::GetRegion(std::span<const Index> block, const Box& region,
                                          const ArrayView& out, MemoryPool& staging) {
  const int64_t item = dtype_.size();
  for (const StoredLayout::Piece& piece : layout_.Pieces(block, region)) {
    const Shape strides = ContiguousStrides(piece.shape, item);
    // Byte span from the part's first element to just past its last.
    const Box& part = piece.in_piece;
    int64_t first = 0, last = item;
    for (int i = 0; i < part.rank(); ++i) {
      first += part.origin[i] * strides[i];
      last += (part.end(i) - 1) * strides[i];
    }
    const int64_t span = last - first;
    STRATA_ASSIGN_OR_RETURN(Buffer staged,
                            store_->GetRange(Key(piece.key), first, span, staging));
    if (staged.size() != span) {
      return DataLossError(fmt::format("{}/{}: object tier block is shorter than its block",
                                       store_->url(), Key(piece.key)));
    }
    // The staged bytes seen as the part: the piece's strides, from `first`.
    ConstArrayView view(staged.data(), dtype_, part.shape, strides);
    CopyArray(view, out.Slice(piece.in_region));
  }
  return Status::Ok();
}

Status ObjectIntermediateStore::Erase(std::span<const Index> block) {
  for (const StoredLayout::Piece& piece : layout_.Pieces(block)) {
    STRATA_RETURN_IF_ERROR(store_->Erase(Key(piece.key)));
  }
  return Status::Ok();
}

Status ObjectIntermediateStore::Cleanup() {
  if (!owner_) return Status::Ok();
  return store_->ErasePrefix(prefix_ + "/");
}

}  // namespace strata
