#include <fmt/format.h>

#include "strata/base/parallel.h"
#include "strata/core/chunk_grid.h"
#include "strata/core/synthetic.h"
#include "strata/storage/zarr/zarr_array.h"
#include "strata/tools/commands.h"
#include "strata/base/progress.h"

namespace strata {

std::vector<BytesCodecSpec> DefaultCodecs() {
  BloscSpec blosc;
  blosc.cname = "lz4";
  blosc.clevel = 5;
  blosc.shuffle = 1;
  return {blosc};
}

Status RunRandom(const RandomOptions& options) {
  if (options.shape.size() != options.chunks.size()) {
    return InvalidArgumentError(fmt::format("--chunks {} does not match the rank of --shape {}",
                                            ShapeToString(options.chunks),
                                            ShapeToString(options.shape)));
  }
  ArrayMetadata metadata;
  metadata.zarr_format = options.zarr_format;
  metadata.shape = options.shape;
  metadata.chunk_shape = options.chunks;
  metadata.encoding.dtype = options.dtype;
  metadata.encoding.bytes_codecs = options.codecs;
  metadata.fill_value = ZeroFillValue(options.dtype);
  if (options.zarr_format == ZarrFormat::kV3) {
    metadata.chunk_key_encoding = {ChunkKeyEncoding::Kind::kDefault, '/'};
  }
  STRATA_RETURN_IF_ERROR(metadata.Validate());
  STRATA_RETURN_IF_ERROR(ChunkGrid::Regular(options.shape, options.chunks).status());
  STRATA_ASSIGN_OR_RETURN(StoreAndPrefix dst, OpenStoreUrl(options.dst, /*create=*/true));
  ZarrArray::CreateOptions create;
  create.overwrite = options.overwrite;
  STRATA_ASSIGN_OR_RETURN(std::shared_ptr<ZarrArray> array,
                          ZarrArray::Create(dst.store, dst.prefix, metadata, create));
  const ChunkGrid& grid = array->grid();
  auto pool = MemoryPool::Default()->NewChild({"strata random", 0});
  ProgressBar progress("random", grid.num_blocks(), array->chunk_bytes());
  STRATA_RETURN_IF_ERROR(ParallelFor(grid.num_blocks(), options.workers, [&](int64_t b) -> Status {
    Shape block(grid.rank());
    UnravelIndex(b, grid.grid_shape(), block);
    Box box = grid.BlockBox(block);
    STRATA_ASSIGN_OR_RETURN(NDArray chunk, NDArray::Allocate(*pool, options.dtype, box.shape));
    FillSynthetic(chunk.view(), box, options.shape, options.seed);
    STRATA_RETURN_IF_ERROR(array->WriteChunk(block, chunk.view(), *pool));
    progress.Advance();
    return Status::Ok();
  }));
  STRATA_RETURN_IF_ERROR(array->Commit());
  progress.Finish();
  return Status::Ok();
}

}  // namespace strata
