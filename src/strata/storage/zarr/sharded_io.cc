// ZarrArray on sharded arrays: shard indexes, inner chunks, writing shards.
#include "strata/storage/zarr/zarr_array.h"

#include <fmt/format.h>

#include <cstring>

#include "strata/storage/zarr/zarr_array_internal.h"

namespace strata {

using internal_zarr::ReadThroughTemporary;

// ---------------------------------------------------------------------------
// Sharded arrays.

std::string ZarrArray::ShardName(std::span<const Index> block) const {
  return fmt::format("shard {} of {}", ChunkName(block), url());
}

void ZarrArray::ForgetShardIndex(std::span<const Index> shard) const {
  const Index linear = LinearIndex(shard, grid_.grid_shape());
  MutexLock lock(&index_mu_);
  std::erase_if(index_cache_, [&](const auto& e) { return e.first == linear; });
}

Result<std::shared_ptr<const ShardIndex>> ZarrArray::ShardIndexOf(
    std::span<const Index> shard) const {
  const Index linear = LinearIndex(shard, grid_.grid_shape());
  {
    MutexLock lock(&index_mu_);
    for (auto it = index_cache_.begin(); it != index_cache_.end(); ++it) {
      if (it->first != linear) continue;
      auto found = std::move(*it);
      index_cache_.erase(it);
      index_cache_.push_back(found);
      return found.second;
    }
  }
  const std::string key = ChunkStoreKey(shard);
  const int64_t n = shards_->index_bytes();
  // The index alone: the last n bytes (with the shard's size, in one request
  // where the store allows), or the first n.
  std::optional<Store::Suffix> read;
  if (shards_->spec().index_at_end) {
    Result<Store::Suffix> suffix = store_->GetSuffix(key, n, *MemoryPool::Default());
    if (!suffix.ok()) {
      if (IsNotFound(suffix.status())) return std::shared_ptr<const ShardIndex>();
      return suffix.status().WithContext(fmt::format("reading the index of {}", ShardName(shard)));
    }
    read = std::move(suffix).value();
  } else {
    Result<Buffer> head = store_->GetRange(key, 0, n, *MemoryPool::Default());
    if (!head.ok()) {
      if (IsNotFound(head.status())) return std::shared_ptr<const ShardIndex>();
      return head.status().WithContext(fmt::format("reading the index of {}", ShardName(shard)));
    }
    // The shard's size is checked lazily: an inner chunk's range that comes
    // back short is reported as reaching past the end.
    const int64_t got = head->size();
    read = Store::Suffix{std::move(head).value(), got < n ? got : INT64_MAX / 2};
  }
  STRATA_ASSIGN_OR_RETURN(ShardIndex index,
                          shards_->DecodeIndex(read->bytes.span(), read->total_size,
                                               ShardName(shard)));
  auto shared = std::make_shared<const ShardIndex>(std::move(index));
  MutexLock lock(&index_mu_);
  if (index_cache_.size() >= kIndexCacheEntries) index_cache_.erase(index_cache_.begin());
  index_cache_.emplace_back(linear, shared);
  return std::shared_ptr<const ShardIndex>(shared);
}

Status ZarrArray::DecodeInner(std::span<const std::byte> encoded, const ArrayView& out,
                              MemoryPool& pool) const {
  const Shape& inner = shards_->inner_shape();
  if (out.shape() == inner) return codec_->Decode(encoded, out, pool);
  // An inner chunk at the array's edge: decode whole, keep the corner.
  return ReadThroughTemporary(pool, dtype(), inner, Box::FromShape(out.shape()), out,
                              [&](const ArrayView& whole) -> Result<bool> {
                                STRATA_RETURN_IF_ERROR(codec_->Decode(encoded, whole, pool));
                                return true;
                              })
      .status();
}

Result<bool> ZarrArray::ReadBlock(std::span<const Index> block, const ArrayView& out,
                                  MemoryPool& pool) const {
  // An unsharded chunk through ReadChunkPart: where ranged reads are cheap
  // and the codec decodes runs (blosc on a local file), the stored bytes
  // come a few blosc blocks at a time instead of whole beside the decoded
  // chunk (a task reading a 200 MB chunk held ~380 MB).
  if (!shards_) return ReadChunkPart(block, grid_.BlockBox(block), out, pool);
  STRATA_CHECK(out.shape() == read_grid_.BlockShape(block))
      << "ReadBlock into " << ShapeToString(out.shape()) << " for inner chunk of "
      << ShapeToString(read_grid_.BlockShape(block));
  STRATA_ASSIGN_OR_RETURN(InnerChunk c, LocateInner(block));
  if (c.entry.missing()) {
    FillArray(out, metadata_.fill_value.bytes);
    return false;
  }
  const ShardEntry& e = c.entry;
  Result<Buffer> bytes = store_->GetRange(ChunkStoreKey(c.shard), static_cast<int64_t>(e.offset),
                                          static_cast<int64_t>(e.nbytes), pool);
  if (!bytes.ok()) return bytes.status().WithContext("reading " + c.name);
  if (bytes->size() != static_cast<int64_t>(e.nbytes)) {
    return DataLossError(fmt::format(
        "{}: inner chunk {} at bytes [{}, {}) reaches past the end of the shard",
        ShardName(c.shard), ShapeToString(c.within), e.offset, e.offset + e.nbytes));
  }
  Status s = DecodeInner(bytes->span(), out, pool);
  if (!s.ok()) return s.WithContext("reading " + c.name);
  return true;
}

Result<ZarrArray::InnerChunk> ZarrArray::LocateInner(std::span<const Index> block) const {
  const Shape& per = shards_->inner_grid();
  InnerChunk c{Shape(block.size()), Shape(block.size()), ShardEntry{}, {}};
  for (size_t i = 0; i < block.size(); ++i) {
    c.shard[i] = block[i] / per[i];
    c.within[i] = block[i] % per[i];
  }
  c.name = fmt::format("inner chunk {} of {}", ShapeToString(c.within), ShardName(c.shard));
  STRATA_ASSIGN_OR_RETURN(std::shared_ptr<const ShardIndex> index, ShardIndexOf(c.shard));
  if (!index) {
    // A shard a concurrent rewrite deleted reads as missing too.
    STRATA_RETURN_IF_ERROR(CheckMissingChunk().WithContext("reading " + c.name));
    return c;
  }
  c.entry = index->entry(LinearIndex(c.within, per));
  return c;
}

Result<bool> ZarrArray::ReadShard(std::span<const Index> block, const ArrayView& out,
                                  MemoryPool& pool) const {
  const Box shard_box = grid_.BlockBox(block);
  STRATA_CHECK(out.shape() == shard_box.shape);
  STRATA_ASSIGN_OR_RETURN(std::optional<Buffer> bytes, GetEncodedChunk(block, pool));
  if (!bytes) {
    FillArray(out, metadata_.fill_value.bytes);
    STRATA_RETURN_IF_ERROR(CheckMissingChunk().WithContext(
        fmt::format("reading {}", ShardName(block))));
    return false;
  }
  const int64_t size = bytes->size();
  const int64_t n = shards_->index_bytes();
  if (size < n) {
    return DataLossError(fmt::format("{}: the shard is {} bytes, too short for its {}-byte index",
                                     ShardName(block), size, n));
  }
  std::span<const std::byte> all = bytes->span();
  std::span<const std::byte> index_bytes =
      shards_->spec().index_at_end ? all.last(static_cast<size_t>(n))
                                   : all.first(static_cast<size_t>(n));
  STRATA_ASSIGN_OR_RETURN(ShardIndex index,
                          shards_->DecodeIndex(index_bytes, size, ShardName(block)));
  const Box clipped = Box::FromShape(shard_box.shape);
  for (Index j = 0; j < shards_->inner_per_shard(); ++j) {
    const Box inner = Intersect(shards_->InnerBox(j), clipped);
    if (inner.empty()) continue;
    ArrayView dst = out.Slice(inner);
    const ShardEntry& e = index.entry(j);
    if (e.missing()) {
      FillArray(dst, metadata_.fill_value.bytes);
      continue;
    }
    Status s = DecodeInner(all.subspan(e.offset, e.nbytes), dst, pool);
    if (!s.ok()) {
      Shape coords(block.size());
      UnravelIndex(j, shards_->inner_grid(), coords);
      return s.WithContext(
          fmt::format("reading inner chunk {} of {}", ShapeToString(coords), ShardName(block)));
    }
  }
  return true;
}

Status ZarrArray::CheckEncodedChunk(std::span<const Index> block,
                                    std::span<const std::byte> encoded, MemoryPool& pool) const {
  auto context = [&] { return fmt::format("reading chunk {} of {}", JoinIndices(block, '.'), url()); };
  if (!shards_) {
    STRATA_ASSIGN_OR_RETURN(NDArray check, NDArray::Allocate(pool, dtype(), metadata_.chunk_shape));
    return codec_->Decode(encoded, check.view(), pool).WithContext(context());
  }
  const int64_t n = shards_->index_bytes();
  if (static_cast<int64_t>(encoded.size()) < n) {
    return DataLossError(fmt::format("{}: the shard is {} bytes, too short for its {}-byte index",
                                     ShardName(block), encoded.size(), n));
  }
  std::span<const std::byte> index_bytes = shards_->spec().index_at_end
                                               ? encoded.last(static_cast<size_t>(n))
                                               : encoded.first(static_cast<size_t>(n));
  STRATA_ASSIGN_OR_RETURN(ShardIndex index, shards_->DecodeIndex(
                                                index_bytes, static_cast<int64_t>(encoded.size()),
                                                ShardName(block)));
  STRATA_ASSIGN_OR_RETURN(NDArray check,
                          NDArray::Allocate(pool, dtype(), shards_->inner_shape()));
  for (Index j = 0; j < shards_->inner_per_shard(); ++j) {
    const ShardEntry& e = index.entry(j);
    if (e.missing()) continue;
    Status s = codec_->Decode(encoded.subspan(e.offset, e.nbytes), check.view(), pool);
    if (!s.ok()) {
      Shape coords(block.size());
      UnravelIndex(j, shards_->inner_grid(), coords);
      return s.WithContext(
          fmt::format("reading inner chunk {} of {}", ShapeToString(coords), ShardName(block)));
    }
  }
  return Status::Ok();
}

Result<std::unique_ptr<ShardWriter>> ZarrArray::BeginShard(std::span<const Index> block,
                                                           MemoryPool& pool) const {
  STRATA_CHECK(shards_ != nullptr) << "BeginShard of an unsharded array";
  ForgetShardIndex(block);
  return ShardWriter::Begin(shards_, *store_, ChunkStoreKey(block), metadata_.fill_value.bytes,
                            pool, /*erase_if_empty=*/!fresh_);
}

Status ZarrArray::FinishShard(std::span<const Index> block, ShardWriter& writer) const {
  STRATA_ASSIGN_OR_RETURN(bool written, writer.Finish());
  if (!written) return NoteFillChunk(block);
  return Status::Ok();
}

Status ZarrArray::WriteShard(std::span<const Index> block, const ConstArrayView& data,
                             MemoryPool& pool) const {
  auto context = [&] { return fmt::format("writing {}", ShardName(block)); };
  const Box shard_box = grid_.BlockBox(block);
  STRATA_CHECK(data.shape() == shard_box.shape);
  Result<std::unique_ptr<ShardWriter>> writer = BeginShard(block, pool);
  if (!writer.ok()) return writer.status().WithContext(context());
  const Box clipped = Box::FromShape(shard_box.shape);
  std::optional<NDArray> padded;
  for (Index j = 0; j < shards_->inner_per_shard(); ++j) {
    const Box inner = shards_->InnerBox(j);
    const Box part = Intersect(inner, clipped);
    if (part.empty()) continue;
    Status s;
    if (part == inner) {
      s = (*writer)->Add(j, data.Slice(inner));
    } else {
      if (!padded) {
        Result<NDArray> a = NDArray::Allocate(pool, dtype(), shards_->inner_shape());
        if (!a.ok()) return a.status().WithContext(context());
        padded = std::move(a).value();
      }
      FillArray(padded->view(), metadata_.fill_value.bytes);
      CopyArray(data.Slice(part), padded->view().Slice(Translate(part, inner.origin)));
      s = (*writer)->Add(j, padded->view());
    }
    if (!s.ok()) return s.WithContext(context());
  }
  return FinishShard(block, **writer).WithContext(context());
}

Status ZarrArray::UpdateShard(std::span<const Index> block, const Box& part,
                              const ConstArrayView& data, MemoryPool& pool) const {
  // `part` is in array coordinates, `data` its values.
  auto context = [&] { return fmt::format("updating {}", ShardName(block)); };
  const Box shard_box = grid_.BlockBox(block);
  STRATA_ASSIGN_OR_RETURN(std::optional<Buffer> old, GetEncodedChunk(block, pool));
  std::optional<ShardIndex> old_index;
  if (old) {
    const int64_t n = shards_->index_bytes();
    if (old->size() < n) {
      return DataLossError(fmt::format("{}: the shard is {} bytes, too short for its {}-byte index",
                                       ShardName(block), old->size(), n));
    }
    std::span<const std::byte> all = old->span();
    STRATA_ASSIGN_OR_RETURN(
        ShardIndex index,
        shards_->DecodeIndex(shards_->spec().index_at_end ? all.last(static_cast<size_t>(n))
                                                          : all.first(static_cast<size_t>(n)),
                             old->size(), ShardName(block)));
    old_index = std::move(index);
  }
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<ShardWriter> writer, BeginShard(block, pool));
  STRATA_ASSIGN_OR_RETURN(NDArray chunk, NDArray::Allocate(pool, dtype(), shards_->inner_shape()));
  const Box clipped = Box::FromShape(shard_box.shape);
  const Box local_part = Translate(part, shard_box.origin);
  for (Index j = 0; j < shards_->inner_per_shard(); ++j) {
    const Box inner = shards_->InnerBox(j);
    if (Intersect(inner, clipped).empty()) continue;
    const Box touched = Intersect(inner, local_part);
    const ShardEntry* e = old_index ? &old_index->entry(j) : nullptr;
    const bool stored = e != nullptr && !e->missing();
    if (touched.empty()) {
      if (stored) STRATA_RETURN_IF_ERROR(writer->AddEncoded(j, old->span().subspan(e->offset, e->nbytes)));
      continue;
    }
    if (touched != inner) {
      // Partly written: the old values (or the fill value) around the new ones.
      if (stored) {
        STRATA_RETURN_IF_ERROR(codec_->Decode(old->span().subspan(e->offset, e->nbytes),
                                              chunk.view(), pool)
                                   .WithContext(context()));
      } else {
        FillArray(chunk.view(), metadata_.fill_value.bytes);
      }
    }
    CopyArray(data.Slice(Translate(touched, local_part.origin)),
              chunk.view().Slice(Translate(touched, inner.origin)));
    STRATA_RETURN_IF_ERROR(writer->Add(j, chunk.view()).WithContext(context()));
  }
  return FinishShard(block, *writer).WithContext(context());
}

}  // namespace strata
