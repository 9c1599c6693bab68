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
#include "strata/storage/zarr/json_util.h"

namespace strata {
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
// "0.1", "0/1", "c/0/1", "c.0.1", "0", "c".
bool LooksLikeChunkKey(std::string_view key) {
  if (key == "c") return true;
  if (key.size() > 2 && key[0] == 'c' && (key[1] == '/' || key[1] == '.')) key.remove_prefix(2);
  if (key.empty()) return false;
  bool digit = false;
  for (char ch : key) {
    if (ch >= '0' && ch <= '9') {
      digit = true;
    } else if ((ch == '.' || ch == '/') && digit) {
      digit = false;
    } else {
      return false;
    }
  }
  return digit;
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

// Reads a whole block of `shape` with `read_whole` into a temporary from
// `pool` and copies its `part` (block coordinates) to `out`: for a part the
// codec cannot decode on its own. Returns what `read_whole` returns.
Result<bool> ReadThroughTemporary(MemoryPool& pool, DType dtype, const Shape& shape,
                                  const Box& part, const ArrayView& out,
                                  const std::function<Result<bool>(const ArrayView&)>& read_whole) {
  STRATA_ASSIGN_OR_RETURN(NDArray whole, NDArray::Allocate(pool, dtype, shape));
  STRATA_ASSIGN_OR_RETURN(bool present, read_whole(whole.view()));
  CopyArray(whole.view().Slice(part), out);
  return present;
}

}  // namespace

// The fill journal of an incomplete array (see the header).
struct ZarrArray::FillJournal {
  FillJournal() : nonce(std::random_device{}()), last_write_ns(SteadyNanos()) {}
  static int64_t SteadyNanos() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
  }
  // With the writer's pid and start time (taken at each write: a forked
  // worker shares this object), names the journal's objects uniquely.
  const uint64_t nonce;
  std::atomic<int64_t> seq{0};
  std::mutex mu;
  std::vector<Index> pending;  // guarded by mu
  int64_t last_write_ns;       // guarded by mu
  bool closed = false;         // guarded by mu: Commit() removed the journal
};

Status EraseZarrNode(Store& store, const std::string& prefix, const NodeInfo* existing) {
  STRATA_ASSIGN_OR_RETURN(std::vector<std::string> keys, store.List(prefix));
  if (existing != nullptr && existing->kind == NodeInfo::Kind::kGroup) {
    // The group's documents, then each member (a child holding a Zarr node),
    // erased as that node is; a file that is no member's (a photo kept in
    // the group's directory) stays, as it does in an array's.
    for (std::string_view doc : {kZarrJsonKey, kZgroupKey, kZattrsKey, kZmetadataKey}) {
      STRATA_RETURN_IF_ERROR(store.Erase(prefix + std::string(doc)));
    }
    std::vector<std::string> children;
    for (const std::string& key : keys) {
      std::string_view relative = std::string_view(key).substr(prefix.size());
      const size_t slash = relative.find('/');
      if (slash == std::string_view::npos) continue;
      children.emplace_back(relative.substr(0, slash));
    }
    std::sort(children.begin(), children.end());
    children.erase(std::unique(children.begin(), children.end()), children.end());
    for (const std::string& child : children) {
      const std::string path = prefix + child;
      Result<NodeInfo> member = InspectNode(store, path);
      if (IsNotFound(member.status())) continue;  // not a member
      STRATA_RETURN_IF_ERROR(
          EraseZarrNode(store, path + "/", member.ok() ? &*member : nullptr));
    }
    return Status::Ok();
  }
  for (std::string_view doc : {kZarrJsonKey, kZarrayKey, kZattrsKey, kIncompleteMarkerKey}) {
    STRATA_RETURN_IF_ERROR(store.Erase(prefix + std::string(doc)));
  }
  STRATA_RETURN_IF_ERROR(store.ErasePrefix(prefix + std::string(kFillJournalPrefix)));
  Shape block;
  for (const std::string& key : keys) {
    std::string_view relative = std::string_view(key).substr(prefix.size());
    const bool chunk = existing != nullptr && existing->array
                           ? existing->array->ParseChunkKey(relative, block)
                           : LooksLikeChunkKey(relative);
    if (chunk) STRATA_RETURN_IF_ERROR(store.Erase(key));
  }
  return Status::Ok();
}

Result<NodeInfo> InspectNode(Store& store, const std::string& path) {
  std::string where = NodeUrl(store, path);
  STRATA_ASSIGN_OR_RETURN(std::optional<std::string> v3,
                          GetOptionalString(store, JoinKey(path, kZarrJsonKey)));
  if (v3) {
    // A group is told by its node_type; anything else (an array, or a
    // node_type of the wrong type) gets the array parser's error.
    Result<nlohmann::ordered_json> doc = internal_zarr::ParseLimitedJson(*v3, kZarrJsonKey);
    const nlohmann::ordered_json* node_type = nullptr;
    if (doc.ok() && doc->is_object()) {
      auto it = doc->find("node_type");
      if (it != doc->end()) node_type = &*it;
    }
    if (node_type != nullptr && node_type->is_string() &&
        node_type->get_ref<const std::string&>() == "group") {
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
  // The metadata's version before the metadata itself (InspectNode read it
  // just now): a rewrite between the two shows as a change at the end.
  const std::string metadata_key =
      JoinKey(path, node.zarr_format == ZarrFormat::kV3 ? kZarrJsonKey : kZarrayKey);
  Result<std::optional<std::string>> version = store->Version(metadata_key);
  if (!version.ok()) return version.status().WithContext(fmt::format("opening {}", where));
  Result<std::shared_ptr<ZarrArray>> array =
      Make(std::move(store), std::move(path), std::move(*node.array));
  if (!array.ok()) return array.status().WithContext(fmt::format("opening {}", where));
  (*array)->metadata_key_ = metadata_key;
  (*array)->metadata_version_ = std::move(version).value();
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

// ---------------------------------------------------------------------------
// The fill journal.

namespace {

constexpr size_t kFillJournalBatch = 4096;
constexpr int64_t kFillJournalSeconds = 1;

// "first count" lines, one per run of consecutive indices.
std::string EncodeFillJournal(std::vector<Index> indices) {
  std::sort(indices.begin(), indices.end());
  std::string text;
  for (size_t i = 0; i < indices.size();) {
    size_t j = i + 1;
    while (j < indices.size() && indices[j] <= indices[j - 1] + 1) ++j;
    text += fmt::format("{} {}\n", indices[i], indices[j - 1] - indices[i] + 1);
    i = j;
  }
  return text;
}

}  // namespace

void ZarrArray::ReadFillJournal(std::string_view text, Index num_blocks, std::vector<Index>& out) {
  // Written whole by one Set, so never torn; anything else that does not
  // parse is not trusted (its chunks are simply written again).
  std::vector<Index> got;
  while (!text.empty()) {
    const size_t eol = text.find('\n');
    if (eol == std::string_view::npos) return;
    std::string_view line = text.substr(0, eol);
    text.remove_prefix(eol + 1);
    Index first = 0, count = 0;
    const size_t space = line.find(' ');
    if (space == std::string_view::npos) return;
    auto [p1, e1] = std::from_chars(line.data(), line.data() + space, first);
    auto [p2, e2] = std::from_chars(line.data() + space + 1, line.data() + line.size(), count);
    if (e1 != std::errc() || e2 != std::errc() || p1 != line.data() + space ||
        p2 != line.data() + line.size() || first < 0 || count < 1 || first > num_blocks - count) {
      return;
    }
    for (Index k = 0; k < count; ++k) got.push_back(first + k);
  }
  out.insert(out.end(), got.begin(), got.end());
}

Status ZarrArray::WriteFillJournal(std::vector<Index> batch) const {
  if (batch.empty()) return Status::Ok();
  const std::string key =
      Key(fmt::format("{}{}-{}-{:016x}-{}", kFillJournalPrefix, ::getpid(), ThisProcessStartTime(),
                      fill_journal_->nonce, fill_journal_->seq.fetch_add(1)));
  return store_->Set(key, EncodeFillJournal(std::move(batch)))
      .WithContext(fmt::format("recording the fill chunks of {}", url()));
}

Status ZarrArray::NoteFillChunk(std::span<const Index> block) const {
  if (!fill_journal_) return Status::Ok();
  FillJournal& j = *fill_journal_;
  const int64_t now = FillJournal::SteadyNanos();
  std::vector<Index> batch;
  {
    std::lock_guard lock(j.mu);
    if (j.closed) return Status::Ok();
    j.pending.push_back(LinearIndex(block, grid_.grid_shape()));
    if (j.pending.size() < kFillJournalBatch &&
        now - j.last_write_ns < kFillJournalSeconds * 1'000'000'000) {
      return Status::Ok();
    }
    batch.swap(j.pending);
    j.last_write_ns = now;
  }
  return WriteFillJournal(std::move(batch));
}

Status ZarrArray::FlushFillJournal() const {
  if (!fill_journal_) return Status::Ok();
  std::vector<Index> batch;
  {
    std::lock_guard lock(fill_journal_->mu);
    if (fill_journal_->closed) return Status::Ok();
    batch.swap(fill_journal_->pending);
  }
  return WriteFillJournal(std::move(batch));
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
      std::lock_guard lock(fill_journal_->mu);
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
    if (s.ok()) zarr_bytes_read += static_cast<int64_t>(out.bytes().size());
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
  zarr_bytes_read += encoded->size();
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

// ---------------------------------------------------------------------------
// Sharded arrays.

std::string ZarrArray::ShardName(std::span<const Index> block) const {
  return fmt::format("shard {} of {}", ChunkName(block), url());
}

void ZarrArray::ForgetShardIndex(std::span<const Index> shard) const {
  const Index linear = LinearIndex(shard, grid_.grid_shape());
  std::lock_guard lock(index_mu_);
  std::erase_if(index_cache_, [&](const auto& e) { return e.first == linear; });
}

Result<std::shared_ptr<const ShardIndex>> ZarrArray::ShardIndexOf(
    std::span<const Index> shard) const {
  const Index linear = LinearIndex(shard, grid_.grid_shape());
  {
    std::lock_guard lock(index_mu_);
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
  std::lock_guard lock(index_mu_);
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

namespace {

// A whole chunk at least this big (decoded) is read in runs where ranged
// reads are cheap (ReadChunkPart).
constexpr int64_t kWholeChunkInRunsBytes = int64_t{8} << 20;

// A partial read of this many runs or more decodes the whole chunk instead
// (each run costs a record and a copy; so many means a scattered part).
constexpr Index kMaxPartRuns = Index{1} << 16;

// The C-order runs of `part` (chunk-local, inside a stored chunk of shape
// `stored`) and where each goes in `out`, whose innermost axis must be
// contiguous. Trailing axes that `part` covers whole merge into one run
// where `out` is contiguous across them too. Empty when there would be
// kMaxPartRuns runs or more.
std::vector<DecodedRun> PartRuns(const Shape& stored, const Box& part, const ArrayView& out) {
  const int rank = static_cast<int>(stored.size());
  const int64_t isz = out.dtype().size();
  std::vector<int64_t> chunk_strides(rank);
  int64_t stride = isz;
  for (int i = rank - 1; i >= 0; --i) {
    chunk_strides[i] = stride;
    stride *= stored[i];
  }
  int m = rank - 1;  // the run covers axes [m, rank)
  int64_t run = part.shape[m] * isz;
  while (m > 0 && part.shape[m] == stored[m] && out.byte_strides()[m - 1] == run) {
    --m;
    run *= part.shape[m];
  }
  Index nruns = 1;
  for (int i = 0; i < m; ++i) nruns *= part.shape[i];
  std::vector<DecodedRun> runs;
  if (nruns >= kMaxPartRuns) return runs;
  runs.reserve(static_cast<size_t>(nruns));
  int64_t base = 0;
  for (int i = 0; i < rank; ++i) base += part.origin[i] * chunk_strides[i];
  const Shape outer(part.shape.begin(), part.shape.begin() + m);
  Shape idx(m, 0);
  do {
    int64_t offset = base, at = 0;
    for (int i = 0; i < m; ++i) {
      offset += idx[i] * chunk_strides[i];
      at += idx[i] * out.byte_strides()[i];
    }
    runs.push_back({offset, {out.data() + at, static_cast<size_t>(run)}});
  } while (NextIndex(idx, outer));
  return runs;
}

}  // namespace

Result<bool> ZarrArray::ReadChunkPart(std::span<const Index> block, const Box& part,
                                      const ArrayView& out, MemoryPool& pool) const {
  STRATA_CHECK(!shards_) << "ReadChunkPart of a sharded array";
  const Box block_box = grid_.BlockBox(block);
  STRATA_CHECK(block_box.Contains(part) && out.shape() == part.shape)
      << "ReadChunkPart of " << part.ToString() << " from chunk " << block_box.ToString();
  if (part.empty()) return true;
  // A whole chunk is decoded in runs too where ranged reads are cheap and it
  // is big enough for its encoding to matter: a few blosc blocks' stored
  // bytes at a time, not the whole encoded chunk beside the decoded one. A
  // smaller one is one read (one request per chunk, as tests count them).
  const bool whole_in_runs = codec_->reads_runs() && store_->cheap_ranged_reads() &&
                             chunk_bytes() >= kWholeChunkInRunsBytes;
  if (part == block_box && !whole_in_runs) return ReadChunk(block, out, pool);
  const int rank = static_cast<int>(part.shape.size());
  std::vector<DecodedRun> runs;
  if (codec_->reads_runs() && rank > 0 && out.byte_strides()[rank - 1] == out.dtype().size()) {
    runs = PartRuns(metadata_.chunk_shape, Translate(part, block_box.origin), out);
  }
  if (runs.empty() && part == block_box) return ReadChunk(block, out, pool);
  if (runs.empty()) {
    return ReadThroughTemporary(
        pool, dtype(), block_box.shape, Translate(part, block_box.origin), out,
        [&](const ArrayView& whole) { return ReadChunk(block, whole, pool); });
  }
  const std::string key = ChunkStoreKey(block);
  EncodedRangeReader read = [&](int64_t offset, int64_t length) -> Result<EncodedRange> {
    STRATA_ASSIGN_OR_RETURN(Store::Suffix got, store_->GetRangeAndSize(key, offset, length, pool));
    if (got.bytes.size() != length) {
      return DataLossError(fmt::format("the stored chunk ends before byte {} (bytes [{}, {}) "
                                       "are needed)",
                                       offset + got.bytes.size(), offset, offset + length));
    }
    zarr_bytes_read += length;
    return EncodedRange{std::move(got.bytes), got.total_size};
  };
  Status s = codec_->DecodeRuns(read, runs, pool);
  if (IsNotFound(s)) {
    FillArray(out, metadata_.fill_value.bytes);
    STRATA_RETURN_IF_ERROR(CheckMissingChunk());
    return false;
  }
  if (!s.ok()) {
    return s.WithContext(fmt::format("reading {} of chunk {} of {} (key {})", part.ToString(),
                                     JoinIndices(block, '.'), url(), ChunkName(block)));
  }
  return true;
}

Result<bool> ZarrArray::ReadInnerPart(std::span<const Index> block, const Box& part,
                                      const ArrayView& out, MemoryPool& pool) const {
  STRATA_CHECK(shards_) << "ReadInnerPart of an unsharded array";
  const Box box = read_grid_.BlockBox(block);
  STRATA_CHECK(box.Contains(part) && out.shape() == part.shape);
  const ChunkCodec& codec = shards_->inner_codec();
  const int rank = static_cast<int>(part.shape.size());
  std::vector<DecodedRun> runs;
  if (codec.reads_runs() && rank > 0 && out.byte_strides()[rank - 1] == out.dtype().size()) {
    // Stored inner chunks are whole (edge ones padded): runs in that shape.
    runs = PartRuns(shards_->inner_shape(), Translate(part, box.origin), out);
  }
  if (runs.empty()) {
    return ReadThroughTemporary(pool, dtype(), box.shape, Translate(part, box.origin), out,
                                [&](const ArrayView& whole) { return ReadBlock(block, whole, pool); });
  }
  STRATA_ASSIGN_OR_RETURN(InnerChunk c, LocateInner(block));
  if (c.entry.missing()) {
    FillArray(out, metadata_.fill_value.bytes);
    return false;
  }
  const ShardEntry& e = c.entry;
  const std::string key = ChunkStoreKey(c.shard);
  // Only the stored bytes holding `part`: offsets are the inner chunk's.
  EncodedRangeReader read = [&](int64_t offset, int64_t length) -> Result<EncodedRange> {
    if (offset < 0 || length < 0 || offset > static_cast<int64_t>(e.nbytes) - length) {
      return DataLossError(fmt::format("the inner chunk is {} bytes; bytes [{}, {}) are needed",
                                       e.nbytes, offset, offset + length));
    }
    STRATA_ASSIGN_OR_RETURN(
        Buffer bytes, store_->GetRange(key, static_cast<int64_t>(e.offset) + offset, length, pool));
    if (bytes.size() != length) {
      return DataLossError(fmt::format("the shard ends before byte {} of the inner chunk",
                                       offset + bytes.size()));
    }
    zarr_bytes_read += length;
    // The inner chunk's stored size is what the shard's index records.
    return EncodedRange{std::move(bytes), static_cast<int64_t>(e.nbytes)};
  };
  Status s = codec.DecodeRuns(read, runs, pool);
  if (!s.ok()) return s.WithContext(fmt::format("reading {} of {}", part.ToString(), c.name));
  return true;
}

std::optional<int64_t> ZarrArray::PartialReadUnit() const {
  std::call_once(partial_unit_once_, [this] {
    if (shards_ || !codec_->reads_runs()) return;
    if (!codec_->run_unit_needs_header()) {
      partial_unit_ = codec_->RunUnit({}).value_or(1);
      return;
    }
    MemoryPool& pool = *MemoryPool::Default();
    const Shape& grid_shape = grid_.grid_shape();
    const Index n = std::min<Index>(NumElements(grid_shape), 8);
    Shape block(grid_shape.size(), 0);
    for (Index i = 0; i < n; ++i) {
      UnravelIndex(i, grid_shape, block);
      Result<Buffer> head =
          store_->GetRange(ChunkStoreKey(block), 0, BytesCodec::kRunUnitHeaderBytes, pool);
      if (!head.ok() && IsNotFound(head.status())) continue;
      if (!head.ok()) return;
      Result<int64_t> unit = codec_->RunUnit(head->span());
      if (unit.ok()) partial_unit_ = *unit;
      return;
    }
  });
  return partial_unit_;
}

namespace {

// Serializes read-modify-writes of one chunk: a mutex (striped by key) in
// this process, and for a local directory an OFD write lock on one byte
// (the chunk's linear index) of a lock file in the array's directory, which
// other processes' writers take too. Other stores get the mutex only.
//
// The lock file exists only while some writer uses it, so that a finished
// array holds nothing but Zarr's keys: a writer that is done tries to lock
// the whole file; if it can (no other writer holds any byte of it) it
// unlinks it. A writer that locked its byte checks that the file it locked
// is still the one at the path (one removed under it was empty of other
// locks, and the next writer makes a new one) and starts over if not.
class ChunkLock {
 public:
  ChunkLock(Store& store, const std::string& array_path, const std::string& key, Index linear)
      : mutex_(StripeFor(store.url() + "/" + key)) {
    mutex_.lock();
    auto* local = dynamic_cast<LocalStore*>(&store);
    if (!local) return;
    Result<std::string> dir =
        array_path.empty() ? Result<std::string>(local->root()) : local->PathOf(array_path);
    if (!dir.ok()) return;
    path_ = *dir + "/" + std::string(kChunkLockFile);
    while (true) {
      fd_ = ::open(path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
      if (fd_ < 0) return;
      // An open-file-description lock: a classic POSIX lock belongs to the
      // process, and closing any descriptor of the file (another thread's
      // ChunkLock) would drop it.
      if (!Lock(F_WRLCK, linear, 1, /*wait=*/true)) return;
      if (StillAtPath()) return;
      ::close(fd_);  // removed by the last writer before us: take the new one
      fd_ = -1;
    }
  }
  ~ChunkLock() {
    if (fd_ >= 0) {
      // Our byte goes first (a whole-file lock of the same description would
      // merge with it), then the whole file if no other writer holds any of
      // it: then none uses this file, and it goes.
      Lock(F_UNLCK, 0, 0, /*wait=*/false);
      if (Lock(F_WRLCK, 0, 0, /*wait=*/false) && StillAtPath()) ::unlink(path_.c_str());
      ::close(fd_);  // releases the locks
    }
    mutex_.unlock();
  }
  ChunkLock(const ChunkLock&) = delete;
  ChunkLock& operator=(const ChunkLock&) = delete;

 private:
  static std::mutex& StripeFor(const std::string& key) {
    static std::mutex stripes[256];
    return stripes[std::hash<std::string>{}(key) % 256];
  }
  // len 0: to the end of the file.
  bool Lock(short type, Index start, Index len, bool wait) {
    struct flock lock {};
    lock.l_type = type;
    lock.l_whence = SEEK_SET;
    lock.l_start = start;
    lock.l_len = len;
    int r;
    while ((r = ::fcntl(fd_, wait ? F_OFD_SETLKW : F_OFD_SETLK, &lock)) != 0 && errno == EINTR) {
    }
    return r == 0;
  }
  bool StillAtPath() const {
    struct stat held {}, named {};
    return ::fstat(fd_, &held) == 0 && ::stat(path_.c_str(), &named) == 0 &&
           held.st_dev == named.st_dev && held.st_ino == named.st_ino;
  }
  std::mutex& mutex_;
  std::string path_;
  int fd_ = -1;
};

}  // namespace

void ZarrArray::RemoveIdleChunkLockFile() const {
  auto* local = dynamic_cast<LocalStore*>(store_.get());
  if (!local) return;
  Result<std::string> dir = path_.empty() ? Result<std::string>(local->root()) : local->PathOf(path_);
  if (!dir.ok()) return;
  const std::string path = *dir + "/" + std::string(kChunkLockFile);
  const int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0) return;
  struct flock whole {};
  whole.l_type = F_WRLCK;
  whole.l_whence = SEEK_SET;
  struct stat held {}, named {};
  // As ~ChunkLock: only a file no writer holds any byte of, and still the
  // one at the path.
  if (::fcntl(fd, F_OFD_SETLK, &whole) == 0 && ::fstat(fd, &held) == 0 &&
      ::stat(path.c_str(), &named) == 0 && held.st_ino == named.st_ino &&
      held.st_dev == named.st_dev) {
    ::unlink(path.c_str());
  }
  ::close(fd);
}

Status ZarrArray::WriteRegion(const Box& region, const ConstArrayView& data,
                              MemoryPool& pool) const {
  STRATA_CHECK(data.shape() == region.shape);
  return ForEachBlockIn(region, [&](std::span<const Index> block, const Box& block_box,
                                    const Box& part) -> Status {
    ConstArrayView src = data.Slice(Translate(part, region.origin));
    if (part == block_box) return WriteChunk(block, src, pool);
    ChunkLock lock(*store_, path_, ChunkStoreKey(block), LinearIndex(block, grid_.grid_shape()));
    if (shards_) return UpdateShard(block, part, src, pool);
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
