// Shards: the stored objects of a sharded Zarr v3 array ("sharding_indexed",
// ShardingSpec in metadata.h), read and written inner chunk by inner chunk.
//
//   ShardLayout    the geometry and codecs of an array's shards: how many inner
//                  chunks a shard holds, the index's size and encoding, the
//                  inner chunks' ChunkCodec. Made once per array.
//   ShardIndex     the decoded index of one shard: (offset, nbytes) per inner
//                  chunk, checked against the shard's size (no entry past the
//                  end, no two overlapping, the CRC-32C matching), so that a
//                  corrupt index is an error naming the shard, never a wild
//                  read.
//   ShardWriter    assembles one shard: inner chunks are encoded as they are
//                  added and streamed to a StoreWriter (index at the end) or
//                  placed after a reserved index (index at the start), so a
//                  task holds one inner chunk, not the shard. Inner chunks
//                  equal to the fill value are not stored; a shard with no
//                  inner chunk left is not written at all (and any old one is
//                  erased).
//
// Reads fetch the index alone (GetSuffix or GetRange of its bytes) and then
// each inner chunk needed as a byte range; ZarrArray does that.
//
// Thread-safety: ShardLayout and ShardIndex are immutable values; a
// ShardWriter is used by one thread.
#ifndef STRATA_STORAGE_ZARR_SHARD_H_
#define STRATA_STORAGE_ZARR_SHARD_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "strata/base/status.h"
#include "strata/core/box.h"
#include "strata/core/memory_pool.h"
#include "strata/core/ndarray.h"
#include "strata/storage/codec/chunk_codec.h"
#include "strata/storage/store.h"
#include "strata/storage/zarr/metadata.h"

namespace strata {

struct ShardEntry {
  static constexpr uint64_t kMissing = ~uint64_t{0};
  uint64_t offset = kMissing;
  uint64_t nbytes = kMissing;
  bool missing() const { return offset == kMissing && nbytes == kMissing; }
};

class ShardIndex {
 public:
  ShardIndex() = default;
  explicit ShardIndex(std::vector<ShardEntry> entries) : entries_(std::move(entries)) {}
  const ShardEntry& entry(Index inner) const { return entries_[static_cast<size_t>(inner)]; }
  Index size() const { return static_cast<Index>(entries_.size()); }
  // True when no inner chunk is stored.
  bool empty() const;

 private:
  std::vector<ShardEntry> entries_;
};

class ShardLayout {
 public:
  // `metadata.sharding` must be set and valid (Validate()).
  static Result<std::shared_ptr<const ShardLayout>> Make(const ArrayMetadata& metadata);

  const Shape& shard_shape() const { return shard_shape_; }
  const Shape& inner_shape() const { return inner_shape_; }
  // Inner chunks per shard along each axis.
  const Shape& inner_grid() const { return inner_grid_; }
  Index inner_per_shard() const { return NumElements(inner_grid_); }
  const ChunkCodec& inner_codec() const { return *inner_codec_; }
  const ShardingSpec& spec() const { return spec_; }
  // Encoded bytes of the index: 16 per inner chunk, plus 4 for the CRC-32C.
  int64_t index_bytes() const { return index_bytes_; }
  // An upper bound on a shard's encoded size.
  int64_t max_shard_bytes() const;

  // The box of inner chunk `inner` (linear, C order) in shard coordinates.
  Box InnerBox(Index inner) const;

  // Encodes one inner chunk (`data` of the full inner chunk shape); nullopt
  // when every element equals `fill` (non-empty), which is not stored.
  Result<std::optional<Buffer>> EncodeInner(const ConstArrayView& data,
                                            std::span<const std::byte> fill,
                                            MemoryPool& pool) const;

  // Decodes an index. `shard_size` is the whole shard's size in bytes;
  // `where` names the shard ("shard c/0/1 of /data/a.zarr") in the DataLoss
  // errors: a checksum mismatch, an entry reaching past the end of the shard
  // or into the index, two entries overlapping, a half-missing entry.
  Result<ShardIndex> DecodeIndex(std::span<const std::byte> encoded, int64_t shard_size,
                                 const std::string& where) const;
  // Encodes `entries` (inner_per_shard() of them) into index_bytes() bytes.
  void EncodeIndex(std::span<const ShardEntry> entries, std::span<std::byte> out) const;

 private:
  ShardLayout() = default;
  ShardingSpec spec_;
  Shape shard_shape_;
  Shape inner_shape_;
  Shape inner_grid_;
  int64_t index_bytes_ = 0;
  std::shared_ptr<const ChunkCodec> inner_codec_;
};

class ShardWriter {
 public:
  // Starts shard `key` in `store`. `fill_value` is the array's (inner chunks
  // equal to it are skipped). `erase_if_empty`: an empty shard erases what
  // is at `key` (false when nothing can be there: no request is sent).
  // Memory: a writer from store.OpenWriter plus one encoded inner chunk at a
  // time, all from `pool`.
  static Result<std::unique_ptr<ShardWriter>> Begin(std::shared_ptr<const ShardLayout> layout,
                                                    Store& store, std::string key,
                                                    std::vector<std::byte> fill_value,
                                                    MemoryPool& pool, bool erase_if_empty = true);
  ~ShardWriter();

  // Encodes and adds inner chunk `inner` (linear) from `data`, of the full
  // inner chunk shape. Each inner chunk at most once, in any order.
  Status Add(Index inner, const ConstArrayView& data);
  // Adds inner chunk `inner` already encoded (copied from another shard, or
  // encoded by another task). Each inner chunk at most once: a shard never
  // holds a second copy, so it stays within max_shard_bytes() (a retried or
  // backup writer of part of a shard asks has() first).
  Status AddEncoded(Index inner, std::span<const std::byte> encoded);
  // True when inner chunk `inner` was added.
  bool has(Index inner) const { return !entries_[static_cast<size_t>(inner)].missing(); }
  // Writes the index and stores the shard; with no inner chunk added, erases
  // `key` instead (see Begin). Returns whether a shard was written.
  Result<bool> Finish();

  // Inner chunks stored so far.
  Index stored() const { return stored_; }

 private:
  ShardWriter() = default;
  Status Open();

  std::shared_ptr<const ShardLayout> layout_;
  Store* store_ = nullptr;
  std::string key_;
  std::vector<std::byte> fill_;
  MemoryPool* pool_ = nullptr;
  bool erase_if_empty_ = true;
  std::unique_ptr<StoreWriter> writer_;
  std::vector<ShardEntry> entries_;
  Index stored_ = 0;
};

}  // namespace strata

#endif  // STRATA_STORAGE_ZARR_SHARD_H_
