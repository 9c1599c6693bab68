// The Zarr v3 "codecs" list: parsing into a ChunkEncoding (or a ShardingSpec
// for a sharding_indexed array -> bytes codec) and writing it back
// (metadata_internal.h). numcodecs adapters are numcodecs_json.cc's.
#include "strata/storage/zarr/metadata_internal.h"

#include <algorithm>
#include <limits>
#include <type_traits>
#include <variant>

namespace strata::internal_zarr {
namespace {

constexpr std::string_view kShuffleNames[] = {"noshuffle", "shuffle", "bitshuffle"};

Status ParseShardingCodec(const OrderedJson& config, std::string_view field, int rank,
                          DType dtype, const Doc& doc, ShardingSpec& out) {
  STRATA_RETURN_IF_ERROR(CheckKnownKeys(
      config, {"chunk_shape", "codecs", "index_codecs", "index_location"},
      "the configuration of codec 'sharding_indexed'", doc));
  const OrderedJson* chunk_shape = Find(config, "chunk_shape");
  if (chunk_shape == nullptr) return doc.Missing(fmt::format("{}.configuration.chunk_shape", field));
  STRATA_ASSIGN_OR_RETURN(
      out.inner_chunk_shape,
      ReadIndexList(*chunk_shape, "sharding_indexed.chunk_shape", 1, doc));
  if (static_cast<int>(out.inner_chunk_shape.size()) != rank) {
    return doc.Invalid("'sharding_indexed.chunk_shape' {} has {} axes, the array has {}",
                       Excerpt(*chunk_shape), out.inner_chunk_shape.size(), rank);
  }
  const OrderedJson* codecs = Find(config, "codecs");
  if (codecs == nullptr) return doc.Missing(fmt::format("{}.configuration.codecs", field));
  out.inner_encoding = ChunkEncoding{};
  out.inner_encoding.dtype = dtype;
  STRATA_RETURN_IF_ERROR(ParseV3Codecs(*codecs, rank, out.inner_encoding, doc, nullptr,
                                       fmt::format("{}.configuration.codecs", field)));
  // The index: uint64 (offset, nbytes) pairs through "bytes", optionally a
  // crc32c. (Compressing it is forbidden by the spec; anything else is not
  // something any writer produces.) Absent: zarr-python's default.
  out.index_endian = Endian::kLittle;
  out.index_crc32c = true;
  if (const OrderedJson* index_codecs = Find(config, "index_codecs")) {
    ChunkEncoding index;
    index.dtype = DTypeId::kUInt64;
    STRATA_RETURN_IF_ERROR(ParseV3Codecs(*index_codecs, rank + 1, index, doc, nullptr,
                                         fmt::format("{}.configuration.index_codecs", field)));
    const bool crc = index.bytes_codecs.size() == 1 &&
                     (std::holds_alternative<Crc32cSpec>(index.bytes_codecs[0]) ||
                      index.bytes_codecs[0] == BytesCodecSpec(Checksum32Spec{
                                                   Checksum32Spec::Kind::kCrc32c, false}));
    if (!index.transpose.empty() || !(index.bytes_codecs.empty() || crc)) {
      return InvalidArgumentError(fmt::format(
          "unsupported 'sharding_indexed.index_codecs' {} in {} (Strata reads a \"bytes\" "
          "index, optionally followed by \"crc32c\")",
          Excerpt(*index_codecs), doc.name));
    }
    out.index_endian = index.endian;
    out.index_crc32c = crc;
  }
  out.index_at_end = true;
  if (const OrderedJson* location = Find(config, "index_location")) {
    if (*location == "start") {
      out.index_at_end = false;
    } else if (*location != "end") {
      return doc.Invalid("'sharding_indexed.index_location' must be \"start\" or \"end\", got {}",
                         Excerpt(*location));
    }
  }
  return Status::Ok();
}

// The blosc shuffle Zarr v3 can spell: numcodecs' AUTOSHUFFLE (-1) resolved
// the way numcodecs resolves it.
int ResolvedShuffle(const BloscSpec& spec, int typesize) {
  if (spec.shuffle >= 0) return spec.shuffle;
  return typesize == 1 ? 2 : 1;
}

OrderedJson V3CodecToJson(const BytesCodecSpec& codec, DType dtype) {
  OrderedJson j = OrderedJson::object();
  OrderedJson config = OrderedJson::object();
  std::visit(
      [&](const auto& spec) {
        using T = std::decay_t<decltype(spec)>;
        if constexpr (std::is_same_v<T, BloscSpec>) {
          int typesize = spec.typesize > 0 ? spec.typesize : dtype.size();
          j["name"] = "blosc";
          config["cname"] = spec.cname;
          config["clevel"] = spec.clevel;
          config["shuffle"] = kShuffleNames[ResolvedShuffle(spec, typesize)];
          config["typesize"] = typesize;
          config["blocksize"] = spec.blocksize;
        } else if constexpr (std::is_same_v<T, ZstdSpec>) {
          j["name"] = "zstd";
          config["level"] = spec.level;
          config["checksum"] = spec.checksum;
        } else if constexpr (std::is_same_v<T, GzipSpec>) {
          j["name"] = "gzip";
          config["level"] = spec.level;
        } else if constexpr (std::is_same_v<T, Crc32cSpec>) {
          j["name"] = "crc32c";
        } else {
          // The codecs the v3 core spec does not define are written the way
          // zarr-python 3 writes them: "numcodecs.<id>" with numcodecs'
          // configuration minus its id.
          j["name"] = fmt::format("numcodecs.{}", CodecName(codec));
          config = NumcodecsConfigToJson<OrderedJson>(codec);
          config.erase("id");
          j["configuration"] = std::move(config);
          config = OrderedJson::object();
        }
      },
      codec);
  if (!config.empty()) j["configuration"] = std::move(config);
  return j;
}


}  // namespace

Status ParseV3Codecs(const OrderedJson& value, int rank, ChunkEncoding& encoding, const Doc& doc,
                     std::optional<ShardingSpec>* sharding, std::string_view where) {
  if (!value.is_array()) return doc.Invalid("'{}' must be a list, got {}", where, Excerpt(value));
  enum class Stage { kArrayToArray, kBytesToBytes };
  Stage stage = Stage::kArrayToArray;
  bool have_transpose = false;
  bool sharded = false;
  for (size_t i = 0; i < value.size(); ++i) {
    std::string field = fmt::format("{}[{}]", where, i);
    STRATA_ASSIGN_OR_RETURN(NamedConfiguration codec, ReadNamedConfiguration(value[i], field, doc));
    const OrderedJson& config = codec.configuration;
    const std::string what = fmt::format("the configuration of codec '{}'", codec.name);
    auto require = [&](std::string_view key) -> Result<const OrderedJson*> {
      const OrderedJson* v = Find(config, key);
      if (v == nullptr) {
        return doc.Invalid("codec '{}' is missing its configuration '{}'", codec.name, key);
      }
      return v;
    };
    auto key_name = [&](std::string_view key) { return fmt::format("{}.{}", codec.name, key); };
    auto must_follow_bytes = [&]() -> Status {
      if (stage != Stage::kBytesToBytes) {
        return doc.Invalid("codec '{}' must come after the 'bytes' codec", codec.name);
      }
      if (sharded) {
        // A codec over the whole shard would hide its index from partial reads.
        return InvalidArgumentError(fmt::format(
            "unsupported codec '{}' after 'sharding_indexed' in {} (Strata reads shards whose "
            "index and inner chunks are stored as they are)",
            codec.name, doc.name));
      }
      return Status::Ok();
    };
    if (codec.name == "transpose") {
      if (stage != Stage::kArrayToArray) {
        return doc.Invalid("codec 'transpose' must come before the 'bytes' codec");
      }
      if (have_transpose) return doc.Invalid("Strata supports at most one 'transpose' codec");
      have_transpose = true;
      STRATA_RETURN_IF_ERROR(CheckKnownKeys(config, {"order"}, what, doc));
      STRATA_ASSIGN_OR_RETURN(const OrderedJson* order, require("order"));
      std::vector<int> permutation;
      std::vector<bool> seen(rank, false);
      if (*order == "C" || *order == "F") {
        // An early draft of the transpose codec (zarrita, zarr-python 3
        // alphas) spelled the two classic orders as "C" and "F".
        if (*order == "F") {
          for (int i = rank - 1; i >= 0; --i) permutation.push_back(i);
        }
        encoding.transpose = std::move(permutation);
        continue;
      }
      bool ok = order->is_array() && static_cast<int>(order->size()) == rank;
      if (ok) {
        for (const OrderedJson& axis : *order) {
          std::optional<int64_t> a = AsInt64(axis);
          if (!a.has_value() || *a < 0 || *a >= rank || seen[*a]) {
            ok = false;
            break;
          }
          seen[*a] = true;
          permutation.push_back(static_cast<int>(*a));
        }
      }
      if (!ok) {
        return doc.Invalid("'transpose.order' must be a permutation of the {} axes [0, {}), got {}",
                           rank, rank, Excerpt(*order));
      }
      encoding.transpose = std::move(permutation);
    } else if (codec.name == "sharding_indexed") {
      if (sharding == nullptr) {
        return InvalidArgumentError(fmt::format(
            "unsupported nested 'sharding_indexed' in {} of {} (Strata reads one level of "
            "sharding)",
            where, doc.name));
      }
      if (stage != Stage::kArrayToArray) {
        return doc.Invalid("'codecs' must contain exactly one array -> bytes codec, found "
                           "'sharding_indexed' after another");
      }
      if (have_transpose) {
        return InvalidArgumentError(fmt::format(
            "unsupported 'transpose' before 'sharding_indexed' in {} (put it in the inner codecs)",
            doc.name));
      }
      stage = Stage::kBytesToBytes;
      sharded = true;
      ShardingSpec spec;
      STRATA_RETURN_IF_ERROR(
          ParseShardingCodec(codec.configuration, field, rank, encoding.dtype, doc, spec));
      *sharding = std::move(spec);
    } else if (codec.name == "bytes") {
      if (stage != Stage::kArrayToArray) {
        return doc.Invalid("'codecs' must contain exactly one 'bytes' codec, found a second one");
      }
      stage = Stage::kBytesToBytes;
      STRATA_RETURN_IF_ERROR(CheckKnownKeys(config, {"endian"}, what, doc));
      if (const OrderedJson* endian = Find(config, "endian")) {
        STRATA_ASSIGN_OR_RETURN(std::string e, ReadString(*endian, "bytes.endian", doc));
        if (e == "little") {
          encoding.endian = Endian::kLittle;
        } else if (e == "big") {
          encoding.endian = Endian::kBig;
        } else {
          return doc.Invalid("'bytes.endian' must be \"little\" or \"big\", got {}",
                             Excerpt(*endian));
        }
      } else if (encoding.dtype.component_size() > 1) {
        return doc.Invalid("codec 'bytes' needs 'endian' for the multi-byte data type {}",
                           encoding.dtype.ToString());
      }
    } else if (codec.name == "blosc") {
      STRATA_RETURN_IF_ERROR(must_follow_bytes());
      STRATA_RETURN_IF_ERROR(CheckKnownKeys(
          config, {"cname", "clevel", "shuffle", "typesize", "blocksize"}, what, doc));
      BloscSpec spec;
      STRATA_ASSIGN_OR_RETURN(const OrderedJson* cname, require("cname"));
      STRATA_ASSIGN_OR_RETURN(spec.cname, ReadString(*cname, "blosc.cname", doc));
      STRATA_RETURN_IF_ERROR(CheckBloscCname(spec.cname, doc));
      STRATA_ASSIGN_OR_RETURN(const OrderedJson* clevel, require("clevel"));
      STRATA_ASSIGN_OR_RETURN(spec.clevel, ReadInt(*clevel, "blosc.clevel", 0, 9, doc));
      STRATA_ASSIGN_OR_RETURN(const OrderedJson* shuffle, require("shuffle"));
      auto shuffle_it = shuffle->is_string()
                            ? std::find(std::begin(kShuffleNames), std::end(kShuffleNames),
                                        shuffle->get_ref<const std::string&>())
                            : std::end(kShuffleNames);
      if (shuffle_it == std::end(kShuffleNames)) {
        return doc.Invalid(
            "'blosc.shuffle' must be \"noshuffle\", \"shuffle\" or \"bitshuffle\", got {}",
            Excerpt(*shuffle));
      }
      spec.shuffle = static_cast<int>(shuffle_it - std::begin(kShuffleNames));
      if (const OrderedJson* typesize = Find(config, "typesize")) {
        STRATA_ASSIGN_OR_RETURN(spec.typesize, ReadInt(*typesize, "blosc.typesize", 1, 255, doc));
        // BloscSpec spells "the element size" as 0, so that the same codec
        // read from v2 (where typesize is implicit) and v3 compares equal.
        if (spec.typesize == encoding.dtype.size()) spec.typesize = 0;
      } else if (spec.shuffle != 0) {
        return doc.Invalid("codec 'blosc' needs 'typesize' unless shuffle is \"noshuffle\"");
      }
      if (const OrderedJson* blocksize = Find(config, "blocksize")) {
        STRATA_ASSIGN_OR_RETURN(spec.blocksize, ReadInt(*blocksize, "blosc.blocksize", 0,
                                                        std::numeric_limits<int>::max(), doc));
      }
      encoding.bytes_codecs.push_back(spec);
    } else if (codec.name == "gzip") {
      STRATA_RETURN_IF_ERROR(must_follow_bytes());
      STRATA_RETURN_IF_ERROR(CheckKnownKeys(config, {"level"}, what, doc));
      GzipSpec spec;
      STRATA_ASSIGN_OR_RETURN(const OrderedJson* level, require("level"));
      STRATA_ASSIGN_OR_RETURN(spec.level, ReadInt(*level, key_name("level"), 0, 9, doc));
      encoding.bytes_codecs.push_back(spec);
    } else if (codec.name == "zstd") {
      STRATA_RETURN_IF_ERROR(must_follow_bytes());
      STRATA_RETURN_IF_ERROR(CheckKnownKeys(config, {"level", "checksum"}, what, doc));
      ZstdSpec spec;
      STRATA_ASSIGN_OR_RETURN(const OrderedJson* level, require("level"));
      STRATA_ASSIGN_OR_RETURN(spec.level, ReadInt(*level, key_name("level"), -131072, 22, doc));
      if (const OrderedJson* checksum = Find(config, "checksum")) {
        STRATA_ASSIGN_OR_RETURN(spec.checksum, ReadBool(*checksum, key_name("checksum"), doc));
      }
      encoding.bytes_codecs.push_back(spec);
    } else if (codec.name == "crc32c") {
      STRATA_RETURN_IF_ERROR(must_follow_bytes());
      STRATA_RETURN_IF_ERROR(CheckKnownKeys(config, {}, what, doc));
      encoding.bytes_codecs.push_back(Crc32cSpec{});
    } else if (codec.name.rfind("numcodecs.", 0) == 0) {
      // zarr-python 3's numcodecs adapters: {"name": "numcodecs.zlib",
      // "configuration": {"level": 1}}, the configuration being numcodecs'
      // own minus its id. Only bytes -> bytes ones exist here.
      const std::string id = codec.name.substr(std::string_view("numcodecs.").size());
      // pcodec and zfpy stand where 'bytes' does, delta before it: their
      // name is the error, not their place.
      if (!ReadsNumcodecsCodec(id)) return RefuseNumcodecsCodec(id, field, doc, codec.name);
      STRATA_RETURN_IF_ERROR(must_follow_bytes());
      OrderedJson numcodecs_config = config;
      if (const OrderedJson* given = Find(config, "id"); given != nullptr && *given != id) {
        return doc.Invalid("codec '{}' has a configuration 'id' {}", codec.name, Excerpt(*given));
      }
      numcodecs_config["id"] = id;
      STRATA_ASSIGN_OR_RETURN(BytesCodecSpec spec,
                              ParseNumcodecsCodec(numcodecs_config, field, doc));
      encoding.bytes_codecs.push_back(std::move(spec));
    } else {
      return InvalidArgumentError(fmt::format(
          "codec '{}' is not supported ({} in {}; Strata supports transpose, bytes, blosc, "
          "gzip, zstd, crc32c, sharding_indexed and numcodecs.{{blosc, zstd, zlib, gzip, bz2, "
          "lz4, crc32, adler32, crc32c, fletcher32, shuffle}})",
          codec.name, field, doc.name));
    }
  }
  if (stage != Stage::kBytesToBytes) {
    return doc.Invalid(
        "'{}' must contain exactly one 'bytes' codec (the array -> bytes "
        "codec), got {}",
        where, Excerpt(value));
  }
  return Status::Ok();
}

// The v3 "codecs" list of `encoding`: transpose, bytes, bytes -> bytes codecs.
OrderedJson V3CodecsToJson(const ChunkEncoding& encoding) {
  OrderedJson codecs = OrderedJson::array();
  if (!encoding.transpose.empty()) {
    codecs.push_back({{"name", "transpose"}, {"configuration", {{"order", encoding.transpose}}}});
  }
  OrderedJson bytes = {{"name", "bytes"}};
  if (encoding.dtype.component_size() > 1) {
    bytes["configuration"] = {{"endian", std::string(EndianName(encoding.endian))}};
  }
  codecs.push_back(std::move(bytes));
  for (const BytesCodecSpec& codec : encoding.bytes_codecs) {
    codecs.push_back(V3CodecToJson(codec, encoding.dtype));
  }
  return codecs;
}

// An unknown top-level key is allowed only as an object saying

OrderedJson ShardedCodecsToJson(const ShardingSpec& sharding) {
  OrderedJson index_codecs = OrderedJson::array();
  index_codecs.push_back(
      {{"name", "bytes"},
       {"configuration", {{"endian", std::string(EndianName(sharding.index_endian))}}}});
  if (sharding.index_crc32c) index_codecs.push_back({{"name", "crc32c"}});
  OrderedJson config = {{"chunk_shape", sharding.inner_chunk_shape},
                        {"codecs", V3CodecsToJson(sharding.inner_encoding)},
                        {"index_codecs", std::move(index_codecs)},
                        {"index_location", sharding.index_at_end ? "end" : "start"}};
  OrderedJson codecs = OrderedJson::array();
  codecs.push_back({{"name", "sharding_indexed"}, {"configuration", std::move(config)}});
  return codecs;
}

}  // namespace strata::internal_zarr
