#include <fmt/format.h>

#include "strata/base/parallel.h"
#include "strata/base/progress.h"
#include "strata/storage/location.h"
#include "strata/storage/open_store.h"
#include "strata/storage/zarr/hierarchy.h"
#include "strata/storage/zarr/zarr_array.h"
#include "strata/tools/dataset_util.h"
#include "strata/tools/commands.h"

namespace strata {
namespace {

// A whole group: every member group and array, attributes and dimension
// names kept, consolidated metadata written at the end.
Status CopyGroup(const CopyOptions& options, Store& src_store, const std::string& src_prefix) {
  if (options.shards) {
    return InvalidArgumentError("--shards applies to one array, not to a group");
  }
  STRATA_ASSIGN_OR_RETURN(Hierarchy h, ReadHierarchy(src_store, src_prefix));
  const ZarrFormat format = options.zarr_format.value_or(h.zarr_format());
  STRATA_ASSIGN_OR_RETURN(StoreAndPrefix dst, OpenStoreUrl(options.dst, /*create=*/true));
  GroupMetadata root = h.nodes.front().group;
  root.zarr_format = format;
  STRATA_RETURN_IF_ERROR(CreateGroup(*dst.store, dst.prefix, root, options.overwrite));
  for (size_t i = 1; i < h.nodes.size(); ++i) {
    const HierarchyNode& n = h.nodes[i];
    if (n.is_array) {
      CopyOptions member = options;
      member.src = JoinUrl(options.src, n.path);
      member.dst = JoinUrl(options.dst, n.path);
      member.overwrite = false;
      STRATA_RETURN_IF_ERROR(RunCopy(member).WithContext(fmt::format("copying {}", n.path)));
    } else {
      GroupMetadata g = n.group;
      g.zarr_format = format;
      STRATA_RETURN_IF_ERROR(CreateGroup(*dst.store, JoinKey(dst.prefix, n.path), g, false));
    }
  }
  return WriteConsolidatedMetadata(*dst.store, dst.prefix);
}

}  // namespace

Status RunCopy(const CopyOptions& options) {
  STRATA_RETURN_IF_ERROR(CheckDisjoint(options.src, "SRC", options.dst, "DST"));
  STRATA_ASSIGN_OR_RETURN(StoreAndPrefix src_at, OpenStoreUrl(options.src, /*create=*/false));
  STRATA_ASSIGN_OR_RETURN(NodeInfo src_node, InspectNode(*src_at.store, src_at.prefix));
  if (src_node.kind == NodeInfo::Kind::kGroup) {
    return CopyGroup(options, *src_at.store, src_at.prefix);
  }
  STRATA_ASSIGN_OR_RETURN(std::shared_ptr<ZarrArray> src,
                          ZarrArray::Open(src_at.store, src_at.prefix));
  if (options.shards) {
    // Into shards: a rechunk whose target chunks are the inner chunks (the
    // source's by default), each shard assembled by one task.
    RechunkOptions r;
    r.src = options.src;
    r.dst = options.dst;
    r.chunks = options.chunks.value_or(src->metadata().read_chunk_shape());
    r.shards = options.shards;
    r.codecs = options.codecs;
    r.zarr_format = options.zarr_format;
    r.spec.workers = options.workers;
    r.overwrite = options.overwrite;
    r.quiet = true;
    return RunRechunk(r);
  }
  ArrayMetadata metadata = src->metadata();
  if (metadata.sharding && options.zarr_format == ZarrFormat::kV2) {
    // v2 has no sharding: the inner chunks become the chunks.
    metadata.chunk_shape = metadata.sharding->inner_chunk_shape;
    metadata.encoding = metadata.sharding->inner_encoding;
    metadata.sharding.reset();
  }
  if (options.codecs) {
    (metadata.sharding ? metadata.sharding->inner_encoding : metadata.encoding).bytes_codecs =
        *options.codecs;
  }
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

  // Same encoding and layout: move the stored bytes as they are (checked,
  // not re-encoded). Otherwise every block of DST is read from SRC by
  // region: only the inner chunks it needs when SRC is sharded.
  const bool raw = dst->metadata().encoding == src->metadata().encoding &&
                   dst->metadata().sharding == src->metadata().sharding &&
                   dst->metadata().chunk_shape == src->metadata().chunk_shape;
  const bool same_blocks = !dst->is_sharded() && dst->grid() == src->read_grid();
  const ChunkGrid& grid = raw ? src->grid() : dst->grid();
  auto pool = MemoryPool::Default()->NewChild({"strata copy", 0});
  const int64_t block_bytes = NumElements(grid.chunk_shape()) * src->dtype().size();
  ProgressBar progress("copy", grid.num_blocks(), block_bytes);
  STRATA_RETURN_IF_ERROR(ParallelFor(grid.num_blocks(), options.workers, [&](int64_t b) -> Status {
    Shape block(grid.rank());
    UnravelIndex(b, grid.grid_shape(), block);
    if (raw) {
      STRATA_ASSIGN_OR_RETURN(std::optional<Buffer> bytes, src->GetEncodedChunk(block, *pool));
      // Missing stays missing: it reads as the fill value.
      if (bytes && src->is_sharded()) {
        // Decoded once to check it, inner chunk by inner chunk, so a corrupt
        // shard is reported, not propagated.
        STRATA_RETURN_IF_ERROR(src->CheckEncodedChunk(block, bytes->span(), *pool));
        STRATA_RETURN_IF_ERROR(dst->WriteEncodedChunk(block, bytes->span()));
      } else if (bytes) {
        // Same encoding: the stored bytes are copied as they are, but decoded
        // once to check them, so a corrupt chunk is reported, not propagated.
        STRATA_ASSIGN_OR_RETURN(NDArray check, NDArray::Allocate(*pool, src->dtype(),
                                                                 src->metadata().chunk_shape));
        STRATA_RETURN_IF_ERROR(src->codec().Decode(bytes->span(), check.view(), *pool).WithContext(
            fmt::format("reading chunk {} of {}", JoinIndices(block, '.'), src->url())));
        if (dst->IsFillChunk(check.view().Slice(Box::FromShape(grid.BlockShape(block))))) {
          STRATA_RETURN_IF_ERROR(dst->EraseChunk(block));  // as WriteChunk: fill is not stored
        } else {
          STRATA_RETURN_IF_ERROR(dst->WriteEncodedChunk(block, bytes->span()));
        }
      }
    } else if (same_blocks) {
      STRATA_ASSIGN_OR_RETURN(NDArray chunk,
                              NDArray::Allocate(*pool, src->dtype(), grid.BlockShape(block)));
      STRATA_ASSIGN_OR_RETURN(bool present, src->ReadBlock(block, chunk.view(), *pool));
      if (present) STRATA_RETURN_IF_ERROR(dst->WriteChunk(block, chunk.view(), *pool));
    } else if (dst->is_sharded()) {
      // A shard assembled inner chunk by inner chunk: one inner chunk in memory.
      const ShardLayout& layout = *dst->shard_layout();
      const Box shard = grid.BlockBox(block);
      STRATA_ASSIGN_OR_RETURN(std::unique_ptr<ShardWriter> writer, dst->BeginShard(block, *pool));
      STRATA_ASSIGN_OR_RETURN(NDArray inner,
                              NDArray::Allocate(*pool, src->dtype(), layout.inner_shape()));
      for (Index j = 0; j < layout.inner_per_shard(); ++j) {
        const Box local = layout.InnerBox(j);
        const Box part = Intersect(local, Box::FromShape(shard.shape));
        if (part.empty()) continue;
        if (part != local) FillArray(inner.view(), dst->metadata().fill_value.bytes);
        Box global = part;
        for (int i = 0; i < grid.rank(); ++i) global.origin[i] += shard.origin[i];
        STRATA_RETURN_IF_ERROR(src->ReadRegion(
            global, inner.view().Slice(Translate(part, local.origin)), *pool));
        STRATA_RETURN_IF_ERROR(writer->Add(j, inner.view()));
      }
      STRATA_RETURN_IF_ERROR(dst->FinishShard(block, *writer));
    } else {
      const Box box = grid.BlockBox(block);
      STRATA_ASSIGN_OR_RETURN(NDArray chunk, NDArray::Allocate(*pool, src->dtype(), box.shape));
      STRATA_RETURN_IF_ERROR(src->ReadRegion(box, chunk.view(), *pool));
      STRATA_RETURN_IF_ERROR(dst->WriteChunk(block, chunk.view(), *pool));
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
