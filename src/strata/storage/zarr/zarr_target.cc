#include "strata/storage/zarr/zarr_target.h"

#include <fmt/format.h>

#include <algorithm>

#include "strata/storage/codec/chunk_codec.h"
#include "strata/storage/open_store.h"
#include "strata/storage/store.h"
#include "strata/storage/zarr/shard.h"
#include "strata/storage/zarr/zarr_array.h"

namespace strata {

Result<std::shared_ptr<ZarrTarget>> ZarrTarget::Make(std::string url, ArrayMetadata metadata,
                                                     bool overwrite, Mode mode) {
  STRATA_RETURN_IF_ERROR(metadata.Validate());
  std::shared_ptr<ZarrTarget> t(new ZarrTarget());
  STRATA_ASSIGN_OR_RETURN(t->codec_, ChunkCodec::Make(metadata.read_chunk_encoding(),
                                                       metadata.read_chunk_shape()));
  if (metadata.sharding) {
    STRATA_ASSIGN_OR_RETURN(t->shard_layout_, ShardLayout::Make(metadata));
    // LocalStore writers stream to their temporary file; the others (S3,
    // memory://) collect the shard first.
    const bool streams = url.rfind("s3://", 0) != 0 && url.rfind("memory://", 0) != 0;
    t->shard_writer_bytes_ = streams ? 0 : t->shard_layout_->max_shard_bytes();
  }
  t->url_ = std::move(url);
  t->metadata_ = std::move(metadata);
  t->overwrite_ = overwrite;
  t->mode_ = std::move(mode);
  return t;
}

bool ZarrTarget::BlockDone(const ChunkGrid& grid, std::span<const Index> block) const {
  if (done_.empty()) return false;
  // A store task may write several chunks (a rechunk's consolidated write
  // chunks): it is done only when every one of them is.
  const std::shared_ptr<ZarrArray> opened = array();  // done_ is set: Open() succeeded
  const ChunkGrid& chunks = opened->grid();
  Shape first, last;
  chunks.BlockRangeOf(grid.BlockBox(block), first, last);
  Shape c = first;
  while (true) {
    if (!std::binary_search(done_.begin(), done_.end(), LinearIndex(c, chunks.grid_shape()))) {
      return false;
    }
    int i = static_cast<int>(c.size()) - 1;
    for (; i >= 0; --i) {
      if (++c[i] < last[i]) break;
      c[i] = first[i];
    }
    if (i < 0) return true;
  }
}

int64_t ZarrTarget::resumed_chunks() const { return static_cast<int64_t>(done_.size()); }

int64_t ZarrTarget::chunk_bytes() const { return codec_->chunk_bytes(); }

Status ZarrTarget::Open() {
  MutexLock lock(&mu_);
  if (array_) return Status::Ok();
  STRATA_ASSIGN_OR_RETURN(StoreAndPrefix at, OpenStoreUrl(url_, /*create=*/true));
  if (mode_.kind != Mode::Kind::kCreate) {
    if (mode_.kind == Mode::Kind::kRegion) {
      STRATA_ASSIGN_OR_RETURN(array_, ZarrArray::Open(at.store, at.prefix));
    } else {
      STRATA_ASSIGN_OR_RETURN(array_, ZarrArray::OpenForAppend(
                                          at.store, at.prefix, mode_.append_axis,
                                          metadata_.shape[mode_.append_axis]));
    }
    // A killed backfill's temporary files (Create does this for new arrays).
    STRATA_RETURN_IF_ERROR(at.store->ReclaimTempFiles(at.prefix.empty() ? "" : at.prefix + "/")
                               .WithContext(fmt::format("removing what an interrupted run left "
                                                        "in {}", array_->url())));
    array_->RemoveIdleChunkLockFile();  // one a killed region writer left
  } else {
    ZarrArray::CreateOptions options;
    options.overwrite = overwrite_;
    STRATA_ASSIGN_OR_RETURN(array_, ZarrArray::Create(at.store, at.prefix, metadata_, options));
    if (array_->resumed()) {
      // An interrupted run's array: its chunks are whole (written atomically;
      // Create removed the temporaries of writers that died with it), and
      // the chunks it found all fill are in its fill journal.
      STRATA_ASSIGN_OR_RETURN(done_, array_->StoredChunkIndices());
    }
  }
  return Status::Ok();
}

std::shared_ptr<ZarrArray> ZarrTarget::array() const {
  MutexLock lock(&mu_);
  return array_;
}

}  // namespace strata
