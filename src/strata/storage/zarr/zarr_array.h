// ZarrArray: one Zarr array (v2 or v3) in a Store; chunk and region IO.
//
// Lifecycle:
//   Open(store, path)                  an existing, complete array
//   Create(store, path, metadata, opts) a new array being written; by default
//       it is *incomplete*: a `.strata-incomplete` key holding the intended
//       metadata is written first, chunks next, and Commit() finally writes
//       `.zarray`/`zarr.json` and removes the marker. Until then zarr-python
//       cannot open the array and Strata's Open() says it is incomplete, so an
//       interrupted run never leaves output that looks finished. Creating over
//       an incomplete array with the same metadata resumes it.
//
// Chunks equal to the fill value are not stored (zarr-python's
// write_empty_chunks=False), so an absent chunk of an incomplete array may be
// one not written yet or one found to be all fill. To tell them apart on
// resume, an incomplete array records the chunks it skipped as fill in a
// journal under `.strata-fill/` (batched: one small object per 4096 chunks
// or per second, and what is pending when a run fails); Commit() removes it
// before writing the metadata. StoredChunkIndices() counts both.
//
// Missing chunks read as the fill value. Edge chunks are stored at the full
// chunk shape (as Zarr requires) and padded with the fill value on write.
//
// Sharded arrays (v3 "sharding_indexed"): grid() is the grid of shards, the
// stored objects; read_grid() the grid of inner chunks, the units a reader
// fetches. ReadBlock reads one inner chunk with two ranged reads (the shard's
// index, cached per array, then the inner chunk's bytes); ReadRegion reads
// only the inner chunks a region touches; WriteChunk assembles a whole shard
// (shard.h) inner chunk by inner chunk. For unsharded arrays the two grids are
// the same.
//
// Thread-safety: after Open/Create, every const method may be called
// concurrently (different chunks from different threads); writes to the same
// chunk from two threads race at the store level (the last rename wins).
#ifndef STRATA_STORAGE_ZARR_ZARR_ARRAY_H_
#define STRATA_STORAGE_ZARR_ZARR_ARRAY_H_

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>
#include <span>
#include <string>

#include "strata/base/status.h"
#include "strata/base/thread_annotations.h"
#include "strata/core/chunk_grid.h"
#include "strata/core/memory_pool.h"
#include "strata/core/ndarray.h"
#include "strata/storage/codec/chunk_codec.h"
#include "strata/storage/store.h"
#include "strata/storage/zarr/metadata.h"
#include "strata/storage/zarr/shard.h"

namespace strata {

inline constexpr std::string_view kIncompleteMarkerKey = ".strata-incomplete";
// Under an incomplete array: the fill journal (see ZarrArray::Create).
inline constexpr std::string_view kFillJournalPrefix = ".strata-fill/";
// In a local array's directory while region writes read-modify-write its
// chunks: the file their per-chunk locks are taken on (WriteRegion). It is
// removed by the last writer that used it.
inline constexpr std::string_view kChunkLockFile = ".strata-chunk-locks";

class ZarrArray {
 public:
  struct CreateOptions {
    // Replace an existing array or group at the path (its keys are erased).
    bool overwrite = false;
    // Write metadata only at Commit() (see the file comment). When false,
    // metadata is written at once and the array is complete immediately.
    bool deferred_metadata = true;
  };

  // Opens the array at `path` (a key prefix; "" for the store root). NotFound
  // when nothing is there, FailedPrecondition for a group or an incomplete
  // array, InvalidArgument for bad or unsupported metadata.
  static Result<std::shared_ptr<ZarrArray>> Open(std::shared_ptr<Store> store, std::string path);

  // Creates an array. AlreadyExists when an array or group is at the path and
  // !overwrite (an incomplete array with the same metadata is resumed).
  static Result<std::shared_ptr<ZarrArray>> Create(std::shared_ptr<Store> store, std::string path,
                                                   ArrayMetadata metadata, CreateOptions options);

  // Opens the existing array at `path` to append along `axis`: the returned
  // array has the grown shape (`new_extent` along `axis`), chunks are
  // written beyond the old edge, and Commit() writes the new metadata. Until
  // then readers see the old array: nothing is visible half-appended.
  // InvalidArgument when `new_extent` is smaller than the current extent.
  static Result<std::shared_ptr<ZarrArray>> OpenForAppend(std::shared_ptr<Store> store,
                                                          std::string path, int axis,
                                                          Index new_extent);

  // True when Create resumed an incomplete array an interrupted run left.
  bool resumed() const { return resumed_; }

  // Removes the temporary files of writers that died (killed worker
  // processes) and nothing a live writer holds (Store::ReclaimTempFiles).
  Status ReclaimDeadWritersFiles() const;

  // Removes what dead writers left (ReclaimDeadWritersFiles), then writes
  // the metadata documents and removes the incomplete marker (of an array
  // made by Create or OpenForAppend; only the first for an array opened).
  Status Commit();

  // Linear indices (sorted, in grid()) of every chunk already complete: the
  // stored chunks (shards of a sharded array; objects are renamed into place,
  // so one that exists is whole; temporary files are not keys) and those the
  // fill journal records as all fill value. What a resumed write skips.
  Result<std::vector<Index>> StoredChunkIndices() const;

  // Writes what the fill journal holds in memory (chunks skipped as fill
  // since its last write), so that a rerun after a failed run knows them
  // done. OK when there is nothing to write or no journal.
  Status FlushFillJournal() const;
  // Removes the chunk lock file a killed region writer left (kChunkLockFile),
  // unless a live writer holds a lock in it. Local directories only.
  void RemoveIdleChunkLockFile() const;

  // Finishes shard `block` (from BeginShard): stored, or, with no inner
  // chunk but fill values, not stored and recorded as fill.
  Status FinishShard(std::span<const Index> block, ShardWriter& writer) const;

  const ArrayMetadata& metadata() const { return metadata_; }
  // The grid of stored chunks (shards, for a sharded array).
  const ChunkGrid& grid() const { return grid_; }
  // The grid of the chunks read one at a time (inner chunks of shards).
  const ChunkGrid& read_grid() const { return read_grid_; }
  bool is_sharded() const { return shards_ != nullptr; }
  // Null unless sharded.
  const std::shared_ptr<const ShardLayout>& shard_layout() const { return shards_; }
  // The codec of the read chunks (the inner chunks of a sharded array).
  const ChunkCodec& codec() const { return *codec_; }
  DType dtype() const { return metadata_.dtype(); }
  const Shape& shape() const { return metadata_.shape; }
  const std::shared_ptr<Store>& store() const { return store_; }
  const std::string& path() const { return path_; }
  // "<store url>/<path>", for messages.
  std::string url() const;

  // The store key of chunk `block`.
  std::string ChunkStoreKey(std::span<const Index> block) const;

  // Reads block `block` into `out`, whose shape is the block's shape (clipped
  // at the array's edge). Returns false (and writes the fill value) when the
  // chunk is missing. DataLoss for a corrupt chunk, naming it. For a sharded
  // array a block is a whole shard.
  Result<bool> ReadChunk(std::span<const Index> block, const ArrayView& out,
                         MemoryPool& pool) const;

  // Reads block `block` of read_grid() (an inner chunk of a sharded array,
  // else a chunk, as ReadChunkPart reads a whole one: in runs where ranged
  // reads are cheap). DataLoss names the shard for a bad index.
  Result<bool> ReadBlock(std::span<const Index> block, const ArrayView& out,
                         MemoryPool& pool) const;

  // Decodes stored bytes of chunk `block` (a whole shard when sharded) to
  // check them, holding one chunk (one inner chunk) at a time.
  Status CheckEncodedChunk(std::span<const Index> block, std::span<const std::byte> encoded,
                           MemoryPool& pool) const;

  // Starts writing shard `block` (sharded arrays only): add its inner chunks
  // (ShardWriter::Add, full inner shape, padded at the array's edge) and
  // Finish. The shard's index cache entry is dropped.
  Result<std::unique_ptr<ShardWriter>> BeginShard(std::span<const Index> block,
                                                  MemoryPool& pool) const;

  // Encodes and stores block `block` from `data` (the block's clipped shape).
  // A chunk whose every element is the fill value is not stored (as
  // zarr-python's default write_empty_chunks=False): it reads back as the
  // fill value, and an old chunk at its key is erased.
  Status WriteChunk(std::span<const Index> block, const ConstArrayView& data,
                    MemoryPool& pool) const;

  // Stores an already-encoded chunk.
  Status WriteEncodedChunk(std::span<const Index> block, std::span<const std::byte> encoded) const;

  // The stored bytes of chunk `block`, or nullopt when missing.
  Result<std::optional<Buffer>> GetEncodedChunk(std::span<const Index> block,
                                                MemoryPool& pool) const;

  // Removes the stored chunk (none to remove in an array Create made on an
  // empty location: then no request is sent).
  Status EraseChunk(std::span<const Index> block) const;

  // True when every element of `data` is the fill value (never for v2's null
  // fill value, which zarr-python always writes).
  bool IsFillChunk(const ConstArrayView& data) const;

  // Reads `part` (array coordinates, inside the box of chunk `block` of an
  // unsharded array) into `out` (shape == part.shape). Where the codec
  // decodes runs (ChunkCodec::reads_runs: raw bytes, blosc) only the stored
  // bytes holding `part` are fetched and decoded (ranged reads; blosc's
  // blocks covering it); otherwise the whole chunk is read into a temporary.
  // Returns false (and writes the fill value) when the chunk is missing.
  // DataLoss for a corrupt chunk, naming it.
  Result<bool> ReadChunkPart(std::span<const Index> block, const Box& part, const ArrayView& out,
                             MemoryPool& pool) const;

  // For planners: the bytes a partial read (ReadChunkPart) decodes at least,
  // whatever part it asks for (1 for raw bytes; blosc's block size, read from
  // the header of the first stored chunk among the first few), or nullopt
  // when parts are decoded from whole chunks (the codec; a sharded array) or
  // no chunk was found. The header is read once per array.
  std::optional<int64_t> PartialReadUnit() const;

  // For planners: the most a ReadChunkPart of any part no larger than
  // `max_part` (in every axis), into a slice of a C-ordered block, holds
  // beside its output (the scratch of decoding its runs, bounded from the
  // same header as PartialReadUnit), or nullopt when such a part may be read
  // through the whole chunk (a codec that cannot decode runs, a part of too
  // many runs, a whole chunk small enough to read in one request, no stored
  // chunk found): then it holds what ReadChunk of the chunk does.
  std::optional<int64_t> PartReadScratch(const Shape& max_part) const;
  // Same, for a consumer choosing to read its chunks in strips of up to
  // `strip`: a value only where each strip is read in runs from a store
  // whose ranged reads are cheap (a file, memory), holds several of the
  // codec's run units (blosc blocks), and is not a whole chunk.
  std::optional<int64_t> StripReadScratch(const Shape& strip) const;

  // Reads `part` (array coordinates, inside inner chunk `block` of the read
  // grid) of a sharded array into `out`: the shard's index (cached), then,
  // where the inner codec decodes runs, only the stored bytes of the inner
  // chunk that hold `part`; otherwise the whole inner chunk. Returns false
  // (and writes the fill value) when the inner chunk is missing.
  Result<bool> ReadInnerPart(std::span<const Index> block, const Box& part, const ArrayView& out,
                             MemoryPool& pool) const;

  // Reads any region into `out` (shape == region.shape); chunks (inner
  // chunks) it covers partly through ReadChunkPart (ReadInnerPart).
  Status ReadRegion(const Box& region, const ArrayView& out, MemoryPool& pool) const;

  // Writes any region; partially covered chunks are read, updated and
  // rewritten under a lock on the chunk (a mutex in this process and, in a
  // local directory, an fcntl lock that other processes respect), so two
  // writers of neighbouring regions never lose each other's values and a
  // reader never sees a torn chunk (chunks are replaced atomically).
  Status WriteRegion(const Box& region, const ConstArrayView& data, MemoryPool& pool) const;

  struct StoredChunks {
    int64_t count = 0;  // chunk keys present
    int64_t bytes = 0;  // their total size
  };
  Result<StoredChunks> CountStoredChunks() const;

  // FailedPrecondition when the array's metadata document was removed or
  // replaced since Open (another writer is rewriting it: what was read may
  // mix old and new chunks). OK for arrays not made by Open.
  Status CheckUnchanged() const;

  // Bytes of one decoded (full-shape) chunk.
  int64_t chunk_bytes() const { return codec_->chunk_bytes(); }

 private:
  ZarrArray(std::shared_ptr<Store> store, std::string path, ArrayMetadata metadata,
            ChunkGrid grid, ChunkGrid read_grid, std::shared_ptr<const ChunkCodec> codec,
            std::shared_ptr<const ShardLayout> shards)
      : store_(std::move(store)), path_(std::move(path)), metadata_(std::move(metadata)),
        grid_(std::move(grid)), read_grid_(std::move(read_grid)), codec_(std::move(codec)),
        shards_(std::move(shards)) {}

  static Result<std::shared_ptr<ZarrArray>> Make(std::shared_ptr<Store> store, std::string path,
                                                 ArrayMetadata metadata);
  std::string Key(std::string_view relative) const { return JoinKey(path_, relative); }
  std::string ChunkName(std::span<const Index> block) const;
  Status CheckMissingChunk() const;
  // Encodes `chunk` (the full chunk shape) and stores it under `key`: piece
  // by piece into a store writer where the codec and store allow.
  Status EncodeAndStore(const std::string& key, const ConstArrayView& chunk,
                        MemoryPool& pool) const;
  Status ReadFullChunk(std::span<const Index> block, const ArrayView& out, MemoryPool& pool,
                       bool* present) const;
  // Sharded arrays.
  std::string ShardName(std::span<const Index> block) const;
  // The index of shard `shard` (cached), or null when the shard is missing.
  Result<std::shared_ptr<const ShardIndex>> ShardIndexOf(std::span<const Index> shard) const;
  // Where inner chunk `block` (a read_grid_ block) is stored: its shard, its
  // coordinates within that shard and its index entry, which is missing()
  // when the inner chunk or its whole shard is. A missing shard is an error
  // where missing chunks are (CheckMissingChunk).
  struct InnerChunk {
    Shape shard;
    Shape within;
    ShardEntry entry;
    std::string name;  // "inner chunk (i, j) of <shard>", for messages
  };
  Result<InnerChunk> LocateInner(std::span<const Index> block) const;
  // Decodes the inner chunk at `encoded` into `out` (its clipped box in the
  // array, `clipped` its shape).
  Status DecodeInner(std::span<const std::byte> encoded, const ArrayView& out, MemoryPool& pool) const;
  Result<bool> ReadShard(std::span<const Index> block, const ArrayView& out, MemoryPool& pool) const;
  Status WriteShard(std::span<const Index> block, const ConstArrayView& data, MemoryPool& pool) const;
  // Writes `region` of `data` into shard `block`, which it covers partly:
  // untouched inner chunks keep their stored bytes.
  Status UpdateShard(std::span<const Index> block, const Box& part, const ConstArrayView& data,
                     MemoryPool& pool) const;
  void ForgetShardIndex(std::span<const Index> shard) const;
  // Calls fn for every block `region` touches, with the block's box and the
  // part of it inside the region. OutOfRange when the region leaves the array.
  Status ForEachBlockIn(const Box& region,
                        const std::function<Status(std::span<const Index> block,
                                                   const Box& block_box, const Box& part)>& fn)
      const;

  std::shared_ptr<Store> store_;
  std::string path_;
  ArrayMetadata metadata_;
  ChunkGrid grid_;
  ChunkGrid read_grid_;
  std::shared_ptr<const ChunkCodec> codec_;
  // Created on a location holding nothing (or emptied by overwrite): no
  // chunk can be stored yet, so skipped fill chunks need no erase.
  bool fresh_ = false;
  // Open: the metadata document's key and Store::Version then.
  std::string metadata_key_;
  std::optional<std::string> metadata_version_;
  // Steady-clock nanoseconds of the last CheckUnchanged a missing chunk made.
  mutable std::atomic<int64_t> last_missing_check_{0};
  std::shared_ptr<const ShardLayout> shards_;
  // Commit() writes metadata (Create, OpenForAppend).
  bool metadata_pending_ = false;
  bool resumed_ = false;
  // Incomplete arrays (Create with deferred metadata): chunks not stored
  // because they are all fill value, not yet written to the journal.
  struct FillJournal;
  std::shared_ptr<FillJournal> fill_journal_;  // null otherwise
  Status NoteFillChunk(std::span<const Index> block) const;
  Status WriteFillJournal(std::vector<Index> batch) const;
  // Appends the chunk indices a journal object records (below num_blocks).
  static void ReadFillJournal(std::string_view text, Index num_blocks, std::vector<Index>& out);
  mutable std::once_flag partial_unit_once_;
  mutable std::optional<int64_t> partial_unit_;  // set once, under partial_unit_once_
  mutable std::vector<std::byte> partial_header_;  // the header partial_unit_ was read from
  // Decoded shard indexes, most recently used last (a few hundred at most).
  static constexpr size_t kIndexCacheEntries = 256;
  mutable Mutex index_mu_;
  mutable std::vector<std::pair<Index, std::shared_ptr<const ShardIndex>>> index_cache_
      STRATA_GUARDED_BY(index_mu_);
};

// Stored bytes of chunks this thread has read through any ZarrArray (whole
// encoded chunks, byte ranges of them, uncompressed chunks read in place)
// since it started. A task reads it before and after it runs to know what it
// read (TaskFigures::zarr_bytes_read); a value per thread, so concurrent
// tasks do not mix.
int64_t ThreadZarrBytesRead();

// Reads the metadata of the node at `path` (array or group, either version)
// without opening it: used by `strata info` for groups and incomplete arrays.
struct NodeInfo {
  enum class Kind { kArray, kGroup, kIncompleteArray };
  Kind kind;
  ZarrFormat zarr_format;
  std::optional<ArrayMetadata> array;  // for arrays and incomplete arrays
};
Result<NodeInfo> InspectNode(Store& store, const std::string& path);

// Removes what belongs to the node at `prefix` ("" or "path/") that is being
// replaced, and nothing else: a group's metadata documents and its members
// (each child holding a Zarr array or group, erased as that node), leaving
// files that are no member's; an array's metadata documents first (so a
// reader sees it gone before its chunks go), then its chunk keys, leaving any
// other file in its directory.
// `existing` is null when the node's metadata cannot be read: then its
// metadata documents and every key spelled like a chunk key go.
Status EraseZarrNode(Store& store, const std::string& prefix, const NodeInfo* existing);

}  // namespace strata

#endif  // STRATA_STORAGE_ZARR_ZARR_ARRAY_H_
