// Store: a key-value store of byte strings, the ground every Zarr array stands on.
//
// Keys are relative paths with '/' separators ("a.zarr/0.1"). A key with an
// empty component, a "." or ".." component, a leading '/', a backslash or a
// NUL is refused with InvalidArgument, so no key can reach outside the store.
//
// This header is the interface only and names no driver. The drivers, each in
// its own files: LocalStore (a directory; local_store.h), MemoryStore (a map;
// tests and scratch; memory_store.h), S3Store (an S3 bucket; s3/s3_store.h).
// All run one conformance suite (store_test_util.h). OpenStoreUrl
// (open_store.h), above the drivers, picks one by URL scheme.
//
// Thread-safety: every method of every implementation is safe to call
// concurrently. Writes of one key are atomic: a reader sees the old value or
// the new one, never a torn mix, and a crash never leaves a partial value.
#ifndef STRATA_STORAGE_STORE_H_
#define STRATA_STORAGE_STORE_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "strata/base/status.h"
#include "strata/core/memory_pool.h"

namespace strata {

// A value being written piece by piece (a shard assembled inner chunk by
// inner chunk): Append bytes, optionally patch bytes already appended (an
// index reserved at the start), then Commit stores the whole value under its
// key atomically, like Store::Set. Destroying an uncommitted writer discards
// everything (nothing appears under the key, no temporary is left).
//
// Thread-safety: one thread at a time.
class StoreWriter {
 public:
  virtual ~StoreWriter() = default;
  // InvalidArgument past the max_size given to OpenWriter.
  virtual Status Append(std::span<const std::byte> bytes) = 0;
  // Overwrites bytes [offset, offset + bytes.size()), which must have been
  // appended already.
  virtual Status PatchAt(int64_t offset, std::span<const std::byte> bytes) = 0;
  virtual Status Commit() = 0;
  // Bytes appended so far.
  virtual int64_t size() const = 0;
};

class Store {
 public:
  virtual ~Store() = default;

  // The value of `key` in a buffer from `pool`. NotFound when absent.
  virtual Result<Buffer> Get(std::string_view key, MemoryPool& pool) = 0;

  // Bytes [offset, offset + length) of `key`, clipped at its end; OutOfRange
  // when offset is past the end. NotFound when absent.
  virtual Result<Buffer> GetRange(std::string_view key, int64_t offset, int64_t length,
                                  MemoryPool& pool) = 0;

  // Reads the value of `key` into exactly `out`: DataLoss when its size is not
  // out.size() (a truncated or oversized chunk). Lets an uncompressed chunk go
  // from the store straight into its destination with no copy.
  virtual Status GetInto(std::string_view key, std::span<std::byte> out) = 0;

  // The last `length` bytes of `key` (all of it when shorter) and the value's
  // total size: one request where the store can (a shard's index at its
  // end). NotFound when absent. The default asks Size, then GetRange.
  struct Suffix {
    Buffer bytes;
    int64_t total_size = 0;
  };
  virtual Result<Suffix> GetSuffix(std::string_view key, int64_t length, MemoryPool& pool);

  // Bytes [offset, offset + length) of `key` as GetRange, with the value's
  // total size: what a reader of part of a chunk checks the stored size
  // against (a raw chunk of the wrong length is corrupt, however little of
  // it is read). One request where the store can (a file's fstat, an S3
  // Content-Range). NotFound when absent. The default asks Size, then GetRange.
  virtual Result<Suffix> GetRangeAndSize(std::string_view key, int64_t offset, int64_t length,
                                         MemoryPool& pool);

  // Size of the value of `key`, or nullopt when absent.
  virtual Result<std::optional<int64_t>> Size(std::string_view key) = 0;

  // A writer for `key` of a value of at most `max_size` bytes. The default
  // collects the value in one buffer of `max_size` from `pool` and Sets it on
  // Commit; LocalStore writes a temporary file as bytes come.
  virtual Result<std::unique_ptr<StoreWriter>> OpenWriter(std::string_view key, int64_t max_size,
                                                          MemoryPool& pool);
  // The memory a writer of at most `max_size` bytes holds (memory projections).
  virtual int64_t WriterMemory(int64_t max_size) const { return max_size; }

  // Stores `value` under `key` atomically, replacing any old value.
  virtual Status Set(std::string_view key, std::span<const std::byte> value) = 0;
  Status Set(std::string_view key, std::string_view value) {
    return Set(key, std::as_bytes(std::span(value.data(), value.size())));
  }

  // Removes `key`; OK when it was absent.
  virtual Status Erase(std::string_view key) = 0;

  // Every key under `prefix` ("" for all; otherwise a key prefix ending at a
  // '/' boundary, e.g. "a.zarr/"), sorted.
  virtual Result<std::vector<std::string>> List(std::string_view prefix) = 0;

  // Removes every key under `prefix`.
  virtual Status ErasePrefix(std::string_view prefix);
  // Moves the value of `from` to `to`, replacing any value there; `to`
  // changes atomically (a reader sees its old value or the new one).
  // NotFound when `from` is absent. LocalStore renames the file (one
  // atomic step); the default copies (Get, Set) and then erases `from`, so
  // both keys hold the value for a moment.
  virtual Status Rename(std::string_view from, std::string_view to);

  // A token that changes whenever `key` is written again, even with the same
  // bytes where the store can tell (LocalStore: the file's device, inode,
  // size and modification time, one stat); by default the value itself.
  // nullopt when absent. Lets a reader notice that what it read was replaced
  // during its run.
  virtual Result<std::optional<std::string>> Version(std::string_view key);

  // Removes what writers that died left under `prefix` (LocalStore: the
  // temporary files of Set calls by processes that are gone); never what a
  // live process is writing. OK when there is nothing of the kind.
  virtual Status ReclaimTempFiles(std::string_view prefix) { return Status::Ok(); }

  Result<bool> Exists(std::string_view key);

  // Reads `key` as text (metadata documents); NotFound when absent.
  Result<std::string> GetString(std::string_view key);

  // False where every read is a request over the network (S3): a planner
  // then prefers few large reads to many ranged ones (a chunk decoded once
  // and shared rather than parts of it read by each reader).
  virtual bool cheap_ranged_reads() const { return true; }

  // Where this store lives, for messages: "/data/out", "memory://", "s3://b/p".
  virtual std::string url() const = 0;
};

// InvalidArgument when `key` is not a valid store key (see the file comment).
Status ValidateKey(std::string_view key);

// "a/b" + "c" -> "a/b/c"; either may be empty.
std::string JoinKey(std::string_view prefix, std::string_view key);

}  // namespace strata

#endif  // STRATA_STORAGE_STORE_H_
