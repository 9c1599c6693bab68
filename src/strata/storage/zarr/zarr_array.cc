#include "strata/storage/zarr/zarr_array.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

namespace strata {
namespace {

using json = nlohmann::json;

// The marker holds the metadata documents the array will have once complete.
std::string EncodeMarker(const ArrayMetadata& metadata) {
  json docs = json::object();
  for (const auto& [key, text] : metadata.Encode()) docs[key] = text;
  json marker = {{"strata_incomplete", 1}, {"documents", docs}};
  return marker.dump(2);
}

Result<ArrayMetadata> DecodeMarker(std::string_view text, const std::string& where) {
  auto bad = [&] {
    return InvalidArgumentError(fmt::format("malformed incomplete-array marker {}", where));
  };
  json marker = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!marker.is_object() || !marker.contains("documents") || !marker["documents"].is_object()) {
    return bad();
  }
  const json& docs = marker["documents"];
  auto get = [&](std::string_view key) -> std::string {
    auto it = docs.find(std::string(key));
    return it != docs.end() && it->is_string() ? it->get<std::string>() : std::string();
  };
  if (docs.contains(std::string(kZarrJsonKey))) return ParseZarrV3ArrayMetadata(get(kZarrJsonKey));
  if (docs.contains(std::string(kZarrayKey))) {
    return ParseZarrV2ArrayMetadata(get(kZarrayKey), get(kZattrsKey));
  }
  return bad();
}

Result<std::optional<std::string>> GetOptionalString(Store& store, const std::string& key) {
  Result<std::string> text = store.GetString(key);
  if (!text.ok()) {
    if (IsNotFound(text.status())) return std::optional<std::string>();
    return text.status();
  }
  return std::optional<std::string>(std::move(text).value());
}

std::string NodeUrl(const Store& store, const std::string& path) {
  return path.empty() ? store.url() : JoinKey(store.url(), path);
}

}  // namespace

Result<NodeInfo> InspectNode(Store& store, const std::string& path) {
  std::string where = NodeUrl(store, path);
  STRATA_ASSIGN_OR_RETURN(std::optional<std::string> v3,
                          GetOptionalString(store, JoinKey(path, kZarrJsonKey)));
  if (v3) {
    json doc = json::parse(*v3, nullptr, false);
    if (doc.is_object() && doc.value("node_type", "") == "group") {
      STRATA_RETURN_IF_ERROR(
          ParseZarrV3GroupMetadata(*v3).status().WithContext(fmt::format("reading {}", where)));
      return NodeInfo{NodeInfo::Kind::kGroup, ZarrFormat::kV3, std::nullopt};
    }
    Result<ArrayMetadata> m = ParseZarrV3ArrayMetadata(*v3);
    if (!m.ok()) return m.status().WithContext(fmt::format("reading {}/zarr.json", where));
    return NodeInfo{NodeInfo::Kind::kArray, ZarrFormat::kV3, std::move(m).value()};
  }
  STRATA_ASSIGN_OR_RETURN(std::optional<std::string> zarray,
                          GetOptionalString(store, JoinKey(path, kZarrayKey)));
  if (zarray) {
    STRATA_ASSIGN_OR_RETURN(std::optional<std::string> zattrs,
                            GetOptionalString(store, JoinKey(path, kZattrsKey)));
    Result<ArrayMetadata> m = ParseZarrV2ArrayMetadata(*zarray, zattrs.value_or(""));
    if (!m.ok()) return m.status().WithContext(fmt::format("reading {}/.zarray", where));
    return NodeInfo{NodeInfo::Kind::kArray, ZarrFormat::kV2, std::move(m).value()};
  }
  STRATA_ASSIGN_OR_RETURN(std::optional<std::string> zgroup,
                          GetOptionalString(store, JoinKey(path, kZgroupKey)));
  if (zgroup) {
    STRATA_ASSIGN_OR_RETURN(std::optional<std::string> zattrs,
                            GetOptionalString(store, JoinKey(path, kZattrsKey)));
    STRATA_RETURN_IF_ERROR(ParseZarrV2GroupMetadata(*zgroup, zattrs.value_or(""))
                               .status()
                               .WithContext(fmt::format("reading {}/.zgroup", where)));
    return NodeInfo{NodeInfo::Kind::kGroup, ZarrFormat::kV2, std::nullopt};
  }
  STRATA_ASSIGN_OR_RETURN(std::optional<std::string> marker,
                          GetOptionalString(store, JoinKey(path, kIncompleteMarkerKey)));
  if (marker) {
    STRATA_ASSIGN_OR_RETURN(ArrayMetadata m, DecodeMarker(*marker, where));
    ZarrFormat format = m.zarr_format;
    return NodeInfo{NodeInfo::Kind::kIncompleteArray, format, std::move(m)};
  }
  return NotFoundError(fmt::format("no Zarr array or group at {}", where));
}

Result<std::shared_ptr<ZarrArray>> ZarrArray::Make(std::shared_ptr<Store> store, std::string path,
                                                   ArrayMetadata metadata) {
  STRATA_RETURN_IF_ERROR(metadata.Validate());
  STRATA_ASSIGN_OR_RETURN(ChunkGrid grid, ChunkGrid::Regular(metadata.shape, metadata.chunk_shape));
  STRATA_ASSIGN_OR_RETURN(std::shared_ptr<const ChunkCodec> codec,
                          ChunkCodec::Make(metadata.encoding, metadata.chunk_shape));
  return std::shared_ptr<ZarrArray>(new ZarrArray(std::move(store), std::move(path),
                                                  std::move(metadata), std::move(grid),
                                                  std::move(codec)));
}

Result<std::shared_ptr<ZarrArray>> ZarrArray::Open(std::shared_ptr<Store> store, std::string path) {
  STRATA_ASSIGN_OR_RETURN(NodeInfo node, InspectNode(*store, path));
  std::string where = NodeUrl(*store, path);
  switch (node.kind) {
    case NodeInfo::Kind::kGroup:
      return FailedPreconditionError(fmt::format("{} is a Zarr group, not an array", where));
    case NodeInfo::Kind::kIncompleteArray:
      return FailedPreconditionError(fmt::format(
          "{} is incomplete: a strata run writing it was interrupted (re-run it to finish, or "
          "delete it)",
          where));
    case NodeInfo::Kind::kArray:
      break;
  }
  Result<std::shared_ptr<ZarrArray>> array =
      Make(std::move(store), std::move(path), std::move(*node.array));
  if (!array.ok()) return array.status().WithContext(fmt::format("opening {}", where));
  return array;
}

Result<std::shared_ptr<ZarrArray>> ZarrArray::Create(std::shared_ptr<Store> store,
                                                     std::string path, ArrayMetadata metadata,
                                                     CreateOptions options) {
  std::string where = NodeUrl(*store, path);
  std::string prefix = path.empty() ? std::string() : path + "/";
  Result<NodeInfo> existing = InspectNode(*store, path);
  bool resume = false;
  bool erase_old = false;
  if (existing.ok()) {
    bool incomplete = existing->kind == NodeInfo::Kind::kIncompleteArray;
    if (incomplete && options.deferred_metadata &&
        existing->array->Encode() == metadata.Encode()) {
      resume = true;  // finish what an interrupted run started
    } else if (!options.overwrite) {
      const char* what = existing->kind == NodeInfo::Kind::kGroup ? "a Zarr group"
                         : incomplete ? "an incomplete array with different metadata"
                                      : "a Zarr array";
      return AlreadyExistsError(
          fmt::format("{} already holds {} (pass --overwrite to replace it)", where, what));
    } else {
      erase_old = true;
    }
  } else if (IsNotFound(existing.status())) {
    // Never write into (or wipe) a directory of unrelated files.
    STRATA_ASSIGN_OR_RETURN(std::vector<std::string> keys, store->List(prefix));
    if (!keys.empty()) {
      return FailedPreconditionError(fmt::format(
          "{} is not empty and holds no Zarr array (found '{}'); refusing to write there", where,
          keys.front()));
    }
  } else if (options.overwrite) {
    erase_old = true;  // a Zarr node with unreadable metadata, replaced on request
  } else {
    return existing.status().WithContext(
        fmt::format("{} already holds a Zarr node that cannot be read", where));
  }
  if (erase_old) {
    if (prefix.empty()) {
      STRATA_ASSIGN_OR_RETURN(std::vector<std::string> keys, store->List(""));
      for (const std::string& key : keys) STRATA_RETURN_IF_ERROR(store->Erase(key));
    } else {
      STRATA_RETURN_IF_ERROR(store->ErasePrefix(prefix));
    }
  }
  STRATA_ASSIGN_OR_RETURN(std::shared_ptr<ZarrArray> array,
                          Make(store, path, std::move(metadata)));
  if (options.deferred_metadata) {
    if (!resume) {
      STRATA_RETURN_IF_ERROR(store->Set(array->Key(kIncompleteMarkerKey),
                                        EncodeMarker(array->metadata_))
                                 .WithContext(fmt::format("creating {}", where)));
    }
  } else {
    STRATA_RETURN_IF_ERROR(array->Commit());
  }
  return array;
}

Status ZarrArray::Commit() {
  for (const auto& [key, text] : metadata_.Encode()) {
    STRATA_RETURN_IF_ERROR(store_->Set(Key(key), text).WithContext(
        fmt::format("writing metadata of {}", url())));
  }
  return store_->Erase(Key(kIncompleteMarkerKey));
}

std::string ZarrArray::url() const { return NodeUrl(*store_, path_); }

std::string ZarrArray::ChunkName(std::span<const Index> block) const {
  return metadata_.ChunkKey(block);
}

std::string ZarrArray::ChunkStoreKey(std::span<const Index> block) const {
  return Key(ChunkName(block));
}

Status ZarrArray::ReadFullChunk(std::span<const Index> block, const ArrayView& out,
                                MemoryPool& pool, bool* present) const {
  const std::string key = ChunkStoreKey(block);
  *present = true;
  if (codec_->is_identity() && out.is_contiguous()) {
    Status s = store_->GetInto(key, out.bytes());
    if (IsNotFound(s)) {
      *present = false;
      FillArray(out, metadata_.fill_value.bytes);
      return Status::Ok();
    }
    return s;
  }
  Result<Buffer> encoded = store_->Get(key, pool);
  if (!encoded.ok()) {
    if (IsNotFound(encoded.status())) {
      *present = false;
      FillArray(out, metadata_.fill_value.bytes);
      return Status::Ok();
    }
    return encoded.status();
  }
  return codec_->Decode(encoded->span(), out, pool);
}

Result<bool> ZarrArray::ReadChunk(std::span<const Index> block, const ArrayView& out,
                                  MemoryPool& pool) const {
  Shape block_shape = grid_.BlockShape(block);
  STRATA_CHECK(out.shape() == block_shape)
      << "ReadChunk into " << ShapeToString(out.shape()) << " for block of "
      << ShapeToString(block_shape);
  bool present = false;
  Status s;
  if (block_shape == metadata_.chunk_shape) {
    s = ReadFullChunk(block, out, pool, &present);
  } else {
    // An edge chunk: stored at the full chunk shape, of which we want a corner.
    Result<NDArray> full = NDArray::Allocate(pool, dtype(), metadata_.chunk_shape);
    if (!full.ok()) {
      s = full.status();
    } else {
      s = ReadFullChunk(block, full->view(), pool, &present);
      if (s.ok()) CopyArray(full->view().Slice(Box::FromShape(block_shape)), out);
    }
  }
  if (!s.ok()) {
    return s.WithContext(fmt::format("reading chunk {} of {}", JoinIndices(block, '.'), url()));
  }
  return present;
}

Status ZarrArray::WriteChunk(std::span<const Index> block, const ConstArrayView& data,
                             MemoryPool& pool) const {
  Shape block_shape = grid_.BlockShape(block);
  STRATA_CHECK(data.shape() == block_shape)
      << "WriteChunk of " << ShapeToString(data.shape()) << " for block of "
      << ShapeToString(block_shape);
  auto context = [&] { return fmt::format("writing chunk {} of {}", JoinIndices(block, '.'), url()); };
  if (block_shape == metadata_.chunk_shape) {
    if (codec_->is_identity() && data.is_contiguous()) {
      return store_->Set(ChunkStoreKey(block), data.bytes()).WithContext(context());
    }
    Result<Buffer> encoded = codec_->Encode(data, pool);
    if (!encoded.ok()) return encoded.status().WithContext(context());
    return store_->Set(ChunkStoreKey(block), encoded->span()).WithContext(context());
  }
  // Edge chunk: pad to the full chunk shape with the fill value.
  Result<NDArray> full = NDArray::Allocate(pool, dtype(), metadata_.chunk_shape);
  if (!full.ok()) return full.status().WithContext(context());
  FillArray(full->view(), metadata_.fill_value.bytes);
  CopyArray(data, full->view().Slice(Box::FromShape(block_shape)));
  Result<Buffer> encoded = codec_->Encode(full->view(), pool);
  if (!encoded.ok()) return encoded.status().WithContext(context());
  return store_->Set(ChunkStoreKey(block), encoded->span()).WithContext(context());
}

Status ZarrArray::WriteEncodedChunk(std::span<const Index> block,
                                    std::span<const std::byte> encoded) const {
  return store_->Set(ChunkStoreKey(block), encoded)
      .WithContext(fmt::format("writing chunk {} of {}", JoinIndices(block, '.'), url()));
}

Status ZarrArray::EraseChunk(std::span<const Index> block) const {
  return store_->Erase(ChunkStoreKey(block));
}

Status ZarrArray::ForEachBlockIn(
    const Box& region,
    const std::function<Status(std::span<const Index> block, const Box& block_box,
                               const Box& part)>& fn) const {
  if (!Box::FromShape(shape()).Contains(region)) {
    return OutOfRangeError(fmt::format("region {} is outside {} of shape {}", region.ToString(),
                                       url(), ShapeToString(shape())));
  }
  if (region.empty()) return Status::Ok();
  Shape first, last;
  grid_.BlockRangeOf(region, first, last);
  Shape block = first;
  do {
    Box block_box = grid_.BlockBox(block);
    STRATA_RETURN_IF_ERROR(fn(block, block_box, Intersect(block_box, region)));
  } while (NextIndexInRange(block, first, last));
  return Status::Ok();
}

Status ZarrArray::ReadRegion(const Box& region, const ArrayView& out, MemoryPool& pool) const {
  STRATA_CHECK(out.shape() == region.shape);
  return ForEachBlockIn(region, [&](std::span<const Index> block, const Box& block_box,
                                    const Box& part) -> Status {
    ArrayView dst = out.Slice(Translate(part, region.origin));
    if (part == block_box) return ReadChunk(block, dst, pool).status();
    STRATA_ASSIGN_OR_RETURN(NDArray chunk, NDArray::Allocate(pool, dtype(), block_box.shape));
    STRATA_RETURN_IF_ERROR(ReadChunk(block, chunk.view(), pool).status());
    CopyArray(chunk.view().Slice(Translate(part, block_box.origin)), dst);
    return Status::Ok();
  });
}

Status ZarrArray::WriteRegion(const Box& region, const ConstArrayView& data,
                              MemoryPool& pool) const {
  STRATA_CHECK(data.shape() == region.shape);
  return ForEachBlockIn(region, [&](std::span<const Index> block, const Box& block_box,
                                    const Box& part) -> Status {
    ConstArrayView src = data.Slice(Translate(part, region.origin));
    if (part == block_box) return WriteChunk(block, src, pool);
    // A partly covered chunk: read, update, rewrite.
    STRATA_ASSIGN_OR_RETURN(NDArray chunk, NDArray::Allocate(pool, dtype(), block_box.shape));
    STRATA_RETURN_IF_ERROR(ReadChunk(block, chunk.view(), pool).status());
    CopyArray(src, chunk.view().Slice(Translate(part, block_box.origin)));
    return WriteChunk(block, chunk.view(), pool);
  });
}

Result<ZarrArray::StoredChunks> ZarrArray::CountStoredChunks() const {
  std::string prefix = path_.empty() ? std::string() : path_ + "/";
  STRATA_ASSIGN_OR_RETURN(std::vector<std::string> keys, store_->List(prefix));
  StoredChunks out;
  Shape block;
  for (const std::string& key : keys) {
    std::string_view relative = std::string_view(key).substr(prefix.size());
    if (!metadata_.ParseChunkKey(relative, block)) continue;
    bool in_grid = static_cast<int>(block.size()) == grid_.rank();
    for (int i = 0; in_grid && i < grid_.rank(); ++i) {
      in_grid = block[i] >= 0 && block[i] < grid_.grid_shape()[i];
    }
    if (!in_grid) continue;
    STRATA_ASSIGN_OR_RETURN(std::optional<int64_t> size, store_->Size(key));
    if (!size) continue;
    ++out.count;
    out.bytes += *size;
  }
  return out;
}

}  // namespace strata
