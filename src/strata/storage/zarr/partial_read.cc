// ZarrArray reading part of a chunk: runs of a raw chunk, or a decoded one.
#include "strata/storage/zarr/zarr_array.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

#include "strata/storage/zarr/zarr_array_internal.h"

namespace strata {

using internal_zarr::CountZarrBytesRead;
using internal_zarr::ReadThroughTemporary;

namespace {

// A whole chunk at least this big (decoded) is read in runs where ranged
// reads are cheap (ReadChunkPart).
constexpr int64_t kWholeChunkInRunsBytes = int64_t{8} << 20;

// A partial read of this many runs or more decodes the whole chunk instead
// (each run costs a record and a copy; so many means a scattered part).
constexpr Index kMaxPartRuns = Index{1} << 16;

// The fewest run units (blosc blocks) a strip of StripReadScratch holds: its
// reads then decode at most a quarter more than the chunk.
constexpr int64_t kUnitsPerStrip = 4;

// The C-order runs of `part` (chunk-local, inside a stored chunk of shape
// `stored`) and where each goes in `out`, whose innermost axis must be
// contiguous. Trailing axes that `part` covers whole merge into one run
// where `out` is contiguous across them too. Empty when there would be
// kMaxPartRuns runs or more.
std::vector<DecodedRun> PartRuns(const Shape& stored, const Box& part, const ArrayView& out) {
  const int rank = static_cast<int>(stored.size());
  const int64_t isz = out.dtype().size();
  std::vector<int64_t> chunk_strides(rank);
  int64_t stride = isz;
  for (int i = rank - 1; i >= 0; --i) {
    chunk_strides[i] = stride;
    stride *= stored[i];
  }
  int m = rank - 1;  // the run covers axes [m, rank)
  int64_t run = part.shape[m] * isz;
  while (m > 0 && part.shape[m] == stored[m] && out.byte_strides()[m - 1] == run) {
    --m;
    run *= part.shape[m];
  }
  Index nruns = 1;
  for (int i = 0; i < m; ++i) nruns *= part.shape[i];
  std::vector<DecodedRun> runs;
  if (nruns >= kMaxPartRuns) return runs;
  runs.reserve(static_cast<size_t>(nruns));
  int64_t base = 0;
  for (int i = 0; i < rank; ++i) base += part.origin[i] * chunk_strides[i];
  const Shape outer(part.shape.begin(), part.shape.begin() + m);
  Shape idx(m, 0);
  do {
    int64_t offset = base, at = 0;
    for (int i = 0; i < m; ++i) {
      offset += idx[i] * chunk_strides[i];
      at += idx[i] * out.byte_strides()[i];
    }
    runs.push_back({offset, {out.data() + at, static_cast<size_t>(run)}});
  } while (NextIndex(idx, outer));
  return runs;
}

}  // namespace

Result<bool> ZarrArray::ReadChunkPart(std::span<const Index> block, const Box& part,
                                      const ArrayView& out, MemoryPool& pool) const {
  STRATA_CHECK(!shards_) << "ReadChunkPart of a sharded array";
  const Box block_box = grid_.BlockBox(block);
  STRATA_CHECK(block_box.Contains(part) && out.shape() == part.shape)
      << "ReadChunkPart of " << part.ToString() << " from chunk " << block_box.ToString();
  if (part.empty()) return true;
  // A whole chunk is decoded in runs too where ranged reads are cheap and it
  // is big enough for its encoding to matter: a few blosc blocks' stored
  // bytes at a time, not the whole encoded chunk beside the decoded one. A
  // smaller one is one read (one request per chunk, as tests count them).
  const bool whole_in_runs = codec_->reads_runs() && store_->cheap_ranged_reads() &&
                             chunk_bytes() >= kWholeChunkInRunsBytes;
  if (part == block_box && !whole_in_runs) return ReadChunk(block, out, pool);
  const int rank = static_cast<int>(part.shape.size());
  std::vector<DecodedRun> runs;
  if (codec_->reads_runs() && rank > 0 && out.byte_strides()[rank - 1] == out.dtype().size()) {
    runs = PartRuns(metadata_.chunk_shape, Translate(part, block_box.origin), out);
  }
  if (runs.empty() && part == block_box) return ReadChunk(block, out, pool);
  if (runs.empty()) {
    return ReadThroughTemporary(
        pool, dtype(), block_box.shape, Translate(part, block_box.origin), out,
        [&](const ArrayView& whole) { return ReadChunk(block, whole, pool); });
  }
  const std::string key = ChunkStoreKey(block);
  EncodedRangeReader read = [&](int64_t offset, int64_t length) -> Result<EncodedRange> {
    STRATA_ASSIGN_OR_RETURN(Store::Suffix got, store_->GetRangeAndSize(key, offset, length, pool));
    if (got.bytes.size() != length) {
      return DataLossError(fmt::format("the stored chunk ends before byte {} (bytes [{}, {}) "
                                       "are needed)",
                                       offset + got.bytes.size(), offset, offset + length));
    }
    CountZarrBytesRead(length);
    return EncodedRange{std::move(got.bytes), got.total_size};
  };
  Status s = codec_->DecodeRuns(read, runs, pool);
  if (IsNotFound(s)) {
    FillArray(out, metadata_.fill_value.bytes);
    STRATA_RETURN_IF_ERROR(CheckMissingChunk());
    return false;
  }
  if (!s.ok()) {
    return s.WithContext(fmt::format("reading {} of chunk {} of {} (key {})", part.ToString(),
                                     JoinIndices(block, '.'), url(), ChunkName(block)));
  }
  return true;
}

Result<bool> ZarrArray::ReadInnerPart(std::span<const Index> block, const Box& part,
                                      const ArrayView& out, MemoryPool& pool) const {
  STRATA_CHECK(shards_) << "ReadInnerPart of an unsharded array";
  const Box box = read_grid_.BlockBox(block);
  STRATA_CHECK(box.Contains(part) && out.shape() == part.shape);
  const ChunkCodec& codec = shards_->inner_codec();
  const int rank = static_cast<int>(part.shape.size());
  std::vector<DecodedRun> runs;
  if (codec.reads_runs() && rank > 0 && out.byte_strides()[rank - 1] == out.dtype().size()) {
    // Stored inner chunks are whole (edge ones padded): runs in that shape.
    runs = PartRuns(shards_->inner_shape(), Translate(part, box.origin), out);
  }
  if (runs.empty()) {
    return ReadThroughTemporary(pool, dtype(), box.shape, Translate(part, box.origin), out,
                                [&](const ArrayView& whole) { return ReadBlock(block, whole, pool); });
  }
  STRATA_ASSIGN_OR_RETURN(InnerChunk c, LocateInner(block));
  if (c.entry.missing()) {
    FillArray(out, metadata_.fill_value.bytes);
    return false;
  }
  const ShardEntry& e = c.entry;
  const std::string key = ChunkStoreKey(c.shard);
  // Only the stored bytes holding `part`: offsets are the inner chunk's.
  EncodedRangeReader read = [&](int64_t offset, int64_t length) -> Result<EncodedRange> {
    if (offset < 0 || length < 0 || offset > static_cast<int64_t>(e.nbytes) - length) {
      return DataLossError(fmt::format("the inner chunk is {} bytes; bytes [{}, {}) are needed",
                                       e.nbytes, offset, offset + length));
    }
    STRATA_ASSIGN_OR_RETURN(
        Buffer bytes, store_->GetRange(key, static_cast<int64_t>(e.offset) + offset, length, pool));
    if (bytes.size() != length) {
      return DataLossError(fmt::format("the shard ends before byte {} of the inner chunk",
                                       offset + bytes.size()));
    }
    CountZarrBytesRead(length);
    // The inner chunk's stored size is what the shard's index records.
    return EncodedRange{std::move(bytes), static_cast<int64_t>(e.nbytes)};
  };
  Status s = codec.DecodeRuns(read, runs, pool);
  if (!s.ok()) return s.WithContext(fmt::format("reading {} of {}", part.ToString(), c.name));
  return true;
}

std::optional<int64_t> ZarrArray::PartialReadUnit() const {
  std::call_once(partial_unit_once_, [this] {
    if (shards_ || !codec_->reads_runs()) return;
    if (!codec_->run_unit_needs_header()) {
      partial_unit_ = codec_->RunUnit({}).value_or(1);
      return;
    }
    MemoryPool& pool = *MemoryPool::Default();
    const Shape& grid_shape = grid_.grid_shape();
    const Index n = std::min<Index>(NumElements(grid_shape), 8);
    Shape block(grid_shape.size(), 0);
    for (Index i = 0; i < n; ++i) {
      UnravelIndex(i, grid_shape, block);
      Result<Buffer> head =
          store_->GetRange(ChunkStoreKey(block), 0, BytesCodec::kRunUnitHeaderBytes, pool);
      if (!head.ok() && IsNotFound(head.status())) continue;
      if (!head.ok()) return;
      Result<int64_t> unit = codec_->RunUnit(head->span());
      if (unit.ok()) {
        partial_unit_ = *unit;
        partial_header_.assign(head->span().begin(), head->span().end());
      }
      return;
    }
  });
  return partial_unit_;
}

std::optional<int64_t> ZarrArray::PartReadScratch(const Shape& max_part) const {
  const int rank = static_cast<int>(max_part.size());
  STRATA_CHECK(rank == grid_.rank()) << "PartReadScratch of a rank-" << rank << " part";
  if (!PartialReadUnit() || rank == 0) return std::nullopt;
  // As ReadChunkPart decides: a part equal to a chunk's box (edge chunks
  // are clipped) is read whole unless whole chunks are read in runs; a part
  // of kMaxPartRuns runs or more through the whole chunk. Runs merge across
  // trailing axes a part covers whole, so the count without merging bounds
  // it, and a run is at most the part.
  const Shape& chunk = metadata_.chunk_shape;
  const bool whole_in_runs = store_->cheap_ranged_reads() && chunk_bytes() >= kWholeChunkInRunsBytes;
  bool may_be_whole = true;
  Index runs = 1;
  int64_t part_bytes = dtype().size();
  for (int d = 0; d < rank; ++d) {
    const Index extent = std::min(max_part[d], metadata_.shape[d]);
    const Index edge = chunk[d] == 0 ? 0 : metadata_.shape[d] % chunk[d];
    if (extent < (edge > 0 ? edge : chunk[d])) may_be_whole = false;
    if (d + 1 < rank) runs *= extent;
    part_bytes *= extent;
  }
  if ((may_be_whole && !whole_in_runs) || runs >= kMaxPartRuns) return std::nullopt;
  Result<int64_t> scratch = codec_->RunScratchBytes(partial_header_, part_bytes);
  if (!scratch.ok()) return std::nullopt;
  return *scratch + runs * static_cast<int64_t>(sizeof(DecodedRun));
}

std::optional<int64_t> ZarrArray::StripReadScratch(const Shape& strip) const {
  if (shards_ || !store_->cheap_ranged_reads()) return std::nullopt;
  // A strip decodes whole run units (blosc blocks), the ones at its ends
  // again for its neighbours: worth it only where a strip holds several.
  const std::optional<int64_t> unit = PartialReadUnit();
  if (!unit || NumElements(strip) * dtype().size() < kUnitsPerStrip * *unit) return std::nullopt;
  for (size_t d = 0; d < strip.size(); ++d) {
    if (strip[d] < std::min(metadata_.chunk_shape[d], metadata_.shape[d])) {
      return PartReadScratch(strip);
    }
  }
  return std::nullopt;  // a whole chunk: no strips
}

}  // namespace strata
