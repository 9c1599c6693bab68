// The pieces that parse and write Zarr metadata (metadata.h), one family per
// file:
//   metadata_internal.cc  typed field readers, extension objects, attributes
//   fill_value.cc         v2 and v3 fill values (and MakeFillValue)
//   numcodecs_json.cc     numcodecs codecs: the v2 compressor and filters, and
//                         v3 "numcodecs.<id>" configurations
//   v3_codecs.cc          the v3 "codecs" list, sharding_indexed included
//   v2_metadata.cc        .zarray / .zgroup
//   v3_metadata.cc        zarr.json, the v3 data types
//   consolidated.cc       .zmetadata and v3 inline consolidated metadata
//   metadata.cc           ArrayMetadata itself: chunk keys, Validate, Encode
// JSON quirks (Python's NaN literals and float spelling) are json_util.h's.
//
// Parsers take the Doc being parsed for their messages and return
// InvalidArgument naming the field; nothing here throws (NoThrow wraps each
// public parse).
//
// Thread-safety: free functions over values.
#ifndef STRATA_STORAGE_ZARR_METADATA_INTERNAL_H_
#define STRATA_STORAGE_ZARR_METADATA_INTERNAL_H_

#include <fmt/format.h>

#include <cstdint>
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "strata/base/status.h"
#include "strata/storage/zarr/json_util.h"
#include "strata/storage/zarr/metadata.h"

namespace strata::internal_zarr {

// Keys kept in document order: zarr.json is written in the spec's order and
// attributes keep the user's order.
using OrderedJson = nlohmann::ordered_json;
// Keys sorted: what Python's json.dumps(sort_keys=True) produces, for .zarray,
// .zattrs and .zgroup.
using SortedJson = nlohmann::json;

// Metadata documents as (key, text) pairs, as ArrayMetadata::Encode returns them.
using Documents = std::vector<std::pair<std::string, std::string>>;

// The document being parsed, for error messages: ".zarray", "zarr.json".
struct Doc {
  std::string_view name;

  template <typename... Args>
  Status Invalid(fmt::format_string<Args...> format, Args&&... args) const {
    return InvalidArgumentError(
        fmt::format("invalid {}: {}", name, fmt::format(format, std::forward<Args>(args)...)));
  }
  Status Missing(std::string_view field) const {
    return Invalid("missing required field '{}'", field);
  }
};

// ParsePythonJson naming `doc`.
inline Result<OrderedJson> ParseJson(std::string_view text, const Doc& doc) {
  return ParsePythonJson(text, doc.name);
}

// Runs `body`, turning any exception that escapes it (there should be none)
// into an error, so that nothing throws out of the metadata parsers.
template <typename T, typename F>
Result<T> NoThrow(std::string_view doc_name, F&& body) {
  try {
    return body();
  } catch (const std::exception& e) {
    return InvalidArgumentError(fmt::format("invalid {}: {}", doc_name, e.what()));
  }
}

// ---------------------------------------------------------------------------
// Typed field readers (metadata_internal.cc). `field` names the member in
// messages.

const OrderedJson* Find(const OrderedJson& object, std::string_view key);
Result<const OrderedJson*> Require(const OrderedJson& object, std::string_view key,
                                   const Doc& doc);
// The value of an integer JSON number, or nullopt when it is not one (floats,
// even integral ones, are not integers here).
std::optional<int64_t> AsInt64(const OrderedJson& value);
Result<int64_t> ReadInt(const OrderedJson& value, std::string_view field, int64_t lo, int64_t hi,
                        const Doc& doc);
Result<std::string> ReadString(const OrderedJson& value, std::string_view field, const Doc& doc);
Result<bool> ReadBool(const OrderedJson& value, std::string_view field, const Doc& doc);
// A list of integers >= min_value ("shape" 0, chunk shapes 1).
Result<Shape> ReadIndexList(const OrderedJson& value, std::string_view field, Index min_value,
                            const Doc& doc);
// Checks that `object` (a codec configuration, a compressor) has no keys
// outside `known`.
Status CheckKnownKeys(const OrderedJson& object, std::initializer_list<std::string_view> known,
                      std::string_view what, const Doc& doc);

// A v3 extension point value: {"name": ..., "configuration": {...}} or the
// short-hand name string.
struct NamedConfiguration {
  std::string name;
  OrderedJson configuration = OrderedJson::object();
};
Result<NamedConfiguration> ReadNamedConfiguration(const OrderedJson& value, std::string_view field,
                                                  const Doc& doc);

// What a variable-length data type holds, by its v3 name (zarr-python 3's
// default for str is "string"; earlier releases wrote
// "variable_length_utf8") or its v2 object codec ("vlen-utf8" ...); empty
// for anything else.
std::string_view VariableLengthKind(std::string_view name);
// Strata's chunks hold fixed-size elements only: an array of
// variable-length strings (or other objects) is refused in one message that
// names its data type (`dtype`, as the document spells it) and what it holds.
Status RefuseVariableLength(std::string_view dtype, std::string_view what, const Doc& doc);

// Checks that `text` is a JSON object; returns it parsed.
Result<OrderedJson> ParseAttributes(std::string_view text, const Doc& doc);

// `attributes_json` parsed; CHECK-fails on text that Validate() refuses.
template <typename J>
J AttributesForEncode(const std::string& attributes_json) {
  Result<OrderedJson> parsed = ParseAttributes(attributes_json, Doc{"attributes"});
  STRATA_CHECK(parsed.ok()) << "Encode() of metadata whose attributes_json is invalid (call "
                               "Validate() first): "
                            << parsed.status().ToString();
  if constexpr (std::is_same_v<J, OrderedJson>) {
    return *parsed;
  } else {
    return J(*parsed);
  }
}

// ---------------------------------------------------------------------------
// Fill values (fill_value.cc).

Result<FillValue> ParseFillValue(const OrderedJson& value, DType dtype, ZarrFormat format,
                                 const Doc& doc);
// J is OrderedJson (v3) or SortedJson (v2).
template <typename J>
J FillValueToJson(const FillValue& fill, DType dtype, ZarrFormat format);

// ---------------------------------------------------------------------------
// numcodecs codecs (numcodecs_json.cc).

Status CheckBloscCname(const std::string& cname, const Doc& doc);
// Whether ParseNumcodecsCodec reads the numcodecs codec `id`.
bool ReadsNumcodecsCodec(std::string_view id);
// A numcodecs codec Strata does not read, refused by its name wherever it
// sits (a v2 compressor or filter, a v3 "numcodecs.<id>" codec of any
// stage), before anything about its place or configuration is checked: the
// message names the codec, not a symptom of it.
// `name`: as the document spells it ("pcodec" in v2, "numcodecs.pcodec" in
// v3); empty: the id.
Status RefuseNumcodecsCodec(std::string_view id, std::string_view field, const Doc& doc,
                            std::string_view name = {});
// A numcodecs codec from its configuration object (the v2 "compressor" or a
// "filters" entry, with its "id"; or the configuration of a v3
// "numcodecs.<id>" codec with the id added), with numcodecs' defaults for
// absent keys (numcodecs builds the codec as Codec(**config)). `field` names
// the object in messages ("compressor", "filters[0]", "codecs[1]").
Result<BytesCodecSpec> ParseNumcodecsCodec(const OrderedJson& value, std::string_view field,
                                           const Doc& doc);
// BloscSpec spells "the element size" as typesize 0, so that the same codec
// read from v2 (where typesize is implicit) and v3 compares equal.
void NormalizeBloscTypesize(ChunkEncoding& encoding);
Result<std::optional<BytesCodecSpec>> ParseV2Compressor(const OrderedJson& value, const Doc& doc);
// The numcodecs configuration of `codec`, "id" included (v2 compressors and
// filters; v3 "numcodecs.*" codecs drop the id). J is OrderedJson or SortedJson.
template <typename J>
J NumcodecsConfigToJson(const BytesCodecSpec& codec);

// ---------------------------------------------------------------------------
// Zarr v3 codecs (v3_codecs.cc).

// Parses "codecs" into `encoding` (transpose, endian, bytes codecs), or, for
// a "sharding_indexed" array -> bytes codec, into `*sharding` (null while
// parsing the inner codecs: nested sharding is refused). `where` is the
// field path for messages ("codecs", "codecs[0].configuration.codecs").
Status ParseV3Codecs(const OrderedJson& value, int rank, ChunkEncoding& encoding, const Doc& doc,
                     std::optional<ShardingSpec>* sharding = nullptr,
                     std::string_view where = "codecs");
// The v3 "codecs" list of `encoding`: transpose, bytes, bytes -> bytes codecs.
OrderedJson V3CodecsToJson(const ChunkEncoding& encoding);
// The v3 "codecs" list of a sharded array: one sharding_indexed codec.
OrderedJson ShardedCodecsToJson(const ShardingSpec& sharding);

// ---------------------------------------------------------------------------
// The documents of each format (v2_metadata.cc, v3_metadata.cc).

Documents EncodeV2Array(const ArrayMetadata& metadata);
Documents EncodeV3Array(const ArrayMetadata& metadata);

}  // namespace strata::internal_zarr

#endif  // STRATA_STORAGE_ZARR_METADATA_INTERNAL_H_
