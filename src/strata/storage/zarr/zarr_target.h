// ZarrTarget: the Zarr array a store node (plan/node.h) writes, described
// when the graph is built and created only when a compute starts.
#ifndef STRATA_STORAGE_ZARR_ZARR_TARGET_H_
#define STRATA_STORAGE_ZARR_ZARR_TARGET_H_

#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "strata/base/status.h"
#include "strata/base/thread_annotations.h"
#include "strata/core/chunk_grid.h"
#include "strata/storage/zarr/metadata.h"

namespace strata {

class ZarrArray;
class ChunkCodec;
class ShardLayout;

// The Zarr array a store node writes. It is created when a compute starts
// (Open), not when to_zarr is called, so a plan that is refused writes nothing.
//
// Thread-safety: Open and array() may be called from any thread.
// How a ZarrTarget is written: a new array (resuming the incomplete array an
// interrupted run left with the same metadata: its complete chunks are not
// written again), a region of an existing array (blocks offset by
// `region_origin`; partly covered chunks read-modify-written under a lock),
// or an append (the existing array grown along `append_axis` to
// metadata.shape; the new metadata is written last).
struct ZarrTargetMode {
  enum class Kind { kCreate, kRegion, kAppend };
  Kind kind = Kind::kCreate;
  Shape region_origin;
  int append_axis = -1;
};

class ZarrTarget {
 public:
  using Mode = ZarrTargetMode;
  // InvalidArgument for metadata that cannot be written.
  static Result<std::shared_ptr<ZarrTarget>> Make(std::string url, ArrayMetadata metadata,
                                                  bool overwrite, Mode mode = {});
  const Mode& mode() const { return mode_; }
  // Writes into part of an existing array (kRegion, kAppend).
  bool writes_region() const { return mode_.kind != Mode::Kind::kCreate; }
  // Resumed runs: true when every stored chunk (shard) that block `block`
  // of `grid` (a store task's) covers was already complete when Open()
  // found the interrupted run's array. Call after Open().
  bool BlockDone(const ChunkGrid& grid, std::span<const Index> block) const;
  // How many chunks Open() found complete (0 unless resuming).
  int64_t resumed_chunks() const;
  const std::string& url() const { return url_; }
  const ArrayMetadata& metadata() const { return metadata_; }
  // The codec of one stored chunk (of one inner chunk, when sharded).
  const ChunkCodec& codec() const { return *codec_; }
  int64_t chunk_bytes() const;
  // Sharded targets: a store task writes a whole shard, inner chunk by inner
  // chunk (null layout otherwise).
  bool sharded() const { return shard_layout_ != nullptr; }
  const std::shared_ptr<const ShardLayout>& shard_layout() const { return shard_layout_; }
  // Memory the store's writer of one shard holds: 0 for a local directory
  // (it streams to a file), the shard's encoded bound elsewhere.
  int64_t shard_writer_bytes() const { return shard_writer_bytes_; }
  // Creates the array (incomplete until Commit); idempotent.
  Status Open();
  // The array once opened, else null.
  std::shared_ptr<ZarrArray> array() const;

 private:
  ZarrTarget() = default;
  std::string url_;
  ArrayMetadata metadata_;
  bool overwrite_ = false;
  Mode mode_;
  // Sorted. Written once, under mu_, by the Open() that creates the array;
  // read-only after it returns (so not annotated: its readers run after Open).
  std::vector<Index> done_;
  std::shared_ptr<const ChunkCodec> codec_;
  std::shared_ptr<const ShardLayout> shard_layout_;
  int64_t shard_writer_bytes_ = 0;
  mutable Mutex mu_;
  std::shared_ptr<ZarrArray> array_ STRATA_GUARDED_BY(mu_);
};

}  // namespace strata

#endif  // STRATA_STORAGE_ZARR_ZARR_TARGET_H_
