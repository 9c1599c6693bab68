// What the files of ZarrArray (zarr_array.h) share:
//   zarr_array.cc      opening, creating, committing; whole-chunk IO; regions
//   zarr_node.cc       InspectNode and EraseZarrNode (nodes of either kind)
//   fill_journal.cc    the fill journal of an incomplete array
//   sharded_io.cc      reading and writing shards and their inner chunks
//   partial_read.cc    reading part of a chunk
//   region_write.cc    read-modify-writes of chunks under a chunk lock
//
// Thread-safety: as zarr_array.h.
#ifndef STRATA_STORAGE_ZARR_ZARR_ARRAY_INTERNAL_H_
#define STRATA_STORAGE_ZARR_ZARR_ARRAY_INTERNAL_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "strata/base/status.h"
#include "strata/base/thread_annotations.h"
#include "strata/storage/zarr/zarr_array.h"

namespace strata {

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
  Mutex mu;
  std::vector<Index> pending STRATA_GUARDED_BY(mu);
  int64_t last_write_ns STRATA_GUARDED_BY(mu);
  bool closed STRATA_GUARDED_BY(mu) = false;  // Commit() removed the journal
};

namespace internal_zarr {

// Adds `bytes` to this thread's ThreadZarrBytesRead.
void CountZarrBytesRead(int64_t bytes);

// The URL of the node at `path` in `store`, for messages.
std::string NodeUrl(const Store& store, const std::string& path);

// The text of `key`, nullopt when absent.
Result<std::optional<std::string>> GetOptionalString(Store& store, const std::string& key);

// The metadata an incomplete-array marker holds; `where` names the array.
Result<ArrayMetadata> DecodeMarker(std::string_view text, const std::string& where);

// Reads a whole block of `shape` with `read_whole` into a temporary from
// `pool` and copies its `part` (block coordinates) to `out`: for a part the
// codec cannot decode on its own. Returns what `read_whole` returns.
Result<bool> ReadThroughTemporary(MemoryPool& pool, DType dtype, const Shape& shape,
                                  const Box& part, const ArrayView& out,
                                  const std::function<Result<bool>(const ArrayView&)>& read_whole);
}  // namespace internal_zarr
}  // namespace strata

#endif  // STRATA_STORAGE_ZARR_ZARR_ARRAY_INTERNAL_H_
