#include <fmt/format.h>

#include "strata/base/parallel.h"
#include "strata/base/progress.h"
#include "strata/storage/location.h"
#include "strata/storage/zarr/zarr_array.h"
#include "strata/tools/commands.h"

namespace strata {
Status RunCopy(const CopyOptions& options) {
  STRATA_RETURN_IF_ERROR(CheckDisjoint(options.src, "SRC", options.dst, "DST"));
  STRATA_ASSIGN_OR_RETURN(StoreAndPrefix src_at, OpenStoreUrl(options.src, /*create=*/false));
  STRATA_ASSIGN_OR_RETURN(std::shared_ptr<ZarrArray> src,
                          ZarrArray::Open(src_at.store, src_at.prefix));
  ArrayMetadata metadata = src->metadata();
  if (options.codecs) metadata.encoding.bytes_codecs = *options.codecs;
  if (options.zarr_format && *options.zarr_format != metadata.zarr_format) {
    metadata.zarr_format = *options.zarr_format;
    metadata.chunk_key_encoding = metadata.zarr_format == ZarrFormat::kV3
                                      ? ChunkKeyEncoding{ChunkKeyEncoding::Kind::kDefault, '/'}
                                      : ChunkKeyEncoding{ChunkKeyEncoding::Kind::kV2, '.'};
    if (metadata.zarr_format == ZarrFormat::kV2) {
      // v2 can say C or F order only; anything else is rewritten in C order.
      std::vector<int> reversed;
      for (int i = metadata.rank() - 1; i >= 0; --i) reversed.push_back(i);
      if (metadata.encoding.transpose != reversed) metadata.encoding.transpose.clear();
      metadata.dimension_names.reset();
      if (metadata.fill_value.is_null) metadata.fill_value = ZeroFillValue(metadata.dtype());
    }
    if (metadata.zarr_format == ZarrFormat::kV3 && metadata.fill_value.is_null) {
      metadata.fill_value = ZeroFillValue(metadata.dtype());  // v3 has no null fill value
    }
  }
  CarriedAttributes carried = CarryAttributes(src->metadata(), metadata.zarr_format);
  metadata.attributes_json = std::move(carried.attributes_json);
  metadata.dimension_names = std::move(carried.dimension_names);
  STRATA_RETURN_IF_ERROR(metadata.Validate());
  STRATA_ASSIGN_OR_RETURN(StoreAndPrefix dst_at, OpenStoreUrl(options.dst, /*create=*/true));
  ZarrArray::CreateOptions create;
  create.overwrite = options.overwrite;
  STRATA_ASSIGN_OR_RETURN(std::shared_ptr<ZarrArray> dst,
                          ZarrArray::Create(dst_at.store, dst_at.prefix, metadata, create));

  // Same encoding: move the stored bytes as they are (checked, not re-encoded).
  const bool raw = dst->metadata().encoding == src->metadata().encoding;
  const ChunkGrid& grid = src->grid();
  auto pool = MemoryPool::Default()->NewChild({"strata copy", 0});
  ProgressBar progress("copy", grid.num_blocks(), src->chunk_bytes());
  STRATA_RETURN_IF_ERROR(ParallelFor(grid.num_blocks(), options.workers, [&](int64_t b) -> Status {
    Shape block(grid.rank());
    UnravelIndex(b, grid.grid_shape(), block);
    if (raw) {
      Result<Buffer> bytes = src->store()->Get(src->ChunkStoreKey(block), *pool);
      if (!bytes.ok()) {
        if (IsNotFound(bytes.status())) {
          progress.Advance();
          return Status::Ok();  // missing stays missing: it reads as the fill value
        }
        return bytes.status().WithContext(
            fmt::format("reading chunk {} of {}", JoinIndices(block, '.'), src->url()));
      }
      // Same encoding: the stored bytes are copied as they are, but decoded
      // once to check them, so a corrupt chunk is reported, not propagated.
      STRATA_ASSIGN_OR_RETURN(NDArray check,
                              NDArray::Allocate(*pool, src->dtype(), src->metadata().chunk_shape));
      STRATA_RETURN_IF_ERROR(src->codec().Decode(bytes->span(), check.view(), *pool).WithContext(
          fmt::format("reading chunk {} of {}", JoinIndices(block, '.'), src->url())));
      if (dst->IsFillChunk(check.view().Slice(Box::FromShape(grid.BlockShape(block))))) {
        STRATA_RETURN_IF_ERROR(dst->EraseChunk(block));  // as WriteChunk: fill is not stored
      } else {
        STRATA_RETURN_IF_ERROR(dst->WriteEncodedChunk(block, bytes->span()));
      }
    } else {
      STRATA_ASSIGN_OR_RETURN(NDArray chunk,
                              NDArray::Allocate(*pool, src->dtype(), grid.BlockShape(block)));
      STRATA_ASSIGN_OR_RETURN(bool present, src->ReadChunk(block, chunk.view(), *pool));
      if (present) STRATA_RETURN_IF_ERROR(dst->WriteChunk(block, chunk.view(), *pool));
    }
    progress.Advance();
    return Status::Ok();
  }));
  // A source rewritten while it was read leaves DST incomplete, and says so.
  STRATA_RETURN_IF_ERROR(
      src->CheckUnchanged().WithContext(fmt::format("not finishing {}", options.dst)));
  STRATA_RETURN_IF_ERROR(dst->Commit());
  progress.Finish();
  return Status::Ok();
}

}  // namespace strata
