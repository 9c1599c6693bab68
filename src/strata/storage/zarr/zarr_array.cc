#include "strata/storage/zarr/zarr_array.h"

#include <fmt/format.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstring>
#include <functional>
#include <mutex>
#include <nlohmann/json.hpp>
#include <random>

#include "strata/base/process_info.h"
#include "strata/core/checked_index.h"
#include "strata/storage/local_store.h"
#include "strata/storage/zarr/json_util.h"

#include "strata/storage/zarr/zarr_array_internal.h"

namespace strata {

using internal_zarr::CountZarrBytesRead;
using internal_zarr::DecodeMarker;
using internal_zarr::GetOptionalString;
using internal_zarr::NodeUrl;
using internal_zarr::ReadThroughTemporary;

namespace {


using json = nlohmann::json;

thread_local int64_t zarr_bytes_read = 0;

// The marker holds the metadata documents the array will have once complete.
std::string EncodeMarker(const ArrayMetadata& metadata) {
  json docs = json::object();
  for (const auto& [key, text] : metadata.Encode()) docs[key] = text;
  json marker = {{"strata_incomplete", 1}, {"documents", docs}};
  return marker.dump(2);
}

// True when every element of `src` has exactly the bytes of `element`.
bool AllElementsAre(const ConstArrayView& src, std::span<const std::byte> element) {
  const int esize = src.dtype().size();
  const Index n = src.num_elements();
  if (n == 0) return true;
  if (src.is_contiguous()) {
    const std::byte* p = src.data();
    if (std::memcmp(p, element.data(), esize) != 0) return false;
    // Each element equals the next one: all equal the first.
    return n == 1 || std::memcmp(p, p + esize, static_cast<size_t>((n - 1) * esize)) == 0;
  }
  Shape idx(src.rank(), 0);
  do {
    if (std::memcmp(src.ElementPointer(idx), element.data(), esize) != 0) return false;
  } while (NextIndex(idx, src.shape()));
  return true;
}

}  // namespace

namespace internal_zarr {

void CountZarrBytesRead(int64_t bytes) { zarr_bytes_read += bytes; }

Result<ArrayMetadata> DecodeMarker(std::string_view text, const std::string& where) {
  auto bad = [&] {
    return InvalidArgumentError(fmt::format("malformed incomplete-array marker {}", where));
  };
  Result<nlohmann::ordered_json> parsed =
      internal_zarr::ParseLimitedJson(text, JoinKey(where, kIncompleteMarkerKey));
  if (!parsed.ok()) return parsed.status();
  const nlohmann::ordered_json& marker = *parsed;
  if (!marker.is_object() || !marker.contains("documents") || !marker["documents"].is_object()) {
    return bad();
  }
  const nlohmann::ordered_json& docs = marker["documents"];
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

// True for a key (relative to a node) spelled as a chunk key of some array:

Result<bool> ReadThroughTemporary(MemoryPool& pool, DType dtype, const Shape& shape,
                                  const Box& part, const ArrayView& out,
                                  const std::function<Result<bool>(const ArrayView&)>& read_whole) {
  STRATA_ASSIGN_OR_RETURN(NDArray whole, NDArray::Allocate(pool, dtype, shape));
  STRATA_ASSIGN_OR_RETURN(bool present, read_whole(whole.view()));
  CopyArray(whole.view().Slice(part), out);
  return present;
}


}  // namespace internal_zarr

Result<std::shared_ptr<ZarrArray>> ZarrArray::Make(std::shared_ptr<Store> store, std::string path,
                                                   ArrayMetadata metadata) {
  STRATA_RETURN_IF_ERROR(metadata.Validate());
  STRATA_ASSIGN_OR_RETURN(ChunkGrid grid, ChunkGrid::Regular(metadata.shape, metadata.chunk_shape));
  STRATA_ASSIGN_OR_RETURN(ChunkGrid read_grid,
                          ChunkGrid::Regular(metadata.shape, metadata.read_chunk_shape()));
  std::shared_ptr<const ShardLayout> shards;
  if (metadata.sharding) {
    STRATA_ASSIGN_OR_RETURN(shards, ShardLayout::Make(metadata));
  }
  STRATA_ASSIGN_OR_RETURN(
      std::shared_ptr<const ChunkCodec> codec,
      ChunkCodec::Make(metadata.read_chunk_encoding(), metadata.read_chunk_shape()));
  return std::shared_ptr<ZarrArray>(new ZarrArray(std::move(store), std::move(path),
                                                  std::move(metadata), std::move(grid),
                                                  std::move(read_grid), std::move(codec),
                                                  std::move(shards)));
}

Result<std::shared_ptr<ZarrArray>> ZarrArray::Open(std::shared_ptr<Store> store, std::string path) {
  // The metadata is read between two equal versions of it, so that what
  // this run checks at the end (CheckUnchanged) is the version of the
  // metadata it read. A rewriter erases the metadata first: read just before
  // it went, the array would otherwise be taken with no version at all, and
  // every chunk its rewrite erased would read as the fill value, unnoticed.
  std::string where = NodeUrl(*store, path);
  constexpr int kAttempts = 3;
  for (int attempt = 0;; ++attempt) {
    STRATA_ASSIGN_OR_RETURN(NodeInfo node, InspectNode(*store, path));
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
    const std::string metadata_key =
        JoinKey(path, node.zarr_format == ZarrFormat::kV3 ? kZarrJsonKey : kZarrayKey);
    Result<std::optional<std::string>> version = store->Version(metadata_key);
    if (!version.ok()) return version.status().WithContext(fmt::format("opening {}", where));
    if (*version) {
      // Read again under that version: equal before and after, what was read
      // is that version's.
      STRATA_ASSIGN_OR_RETURN(NodeInfo again, InspectNode(*store, path));
      Result<std::optional<std::string>> after = store->Version(metadata_key);
      if (!after.ok()) return after.status().WithContext(fmt::format("opening {}", where));
      if (again.kind == NodeInfo::Kind::kArray && again.zarr_format == node.zarr_format &&
          *after == *version) {
        Result<std::shared_ptr<ZarrArray>> array =
            Make(std::move(store), std::move(path), std::move(*again.array));
        if (!array.ok()) return array.status().WithContext(fmt::format("opening {}", where));
        (*array)->metadata_key_ = metadata_key;
        (*array)->metadata_version_ = std::move(version).value();
        return array;
      }
    }
    if (attempt + 1 == kAttempts) {
      return FailedPreconditionError(fmt::format(
          "{} was rewritten while this run read it (another writer is rewriting it?): its "
          "metadata changed {} times while it was opened; run again once it is complete",
          where, kAttempts));
    }
  }
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
    STRATA_RETURN_IF_ERROR(EraseZarrNode(*store, prefix, existing.ok() ? &*existing : nullptr)
                               .WithContext(fmt::format("replacing {}", where)));
  }
  // What a killed writer of this node left (temporary files) goes now, so
  // that the finished array holds none.
  STRATA_RETURN_IF_ERROR(store->ReclaimTempFiles(prefix).WithContext(
      fmt::format("removing what an interrupted run left in {}", where)));
  STRATA_ASSIGN_OR_RETURN(std::shared_ptr<ZarrArray> array,
                          Make(store, path, std::move(metadata)));
  array->fresh_ = !resume;
  array->metadata_pending_ = true;
  array->resumed_ = resume;
  if (options.deferred_metadata) {
    array->fill_journal_ = std::make_shared<FillJournal>();
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

Result<std::shared_ptr<ZarrArray>> ZarrArray::OpenForAppend(std::shared_ptr<Store> store,
                                                            std::string path, int axis,
                                                            Index new_extent) {
  STRATA_ASSIGN_OR_RETURN(std::shared_ptr<ZarrArray> old, Open(store, path));
  ArrayMetadata m = old->metadata();
  if (axis < 0 || axis >= m.rank()) {
    return InvalidArgumentError(fmt::format("append axis {} is out of range for {} of rank {}",
                                            axis, old->url(), m.rank()));
  }
  if (new_extent < m.shape[axis]) {
    return InvalidArgumentError(fmt::format("appending to {} cannot shrink axis {} from {} to {}",
                                            old->url(), axis, m.shape[axis], new_extent));
  }
  m.shape[axis] = new_extent;
  STRATA_ASSIGN_OR_RETURN(std::shared_ptr<ZarrArray> grown,
                          Make(std::move(store), std::move(path), std::move(m)));
  grown->metadata_pending_ = true;
  return grown;
}

Result<std::vector<Index>> ZarrArray::StoredChunkIndices() const {
  std::string prefix = path_.empty() ? std::string() : path_ + "/";
  STRATA_ASSIGN_OR_RETURN(std::vector<std::string> keys, store_->List(prefix));
  std::vector<Index> out;
  Shape block;
  for (const std::string& key : keys) {
    std::string_view relative = std::string_view(key).substr(prefix.size());
    if (relative.starts_with(kFillJournalPrefix)) {
      STRATA_ASSIGN_OR_RETURN(std::string text, store_->GetString(key));
      ReadFillJournal(text, grid_.num_blocks(), out);
      continue;
    }
    if (!metadata_.ParseChunkKey(relative, block)) continue;
    bool in_grid = static_cast<int>(block.size()) == grid_.rank();
    for (int i = 0; in_grid && i < grid_.rank(); ++i) {
      in_grid = block[i] >= 0 && block[i] < grid_.grid_shape()[i];
    }
    if (in_grid) out.push_back(LinearIndex(block, grid_.grid_shape()));
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}


Status ZarrArray::ReclaimDeadWritersFiles() const {
  return store_->ReclaimTempFiles(path_.empty() ? std::string() : path_ + "/")
      .WithContext(fmt::format("removing what dead writers left in {}", url()));
}

Status ZarrArray::Commit() {
  // Every chunk is written: what a writer killed during this run (a worker
  // process, its task retried elsewhere) left goes before the array is
  // finished, as Create removed what earlier runs left.
  STRATA_RETURN_IF_ERROR(ReclaimDeadWritersFiles());
  if (!metadata_pending_) return Status::Ok();
  if (fill_journal_) {
    // The journal goes before the metadata comes: killed in between, the
    // array is still incomplete, and a rerun only writes its fill chunks'
    // tasks again.
    {
      MutexLock lock(&fill_journal_->mu);
      fill_journal_->closed = true;
      fill_journal_->pending.clear();
    }
    STRATA_RETURN_IF_ERROR(store_->ErasePrefix(Key(kFillJournalPrefix))
                               .WithContext(fmt::format("finishing {}", url())));
  }
  for (const auto& [key, text] : metadata_.Encode()) {
    STRATA_RETURN_IF_ERROR(store_->Set(Key(key), text).WithContext(
        fmt::format("writing metadata of {}", url())));
  }
  return store_->Erase(Key(kIncompleteMarkerKey));
}

std::string ZarrArray::url() const { return NodeUrl(*store_, path_); }

Status ZarrArray::CheckUnchanged() const {
  if (metadata_key_.empty()) return Status::Ok();
  STRATA_ASSIGN_OR_RETURN(std::optional<std::string> now, store_->Version(metadata_key_));
  if (now == metadata_version_) return Status::Ok();
  return FailedPreconditionError(fmt::format(
      "{} was {} while this run read it (another writer is rewriting it?); what was read may mix "
      "old and new data, so nothing is finished: run again once it is complete",
      url(), now ? "replaced" : "removed"));
}

std::string ZarrArray::ChunkName(std::span<const Index> block) const {
  return metadata_.ChunkKey(block);
}

std::string ZarrArray::ChunkStoreKey(std::span<const Index> block) const {
  return Key(ChunkName(block));
}

Status ZarrArray::CheckMissingChunk() const {
  // A chunk a concurrent rewrite deleted reads as missing: when the metadata
  // went or changed too, say so now rather than fill. At most one check per
  // 100 ms (a sparse array has many missing chunks); the end of the run
  // checks again in any case.
  if (metadata_key_.empty()) return Status::Ok();
  const int64_t now = std::chrono::duration_cast<std::chrono::nanoseconds>(
                          std::chrono::steady_clock::now().time_since_epoch())
                          .count();
  int64_t last = last_missing_check_.load(std::memory_order_relaxed);
  if (now - last < 100'000'000 ||
      !last_missing_check_.compare_exchange_strong(last, now, std::memory_order_relaxed)) {
    return Status::Ok();
  }
  return CheckUnchanged();
}

int64_t ThreadZarrBytesRead() { return zarr_bytes_read; }

Status ZarrArray::ReadFullChunk(std::span<const Index> block, const ArrayView& out,
                                MemoryPool& pool, bool* present) const {
  const std::string key = ChunkStoreKey(block);
  *present = true;
  if (codec_->is_identity() && out.is_contiguous()) {
    Status s = store_->GetInto(key, out.bytes());
    if (IsNotFound(s)) {
      *present = false;
      FillArray(out, metadata_.fill_value.bytes);
      return CheckMissingChunk();
    }
    if (s.ok()) CountZarrBytesRead(static_cast<int64_t>(out.bytes().size()));
    return s;
  }
  Result<Buffer> encoded = store_->Get(key, pool);
  if (!encoded.ok()) {
    if (IsNotFound(encoded.status())) {
      *present = false;
      FillArray(out, metadata_.fill_value.bytes);
      return CheckMissingChunk();
    }
    return encoded.status();
  }
  CountZarrBytesRead(encoded->size());
  return codec_->Decode(encoded->span(), out, pool);
}

Result<bool> ZarrArray::ReadChunk(std::span<const Index> block, const ArrayView& out,
                                  MemoryPool& pool) const {
  if (shards_) return ReadShard(block, out, pool);
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
  if (shards_) return WriteShard(block, data, pool);
  Shape block_shape = grid_.BlockShape(block);
  STRATA_CHECK(data.shape() == block_shape)
      << "WriteChunk of " << ShapeToString(data.shape()) << " for block of "
      << ShapeToString(block_shape);
  auto context = [&] { return fmt::format("writing chunk {} of {}", JoinIndices(block, '.'), url()); };
  if (IsFillChunk(data)) {
    STRATA_RETURN_IF_ERROR(EraseChunk(block).WithContext(context()));
    return NoteFillChunk(block);
  }
  if (block_shape == metadata_.chunk_shape) {
    if (codec_->is_identity() && data.is_contiguous()) {
      return store_->Set(ChunkStoreKey(block), data.bytes()).WithContext(context());
    }
    return EncodeAndStore(ChunkStoreKey(block), data, pool).WithContext(context());
  }
  // Edge chunk: pad to the full chunk shape with the fill value.
  Result<NDArray> full = NDArray::Allocate(pool, dtype(), metadata_.chunk_shape);
  if (!full.ok()) return full.status().WithContext(context());
  FillArray(full->view(), metadata_.fill_value.bytes);
  CopyArray(data, full->view().Slice(Box::FromShape(block_shape)));
  return EncodeAndStore(ChunkStoreKey(block), full->view(), pool).WithContext(context());
}

namespace {

// Chunks at least this large are encoded piece by piece into a store
// writer that holds no buffer (a local file) where the codec can: a task
// writing a 200 MB blosc chunk held its ~200 MB encoding beside it.
constexpr int64_t kStreamedWriteBytes = int64_t{16} << 20;

// A store writer as a codec's sink.
class WriterSink final : public EncodedSink {
 public:
  explicit WriterSink(StoreWriter& writer) : writer_(writer) {}
  Status Append(std::span<const std::byte> bytes) override { return writer_.Append(bytes); }
  Status PatchAt(int64_t offset, std::span<const std::byte> bytes) override {
    return writer_.PatchAt(offset, bytes);
  }

 private:
  StoreWriter& writer_;
};

}  // namespace

Status ZarrArray::EncodeAndStore(const std::string& key, const ConstArrayView& chunk,
                                 MemoryPool& pool) const {
  if (codec_->encodes_streamed() && chunk.is_contiguous() &&
      codec_->chunk_bytes() >= kStreamedWriteBytes &&
      store_->WriterMemory(codec_->max_streamed_bytes()) == 0) {
    STRATA_ASSIGN_OR_RETURN(std::unique_ptr<StoreWriter> writer,
                            store_->OpenWriter(key, codec_->max_streamed_bytes(), pool));
    WriterSink sink(*writer);
    Status s = codec_->EncodeTo(chunk, sink, pool);
    if (s.ok()) return writer->Commit();
    // Not streamed: the writer is discarded (nothing appears under `key`).
    writer.reset();
    if (s.code() != StatusCode::kFailedPrecondition) return s;
  }
  STRATA_ASSIGN_OR_RETURN(Buffer encoded, codec_->Encode(chunk, pool));
  return store_->Set(key, encoded.span());
}

Status ZarrArray::WriteEncodedChunk(std::span<const Index> block,
                                    std::span<const std::byte> encoded) const {
  if (shards_) ForgetShardIndex(block);
  return store_->Set(ChunkStoreKey(block), encoded)
      .WithContext(fmt::format("writing chunk {} of {}", JoinIndices(block, '.'), url()));
}

Result<std::optional<Buffer>> ZarrArray::GetEncodedChunk(std::span<const Index> block,
                                                         MemoryPool& pool) const {
  Result<Buffer> bytes = store_->Get(ChunkStoreKey(block), pool);
  if (!bytes.ok()) {
    if (IsNotFound(bytes.status())) return std::optional<Buffer>();
    return bytes.status().WithContext(
        fmt::format("reading chunk {} of {}", JoinIndices(block, '.'), url()));
  }
  return std::optional<Buffer>(std::move(bytes).value());
}

Status ZarrArray::EraseChunk(std::span<const Index> block) const {
  if (shards_) ForgetShardIndex(block);
  if (fresh_) return Status::Ok();
  return store_->Erase(ChunkStoreKey(block));
}

bool ZarrArray::IsFillChunk(const ConstArrayView& data) const {
  if (metadata_.fill_value.is_null) return false;
  return AllElementsAre(data, metadata_.fill_value.bytes);
}


Status ZarrArray::ForEachBlockIn(
    const Box& region,
    const std::function<Status(std::span<const Index> block, const Box& block_box,
                               const Box& part)>& fn) const {
  STRATA_RETURN_IF_ERROR(CheckBox(region, fmt::format("region of {}", url())));
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
  if (shards_) {
    // Inner chunk by inner chunk: only those the region touches are read.
    STRATA_RETURN_IF_ERROR(CheckBox(region, fmt::format("region of {}", url())));
    if (!Box::FromShape(shape()).Contains(region)) {
      return OutOfRangeError(fmt::format("region {} is outside {} of shape {}", region.ToString(),
                                         url(), ShapeToString(shape())));
    }
    if (region.empty()) return Status::Ok();
    Shape first, last;
    read_grid_.BlockRangeOf(region, first, last);
    Shape block = first;
    do {
      const Box box = read_grid_.BlockBox(block);
      const Box part = Intersect(box, region);
      ArrayView dst = out.Slice(Translate(part, region.origin));
      if (part == box) {
        STRATA_RETURN_IF_ERROR(ReadBlock(block, dst, pool).status());
      } else {
        STRATA_RETURN_IF_ERROR(ReadInnerPart(block, part, dst, pool).status());
      }
    } while (NextIndexInRange(block, first, last));
    return Status::Ok();
  }
  return ForEachBlockIn(region, [&](std::span<const Index> block, const Box& /*block_box*/,
                                    const Box& part) -> Status {
    // A part that is the whole chunk is read whole.
    return ReadChunkPart(block, part, out.Slice(Translate(part, region.origin)), pool).status();
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
