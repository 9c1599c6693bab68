// Zarr v2 (.zarray/.zattrs/.zgroup) and v3 (zarr.json) metadata: parsing into
// ArrayMetadata / GroupMetadata and serialisation back.
//
// Parsing is strict about meaning and lenient only where the format allows it:
// every feature Strata does not implement (filters, sharding, unknown codecs,
// extension fields that must be understood) is refused with an error naming
// it. Writing follows zarr-python: a v2 .zarray is byte-identical to what
// zarr-python 2.13 writes for the same array (sorted keys, indent 4, Python's
// float formatting), so that rewriting metadata never causes spurious diffs.
//
// This file holds ArrayMetadata itself (chunk keys, Validate, Encode) and the
// attribute edits; each format and codec family has its own file
// (metadata_internal.h lists them), the JSON quirks are json_util.h's.
#include "strata/storage/zarr/metadata.h"

#include <fmt/format.h>

#include <charconv>

#include "strata/storage/zarr/metadata_internal.h"

namespace strata {

using internal_zarr::AttributesForEncode;
using internal_zarr::Doc;
using internal_zarr::DumpCompact;
using internal_zarr::DumpLikeZarrPython;
using internal_zarr::EncodeV2Array;
using internal_zarr::EncodeV3Array;
using internal_zarr::NoThrow;
using internal_zarr::OrderedJson;
using internal_zarr::ParseAttributes;
using internal_zarr::ParseJson;
using internal_zarr::RestoreRawText;
using internal_zarr::SortedJson;

namespace {

bool ParseChunkIndex(std::string_view text, Index& out) {
  if (text.empty() || (text.size() > 1 && text[0] == '0')) return false;
  for (char c : text) {
    if (c < '0' || c > '9') return false;
  }
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  return ec == std::errc() && ptr == text.data() + text.size();
}

std::string DescribeTranspose(const std::vector<int>& order) {
  return fmt::format("transpose({})", fmt::join(order, ","));
}

}  // namespace

std::string ArrayMetadata::ChunkKey(std::span<const Index> block) const {
  STRATA_DCHECK(static_cast<int>(block.size()) == rank())
      << "block rank " << block.size() << " for an array of rank " << rank();
  const char sep = chunk_key_encoding.separator;
  if (chunk_key_encoding.kind == ChunkKeyEncoding::Kind::kV2) {
    return JoinIndices(block, sep);  // "0" for rank 0
  }
  std::string key = "c";
  for (Index i : block) {
    key += sep;
    key += std::to_string(i);
  }
  return key;
}

bool ArrayMetadata::ParseChunkKey(std::string_view key, Shape& block) const {
  const char sep = chunk_key_encoding.separator;
  const int n = rank();
  if (chunk_key_encoding.kind == ChunkKeyEncoding::Kind::kDefault) {
    if (key.empty() || key[0] != 'c') return false;
    key.remove_prefix(1);
    if (n == 0) {
      if (!key.empty()) return false;
      block.clear();
      return true;
    }
    if (key.empty() || key[0] != sep) return false;
    key.remove_prefix(1);
  } else if (n == 0) {
    if (key != "0") return false;
    block.clear();
    return true;
  }
  Shape parsed(n);
  for (int axis = 0; axis < n; ++axis) {
    size_t end = axis + 1 < n ? key.find(sep) : key.size();
    if (end == std::string_view::npos) return false;
    if (!ParseChunkIndex(key.substr(0, end), parsed[axis])) return false;
    key.remove_prefix(axis + 1 < n ? end + 1 : end);
  }
  if (!key.empty()) return false;
  block = std::move(parsed);
  return true;
}

// The most dimensions an array may have (numpy's limit).
constexpr int kMaxRank = 32;

Status ArrayMetadata::Validate() const {
  auto invalid = [](std::string message) { return InvalidArgumentError(std::move(message)); };
  const int n = rank();
  if (static_cast<int>(chunk_shape.size()) != n) {
    return invalid(fmt::format("chunk shape {} has rank {} but the array shape {} has rank {}",
                               ShapeToString(chunk_shape), chunk_shape.size(), ShapeToString(shape),
                               n));
  }
  for (Index d : shape) {
    if (d < 0) return invalid(fmt::format("shape {} has a negative extent", ShapeToString(shape)));
  }
  for (Index d : chunk_shape) {
    if (d < 1) {
      return invalid(
          fmt::format("chunk shape {} has an extent below 1", ShapeToString(chunk_shape)));
    }
  }
  if (n > kMaxRank) {
    return invalid(
        fmt::format("rank {} is more than the {} dimensions Strata supports", n, kMaxRank));
  }
  STRATA_ASSIGN_OR_RETURN(Index elements, CheckedNumElements(shape, "shape"));
  if (Index total; __builtin_mul_overflow(elements, Index{dtype().size()}, &total)) {
    return invalid(fmt::format("shape {} of {} holds more bytes than fit in int64 (2^63)",
                               ShapeToString(shape), dtype().name()));
  }
  STRATA_ASSIGN_OR_RETURN(Index chunk_elements, CheckedNumElements(chunk_shape, "chunk shape"));
  Index chunk_bytes;
  if (__builtin_mul_overflow(chunk_elements, Index{dtype().size()}, &chunk_bytes)) {
    return invalid(fmt::format("chunk shape {} of {} has more bytes than fit in int64",
                               ShapeToString(chunk_shape), dtype().name()));
  }
  if (fill_value.bytes.size() != static_cast<size_t>(dtype().size()) &&
      !(fill_value.is_null && fill_value.bytes.empty())) {
    return invalid(fmt::format("fill value has {} bytes but {} elements have {}",
                               fill_value.bytes.size(), dtype().name(), dtype().size()));
  }
  const std::vector<int>& transpose = encoding.transpose;
  if (!transpose.empty()) {
    std::vector<bool> seen(n, false);
    bool is_permutation = static_cast<int>(transpose.size()) == n;
    for (int axis : transpose) {
      if (!is_permutation) break;
      if (axis < 0 || axis >= n || seen[axis]) {
        is_permutation = false;
      } else {
        seen[axis] = true;
      }
    }
    if (!is_permutation) {
      return invalid(fmt::format("transpose ({}) is not a permutation of the {} axes",
                                 fmt::join(transpose, ","), n));
    }
  }
  const char sep = chunk_key_encoding.separator;
  if (sep != '.' && sep != '/') {
    return invalid(fmt::format("chunk key separator '{}' must be '.' or '/'", sep));
  }
  if (dimension_names.has_value() && static_cast<int>(dimension_names->size()) != n) {
    return invalid(
        fmt::format("{} dimension names for an array of rank {}", dimension_names->size(), n));
  }
  if (zarr_format == ZarrFormat::kV2) {
    if (chunk_key_encoding.kind != ChunkKeyEncoding::Kind::kV2) {
      return invalid("Zarr v2 arrays use the v2 chunk key encoding (\"0.1\"), not \"c/0/1\"");
    }
    if (!transpose.empty()) {
      for (int i = 0; i < n; ++i) {
        if (transpose[i] != n - 1 - i) {
          return invalid(
              fmt::format("Zarr v2 stores chunks in C or F order only, not transpose ({})",
                          fmt::join(transpose, ",")));
        }
      }
    }
    // Several bytes codecs are written as filters plus a compressor.
    for (const BytesCodecSpec& codec : encoding.bytes_codecs) {
      if (const auto* blosc = std::get_if<BloscSpec>(&codec);
          blosc != nullptr && blosc->typesize != 0 && blosc->typesize != dtype().size()) {
        return invalid(
            fmt::format("Zarr v2 blosc shuffles by the element size ({}), not typesize {}",
                        dtype().size(), blosc->typesize));
      }
    }
  }
  if (sharding) {
    const Shape& inner = sharding->inner_chunk_shape;
    if (zarr_format != ZarrFormat::kV3) return invalid("sharding needs Zarr v3");
    if (static_cast<int>(inner.size()) != n) {
      return invalid(fmt::format("inner chunk shape {} has rank {}, the array {}",
                                 ShapeToString(inner), inner.size(), n));
    }
    for (int i = 0; i < n; ++i) {
      if (inner[i] < 1 || chunk_shape[i] % inner[i] != 0) {
        return invalid(fmt::format("the inner chunk shape {} must divide the shard shape {}",
                                   ShapeToString(inner), ShapeToString(chunk_shape)));
      }
    }
    if (sharding->inner_encoding.dtype != dtype()) {
      return invalid("the inner chunks of a shard have the array's data type");
    }
    if (!encoding.transpose.empty() || !encoding.bytes_codecs.empty()) {
      return invalid("a sharded array keeps its codecs inside the sharding codec");
    }
    const std::vector<int>& inner_transpose = sharding->inner_encoding.transpose;
    if (!inner_transpose.empty()) {
      std::vector<bool> seen(n, false);
      bool ok = static_cast<int>(inner_transpose.size()) == n;
      for (int axis : inner_transpose) {
        ok = ok && axis >= 0 && axis < n && !seen[axis];
        if (ok) seen[axis] = true;
      }
      if (!ok) return invalid("the inner transpose is not a permutation of the axes");
    }
    // Shards with more inner chunks than this make an index larger than a
    // task should hold (16 bytes each).
    STRATA_ASSIGN_OR_RETURN(Index per_shard, CheckedNumElements(chunk_shape, "shard shape"));
    Index inner_elements = NumElements(inner);
    if (per_shard / inner_elements > (Index{1} << 26)) {
      return invalid(fmt::format("shards of {} hold {} inner chunks of {}, more than 2^26",
                                 ShapeToString(chunk_shape), per_shard / inner_elements,
                                 ShapeToString(inner)));
    }
  }
  Result<OrderedJson> attributes = ParseAttributes(attributes_json, Doc{"attributes"});
  if (!attributes.ok()) return attributes.status();
  return Status::Ok();
}

std::vector<std::pair<std::string, std::string>> ArrayMetadata::Encode() const {
  return zarr_format == ZarrFormat::kV2 ? EncodeV2Array(*this) : EncodeV3Array(*this);
}

std::vector<std::pair<std::string, std::string>> GroupMetadata::Encode() const {
  std::vector<std::pair<std::string, std::string>> documents;
  if (zarr_format == ZarrFormat::kV2) {
    documents.emplace_back(std::string(kZgroupKey),
                           DumpLikeZarrPython(SortedJson{{"zarr_format", 2}}));
    SortedJson attributes = AttributesForEncode<SortedJson>(attributes_json);
    if (!attributes.empty()) {
      documents.emplace_back(std::string(kZattrsKey), DumpLikeZarrPython(std::move(attributes)));
    }
    return documents;
  }
  OrderedJson zarr = OrderedJson::object();
  zarr["zarr_format"] = 3;
  zarr["node_type"] = "group";
  zarr["attributes"] = AttributesForEncode<OrderedJson>(attributes_json);
  documents.emplace_back(
      std::string(kZarrJsonKey),
      RestoreRawText(zarr.dump(2, ' ', false, nlohmann::json::error_handler_t::replace)));
  return documents;
}

namespace {

std::string DescribeChunkEncoding(const ArrayMetadata& metadata, const ChunkEncoding& encoding) {
  std::vector<std::string> parts;
  if (!encoding.transpose.empty()) parts.push_back(DescribeTranspose(encoding.transpose));
  // v3 always names its array -> bytes codec; v2 only when it is not the
  // native byte order.
  if (metadata.zarr_format == ZarrFormat::kV3 ||
      (encoding.endian == Endian::kBig && metadata.dtype().component_size() > 1)) {
    parts.push_back(fmt::format("bytes({})", EndianName(encoding.endian)));
  }
  for (const BytesCodecSpec& codec : encoding.bytes_codecs) parts.push_back(DescribeCodec(codec));
  if (parts.empty()) return "none";
  return fmt::format("{}", fmt::join(parts, " -> "));
}

}  // namespace

std::string DescribeEncoding(const ArrayMetadata& metadata) {
  if (!metadata.sharding) return DescribeChunkEncoding(metadata, metadata.encoding);
  const ShardingSpec& s = *metadata.sharding;
  return fmt::format("sharding_indexed(inner chunks {}: {}; index at {}{}{})",
                     ShapeToString(s.inner_chunk_shape),
                     DescribeChunkEncoding(metadata, s.inner_encoding),
                     s.index_at_end ? "end" : "start", s.index_crc32c ? ", crc32c" : "",
                     s.index_endian == Endian::kBig ? ", big-endian" : "");
}

Result<std::string> EditAttributes(std::string_view attributes_json, std::string_view key,
                                   std::optional<std::string_view> value_json) {
  return NoThrow<std::string>("attributes", [&]() -> Result<std::string> {
    STRATA_ASSIGN_OR_RETURN(OrderedJson attributes,
                            ParseAttributes(attributes_json, Doc{"attributes"}));
    if (value_json) {
      STRATA_ASSIGN_OR_RETURN(OrderedJson value, ParseJson(*value_json, Doc{"attribute value"}));
      attributes[std::string(key)] = std::move(value);
    } else {
      attributes.erase(std::string(key));
    }
    return DumpCompact(attributes);
  });
}

}  // namespace strata
