// Shard index format and the shard writer (shard.h).
#include "strata/storage/zarr/shard.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

#include "strata/storage/codec/codec.h"

namespace strata {
namespace {

constexpr int64_t kEntryBytes = 16;

uint64_t Swap64(uint64_t v) { return __builtin_bswap64(v); }

std::string InnerName(const Shape& inner_grid, Index inner) {
  Shape coords(inner_grid.size());
  UnravelIndex(inner, inner_grid, coords);
  return ShapeToString(coords);
}

bool AllEqualTo(const ConstArrayView& data, std::span<const std::byte> element) {
  if (data.num_elements() == 0) return true;
  const size_t esize = element.size();
  if (data.is_contiguous()) {
    std::span<const std::byte> bytes = data.bytes();
    for (size_t i = 0; i < bytes.size(); i += esize) {
      if (std::memcmp(bytes.data() + i, element.data(), esize) != 0) return false;
    }
    return true;
  }
  Shape idx(data.rank(), 0);
  do {
    if (std::memcmp(data.ElementPointer(idx), element.data(), esize) != 0) return false;
  } while (NextIndex(idx, data.shape()));
  return true;
}

}  // namespace

bool ShardIndex::empty() const {
  return std::all_of(entries_.begin(), entries_.end(),
                     [](const ShardEntry& e) { return e.missing(); });
}

Result<std::shared_ptr<const ShardLayout>> ShardLayout::Make(const ArrayMetadata& metadata) {
  STRATA_CHECK(metadata.sharding.has_value());
  std::shared_ptr<ShardLayout> layout(new ShardLayout());
  layout->spec_ = *metadata.sharding;
  layout->shard_shape_ = metadata.chunk_shape;
  layout->inner_shape_ = metadata.sharding->inner_chunk_shape;
  for (size_t i = 0; i < layout->shard_shape_.size(); ++i) {
    if (layout->inner_shape_[i] < 1 || layout->shard_shape_[i] % layout->inner_shape_[i] != 0) {
      return InvalidArgumentError(fmt::format("the inner chunk shape {} must divide the shard shape {}",
                                              ShapeToString(layout->inner_shape_),
                                              ShapeToString(layout->shard_shape_)));
    }
    layout->inner_grid_.push_back(layout->shard_shape_[i] / layout->inner_shape_[i]);
  }
  layout->index_bytes_ =
      kEntryBytes * NumElements(layout->inner_grid_) + (layout->spec_.index_crc32c ? 4 : 0);
  STRATA_ASSIGN_OR_RETURN(layout->inner_codec_,
                          ChunkCodec::Make(layout->spec_.inner_encoding, layout->inner_shape_));
  return std::shared_ptr<const ShardLayout>(std::move(layout));
}

int64_t ShardLayout::max_shard_bytes() const {
  return index_bytes_ + inner_per_shard() * inner_codec_->max_encoded_bytes();
}

Box ShardLayout::InnerBox(Index inner) const {
  Shape coords(inner_grid_.size());
  UnravelIndex(inner, inner_grid_, coords);
  Box box(Shape(coords.size()), inner_shape_);
  for (size_t i = 0; i < coords.size(); ++i) box.origin[i] = coords[i] * inner_shape_[i];
  return box;
}

Result<ShardIndex> ShardLayout::DecodeIndex(std::span<const std::byte> encoded, int64_t shard_size,
                                            const std::string& where) const {
  if (static_cast<int64_t>(encoded.size()) != index_bytes_ || shard_size < index_bytes_) {
    return DataLossError(fmt::format(
        "{}: the shard is {} bytes, too short for its {}-byte index of {} inner chunks", where,
        shard_size, index_bytes_, inner_per_shard()));
  }
  const int64_t n = inner_per_shard();
  const std::span<const std::byte> table = encoded.first(static_cast<size_t>(kEntryBytes * n));
  if (spec_.index_crc32c) {
    uint32_t stored;
    std::memcpy(&stored, encoded.data() + table.size(), 4);
    const uint32_t actual = Crc32c(table);
    if (stored != actual) {
      return DataLossError(fmt::format(
          "{}: shard index checksum mismatch (crc32c stored {:08x}, computed {:08x})", where,
          stored, actual));
    }
  }
  const bool swap = spec_.index_endian == Endian::kBig;
  // The bytes inner chunks may occupy: everything but the index.
  const uint64_t data_begin = spec_.index_at_end ? 0 : static_cast<uint64_t>(index_bytes_);
  const uint64_t data_end = static_cast<uint64_t>(shard_size) -
                            (spec_.index_at_end ? static_cast<uint64_t>(index_bytes_) : 0);
  std::vector<ShardEntry> entries(static_cast<size_t>(n));
  std::vector<Index> order;
  for (Index i = 0; i < n; ++i) {
    uint64_t offset, nbytes;
    std::memcpy(&offset, table.data() + i * kEntryBytes, 8);
    std::memcpy(&nbytes, table.data() + i * kEntryBytes + 8, 8);
    if (swap) {
      offset = Swap64(offset);
      nbytes = Swap64(nbytes);
    }
    ShardEntry e{offset, nbytes};
    if (e.missing()) {
      entries[static_cast<size_t>(i)] = e;
      continue;
    }
    if (offset == ShardEntry::kMissing || nbytes == ShardEntry::kMissing) {
      return DataLossError(fmt::format(
          "{}: index entry of inner chunk {} is half missing (offset {}, nbytes {})", where,
          InnerName(inner_grid_, i), static_cast<int64_t>(offset), static_cast<int64_t>(nbytes)));
    }
    if (offset < data_begin || offset > data_end || nbytes > data_end - offset) {
      const bool past_end = offset > data_end || nbytes > data_end - offset;
      return DataLossError(fmt::format(
          "{}: inner chunk {} at bytes [{}, {}) {} ({} bytes, index {} bytes at the {})", where,
          InnerName(inner_grid_, i), offset, offset + nbytes,
          past_end && offset + nbytes > static_cast<uint64_t>(shard_size)
              ? "reaches past the end of the shard"
              : "overlaps the shard index",
          shard_size, index_bytes_, spec_.index_at_end ? "end" : "start"));
    }
    entries[static_cast<size_t>(i)] = e;
    if (nbytes > 0) order.push_back(i);
  }
  std::sort(order.begin(), order.end(), [&](Index a, Index b) {
    return entries[static_cast<size_t>(a)].offset < entries[static_cast<size_t>(b)].offset;
  });
  for (size_t k = 1; k < order.size(); ++k) {
    const ShardEntry& prev = entries[static_cast<size_t>(order[k - 1])];
    const ShardEntry& next = entries[static_cast<size_t>(order[k])];
    if (prev.offset + prev.nbytes > next.offset) {
      return DataLossError(fmt::format(
          "{}: inner chunks {} (bytes [{}, {})) and {} (bytes [{}, {})) overlap", where,
          InnerName(inner_grid_, order[k - 1]), prev.offset, prev.offset + prev.nbytes,
          InnerName(inner_grid_, order[k]), next.offset, next.offset + next.nbytes));
    }
  }
  return ShardIndex(std::move(entries));
}

void ShardLayout::EncodeIndex(std::span<const ShardEntry> entries, std::span<std::byte> out) const {
  STRATA_CHECK(static_cast<Index>(entries.size()) == inner_per_shard() &&
               static_cast<int64_t>(out.size()) == index_bytes_);
  const bool swap = spec_.index_endian == Endian::kBig;
  for (size_t i = 0; i < entries.size(); ++i) {
    uint64_t offset = swap ? Swap64(entries[i].offset) : entries[i].offset;
    uint64_t nbytes = swap ? Swap64(entries[i].nbytes) : entries[i].nbytes;
    std::memcpy(out.data() + i * kEntryBytes, &offset, 8);
    std::memcpy(out.data() + i * kEntryBytes + 8, &nbytes, 8);
  }
  if (spec_.index_crc32c) {
    const size_t table = entries.size() * kEntryBytes;
    const uint32_t crc = Crc32c(out.first(table));
    std::memcpy(out.data() + table, &crc, 4);
  }
}

Result<std::unique_ptr<ShardWriter>> ShardWriter::Begin(std::shared_ptr<const ShardLayout> layout,
                                                        Store& store, std::string key,
                                                        std::vector<std::byte> fill_value,
                                                        MemoryPool& pool, bool erase_if_empty) {
  std::unique_ptr<ShardWriter> w(new ShardWriter());
  w->entries_.assign(static_cast<size_t>(layout->inner_per_shard()), ShardEntry{});
  w->layout_ = std::move(layout);
  w->store_ = &store;
  w->key_ = std::move(key);
  w->fill_ = std::move(fill_value);
  w->pool_ = &pool;
  w->erase_if_empty_ = erase_if_empty;
  return w;
}

ShardWriter::~ShardWriter() = default;

Status ShardWriter::Open() {
  if (writer_) return Status::Ok();
  STRATA_ASSIGN_OR_RETURN(writer_,
                          store_->OpenWriter(key_, layout_->max_shard_bytes(), *pool_));
  if (!layout_->spec().index_at_end) {
    // Reserve the index; Finish patches it in.
    std::vector<std::byte> placeholder(static_cast<size_t>(layout_->index_bytes()));
    STRATA_RETURN_IF_ERROR(writer_->Append(placeholder));
  }
  return Status::Ok();
}

Result<std::optional<Buffer>> ShardLayout::EncodeInner(const ConstArrayView& data,
                                                       std::span<const std::byte> fill,
                                                       MemoryPool& pool) const {
  STRATA_CHECK(data.shape() == inner_shape_);
  if (!fill.empty() && AllEqualTo(data, fill)) return std::optional<Buffer>();
  STRATA_ASSIGN_OR_RETURN(Buffer encoded, inner_codec_->Encode(data, pool));
  return std::optional<Buffer>(std::move(encoded));
}

Status ShardWriter::Add(Index inner, const ConstArrayView& data) {
  STRATA_CHECK(inner >= 0 && inner < layout_->inner_per_shard());
  STRATA_ASSIGN_OR_RETURN(std::optional<Buffer> encoded, layout_->EncodeInner(data, fill_, *pool_));
  if (!encoded) return Status::Ok();
  return AddEncoded(inner, encoded->span());
}

Status ShardWriter::AddEncoded(Index inner, std::span<const std::byte> encoded) {
  STRATA_CHECK(inner >= 0 && inner < layout_->inner_per_shard());
  STRATA_CHECK(!has(inner)) << "inner chunk added twice";
  STRATA_RETURN_IF_ERROR(Open());
  const int64_t offset = writer_->size();
  STRATA_RETURN_IF_ERROR(writer_->Append(encoded));
  entries_[static_cast<size_t>(inner)] = {static_cast<uint64_t>(offset),
                                          static_cast<uint64_t>(encoded.size())};
  ++stored_;
  return Status::Ok();
}

Result<bool> ShardWriter::Finish() {
  if (stored_ == 0) {
    // An empty shard is not written (zarr-python does the same); an old one
    // at the key would read wrong, so it goes.
    if (erase_if_empty_) STRATA_RETURN_IF_ERROR(store_->Erase(key_));
    return false;
  }
  std::vector<std::byte> index(static_cast<size_t>(layout_->index_bytes()));
  layout_->EncodeIndex(entries_, index);
  if (layout_->spec().index_at_end) {
    STRATA_RETURN_IF_ERROR(writer_->Append(index));
  } else {
    STRATA_RETURN_IF_ERROR(writer_->PatchAt(0, index));
  }
  STRATA_RETURN_IF_ERROR(writer_->Commit());
  writer_.reset();
  return true;
}

}  // namespace strata
