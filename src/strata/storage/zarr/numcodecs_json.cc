// numcodecs codecs in Zarr metadata: the v2 compressor and filters, and the
// configuration of v3 "numcodecs.<id>" codecs (metadata_internal.h).
#include "strata/storage/zarr/metadata_internal.h"

#include <algorithm>
#include <limits>
#include <type_traits>
#include <variant>

namespace strata::internal_zarr {
namespace {

constexpr std::string_view kBloscCnames[] = {"lz4", "lz4hc", "blosclz", "zstd", "zlib"};

// The numcodecs codecs Strata reads (ParseNumcodecsCodec).
constexpr std::string_view kNumcodecsRead[] = {"blosc", "zstd",    "zlib",    "gzip",
                                               "bz2",   "lz4",     "crc32",   "adler32",
                                               "crc32c", "fletcher32", "shuffle"};

}  // namespace

Status CheckBloscCname(const std::string& cname, const Doc& doc) {
  if (std::find(std::begin(kBloscCnames), std::end(kBloscCnames), cname) ==
      std::end(kBloscCnames)) {
    return doc.Invalid("unsupported blosc cname '{}' (expected lz4, lz4hc, blosclz, zstd or zlib)",
                       cname);
  }
  return Status::Ok();
}

bool ReadsNumcodecsCodec(std::string_view id) {
  return std::find(std::begin(kNumcodecsRead), std::end(kNumcodecsRead), id) !=
         std::end(kNumcodecsRead);
}

// A numcodecs codec Strata does not read, refused by its name wherever it
// sits (a v2 compressor or filter, a v3 "numcodecs.<id>" codec of any
// stage), before anything about its place or configuration is checked: the
// message names the codec, not a symptom of it.
// `name`: as the document spells it ("pcodec" in v2, "numcodecs.pcodec" in
// v3); empty: the id.
Status RefuseNumcodecsCodec(std::string_view id, std::string_view field, const Doc& doc,
                            std::string_view name) {
  std::string_view kind = "";
  if (id == "delta" || id == "fixedscaleoffset" || id == "bitround" || id == "quantize" ||
      id == "packbits" || id == "categorize" || id == "astype" || id == "bitshuffle") {
    kind = "an array filter: ";
  } else if (id == "pcodec" || id == "zfpy" || id == "zfp") {
    kind = "a numeric compressor: ";
  }
  return InvalidArgumentError(fmt::format(
      "codec '{}' is not supported ({}{} in {}; Strata reads the numcodecs codecs blosc, zstd, "
      "zlib, gzip, bz2, lz4, crc32, adler32, crc32c, fletcher32 and shuffle)",
      name.empty() ? id : name, kind, field, doc.name));
}

// A numcodecs codec from its configuration object (the v2 "compressor" or a
// "filters" entry, with its "id"; or the configuration of a v3
// "numcodecs.<id>" codec with the id added), with numcodecs' defaults for
// absent keys (numcodecs builds the codec as Codec(**config)). `field` names
// the object in messages ("compressor", "filters[0]", "codecs[1]").
Result<BytesCodecSpec> ParseNumcodecsCodec(const OrderedJson& value, std::string_view field,
                                           const Doc& doc) {
  const OrderedJson* id_value = value.is_object() ? Find(value, "id") : nullptr;
  if (id_value == nullptr || !id_value->is_string()) {
    return doc.Invalid("'{}' must be an object with a string 'id', got {}", field, Excerpt(value));
  }
  const std::string id = id_value->get<std::string>();
  std::string what = fmt::format("{} '{}'", field, id);
  auto read_int = [&](std::string_view key, int64_t lo, int64_t hi,
                      int64_t fallback) -> Result<int64_t> {
    const OrderedJson* v = Find(value, key);
    if (v == nullptr || v->is_null()) return fallback;
    return ReadInt(*v, fmt::format("{}.{}", field, key), lo, hi, doc);
  };
  constexpr int64_t kIntMax = std::numeric_limits<int>::max();
  constexpr int64_t kIntMin = std::numeric_limits<int>::min();
  if (id == "blosc") {
    STRATA_RETURN_IF_ERROR(CheckKnownKeys(
        value, {"id", "cname", "clevel", "shuffle", "blocksize", "typesize"}, what, doc));
    BloscSpec spec;
    if (const OrderedJson* cname = Find(value, "cname")) {
      STRATA_ASSIGN_OR_RETURN(spec.cname, ReadString(*cname, fmt::format("{}.cname", field), doc));
      STRATA_RETURN_IF_ERROR(CheckBloscCname(spec.cname, doc));
    }
    STRATA_ASSIGN_OR_RETURN(spec.clevel, read_int("clevel", 0, 9, spec.clevel));
    STRATA_ASSIGN_OR_RETURN(spec.shuffle, read_int("shuffle", -1, 2, spec.shuffle));
    STRATA_ASSIGN_OR_RETURN(spec.blocksize, read_int("blocksize", 0, kIntMax, spec.blocksize));
    STRATA_ASSIGN_OR_RETURN(spec.typesize, read_int("typesize", 0, 255, spec.typesize));
    return BytesCodecSpec(spec);
  }
  if (id == "zstd") {
    // numcodecs >= 0.12 also writes "checksum".
    STRATA_RETURN_IF_ERROR(CheckKnownKeys(value, {"id", "level", "checksum"}, what, doc));
    ZstdSpec spec;
    STRATA_ASSIGN_OR_RETURN(spec.level, read_int("level", -131072, 22, spec.level));
    if (const OrderedJson* checksum = Find(value, "checksum")) {
      STRATA_ASSIGN_OR_RETURN(spec.checksum,
                              ReadBool(*checksum, fmt::format("{}.checksum", field), doc));
    }
    return BytesCodecSpec(spec);
  }
  if (id == "zlib" || id == "gzip" || id == "bz2") {
    STRATA_RETURN_IF_ERROR(CheckKnownKeys(value, {"id", "level"}, what, doc));
    if (id == "bz2") {
      Bz2Spec spec;
      STRATA_ASSIGN_OR_RETURN(spec.level, read_int("level", 1, 9, spec.level));
      return BytesCodecSpec(spec);
    }
    ZlibSpec spec;
    STRATA_ASSIGN_OR_RETURN(spec.level, read_int("level", 0, 9, spec.level));
    if (id == "gzip") return BytesCodecSpec(GzipSpec{spec.level});
    return BytesCodecSpec(spec);
  }
  if (id == "lz4") {
    STRATA_RETURN_IF_ERROR(CheckKnownKeys(value, {"id", "acceleration"}, what, doc));
    Lz4Spec spec;
    STRATA_ASSIGN_OR_RETURN(spec.acceleration,
                            read_int("acceleration", kIntMin, kIntMax, spec.acceleration));
    return BytesCodecSpec(spec);
  }
  if (id == "crc32" || id == "adler32" || id == "crc32c" || id == "fletcher32") {
    Checksum32Spec spec;
    spec.kind = id == "crc32"     ? Checksum32Spec::Kind::kCrc32
                : id == "adler32" ? Checksum32Spec::Kind::kAdler32
                : id == "crc32c"  ? Checksum32Spec::Kind::kCrc32c
                                  : Checksum32Spec::Kind::kFletcher32;
    spec.at_start = spec.kind == Checksum32Spec::Kind::kCrc32 ||
                    spec.kind == Checksum32Spec::Kind::kAdler32;
    if (spec.kind == Checksum32Spec::Kind::kFletcher32) {
      STRATA_RETURN_IF_ERROR(CheckKnownKeys(value, {"id"}, what, doc));
      return BytesCodecSpec(spec);
    }
    STRATA_RETURN_IF_ERROR(CheckKnownKeys(value, {"id", "location"}, what, doc));
    if (const OrderedJson* location = Find(value, "location");
        location != nullptr && !location->is_null()) {
      if (*location == "start") {
        spec.at_start = true;
      } else if (*location == "end") {
        spec.at_start = false;
      } else {
        return doc.Invalid("'{}.location' must be \"start\" or \"end\", got {}", field,
                           Excerpt(*location));
      }
    }
    return BytesCodecSpec(spec);
  }
  if (id == "shuffle") {
    STRATA_RETURN_IF_ERROR(CheckKnownKeys(value, {"id", "elementsize"}, what, doc));
    ShuffleSpec spec;
    STRATA_ASSIGN_OR_RETURN(spec.elementsize, read_int("elementsize", 0, 1 << 16, spec.elementsize));
    return BytesCodecSpec(spec);
  }
  return RefuseNumcodecsCodec(id, field, doc);
}

// BloscSpec spells "the element size" as typesize 0, so that the same codec
// read from v2 (where typesize is implicit) and v3 compares equal.
void NormalizeBloscTypesize(ChunkEncoding& encoding) {
  for (BytesCodecSpec& codec : encoding.bytes_codecs) {
    if (auto* blosc = std::get_if<BloscSpec>(&codec);
        blosc != nullptr && blosc->typesize == encoding.dtype.size()) {
      blosc->typesize = 0;
    }
  }
}

Result<std::optional<BytesCodecSpec>> ParseV2Compressor(const OrderedJson& value, const Doc& doc) {
  if (value.is_null()) return std::optional<BytesCodecSpec>();
  if (!value.is_object() || Find(value, "id") == nullptr) {
    return doc.Invalid("'compressor' must be null or an object with a string 'id', got {}",
                       Excerpt(value));
  }
  STRATA_ASSIGN_OR_RETURN(BytesCodecSpec spec, ParseNumcodecsCodec(value, "compressor", doc));
  return std::optional<BytesCodecSpec>(std::move(spec));
}

// The numcodecs configuration of `codec`, "id" included (v2 compressors and
// filters; v3 "numcodecs.*" codecs drop the id).
template <typename J>
J NumcodecsConfigToJson(const BytesCodecSpec& codec) {
  J j = J::object();
  j["id"] = std::string(CodecName(codec));
  std::visit(
      [&](const auto& spec) {
        using T = std::decay_t<decltype(spec)>;
        if constexpr (std::is_same_v<T, BloscSpec>) {
          j["cname"] = spec.cname;
          j["clevel"] = spec.clevel;
          j["shuffle"] = spec.shuffle;
          j["blocksize"] = spec.blocksize;
        } else if constexpr (std::is_same_v<T, ZstdSpec>) {
          j["level"] = spec.level;
          // numcodecs < 0.12 has no checksum argument and would refuse the key.
          if (spec.checksum) j["checksum"] = true;
        } else if constexpr (std::is_same_v<T, ZlibSpec> || std::is_same_v<T, GzipSpec> ||
                             std::is_same_v<T, Bz2Spec>) {
          j["level"] = spec.level;
        } else if constexpr (std::is_same_v<T, Lz4Spec>) {
          j["acceleration"] = spec.acceleration;
        } else if constexpr (std::is_same_v<T, Checksum32Spec>) {
          // numcodecs < 0.13 has no location argument: write it only when it
          // is not the default.
          const bool default_start = spec.kind == Checksum32Spec::Kind::kCrc32 ||
                                     spec.kind == Checksum32Spec::Kind::kAdler32;
          if (spec.kind != Checksum32Spec::Kind::kFletcher32 && spec.at_start != default_start) {
            j["location"] = spec.at_start ? "start" : "end";
          }
        } else if constexpr (std::is_same_v<T, ShuffleSpec>) {
          j["elementsize"] = spec.elementsize;
        } else {
          static_assert(std::is_same_v<T, Crc32cSpec>);
          // numcodecs.CRC32C (numcodecs >= 0.14): the checksum at the end,
          // the same bytes as Zarr v3's crc32c.
        }
      },
      codec);
  return j;
}

template OrderedJson NumcodecsConfigToJson<OrderedJson>(const BytesCodecSpec&);
template SortedJson NumcodecsConfigToJson<SortedJson>(const BytesCodecSpec&);

}  // namespace strata::internal_zarr
