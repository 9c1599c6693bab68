#include <fmt/format.h>

#include "strata/base/parallel.h"
#include "strata/core/chunk_grid.h"
#include "strata/core/synthetic.h"
#include "strata/storage/open_store.h"
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
  if (options.shards) {
    if (options.zarr_format != ZarrFormat::kV3) {
      return InvalidArgumentError("--shards needs --zarr-format 3 (Zarr v2 has no sharding)");
    }
    if (options.shards->size() != options.shape.size()) {
      return InvalidArgumentError(fmt::format("--shards {} does not match the rank of --shape {}",
                                              ShapeToString(*options.shards),
                                              ShapeToString(options.shape)));
    }
    for (size_t i = 0; i < options.shape.size(); ++i) {
      if ((*options.shards)[i] < 1 || (*options.shards)[i] % options.chunks[i] != 0) {
        return InvalidArgumentError(
            fmt::format("--shards {} must be a multiple of --chunks {} (the inner chunks)",
                        ShapeToString(*options.shards), ShapeToString(options.chunks)));
      }
    }
    ShardingSpec sharding;
    sharding.inner_chunk_shape = options.chunks;
    sharding.inner_encoding = metadata.encoding;
    metadata.encoding.bytes_codecs.clear();
    metadata.chunk_shape = *options.shards;
    metadata.sharding = std::move(sharding);
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
    if (array->is_sharded()) {
      // Inner chunk by inner chunk: one inner chunk in memory, whatever the shard.
      const ShardLayout& layout = *array->shard_layout();
      STRATA_ASSIGN_OR_RETURN(std::unique_ptr<ShardWriter> writer, array->BeginShard(block, *pool));
      STRATA_ASSIGN_OR_RETURN(NDArray inner,
                              NDArray::Allocate(*pool, options.dtype, layout.inner_shape()));
      for (Index j = 0; j < layout.inner_per_shard(); ++j) {
        const Box local = layout.InnerBox(j);
        const Box part = Intersect(local, Box::FromShape(box.shape));
        if (part.empty()) continue;
        if (part != local) FillArray(inner.view(), metadata.fill_value.bytes);
        Box global = part;
        for (int i = 0; i < grid.rank(); ++i) global.origin[i] += box.origin[i];
        FillSynthetic(inner.view().Slice(Translate(part, local.origin)), global, options.shape,
                      options.seed);
        STRATA_RETURN_IF_ERROR(writer->Add(j, inner.view()));
      }
      STRATA_RETURN_IF_ERROR(array->FinishShard(block, *writer));
      progress.Advance();
      return Status::Ok();
    }
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
