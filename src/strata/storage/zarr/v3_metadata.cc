// Zarr v3 documents: zarr.json of arrays and groups, and the v3 data types
// (metadata.h).
#include "strata/storage/zarr/metadata_internal.h"

#include <algorithm>

namespace strata::internal_zarr {
namespace {

// A v3 data_type: a name ("float64", "float16"), or one of zarr-python 3's
// fixed-length types, {"name": "fixed_length_utf32" | "null_terminated_bytes"
// | "raw_bytes", "configuration": {"length_bytes": N}}.
Result<DType> ParseV3DataType(const OrderedJson& value, const Doc& doc) {
  constexpr std::string_view kSupported =
      "Strata supports bool, integers, float16/32/64, complex64/128, fixed_length_utf32, "
      "null_terminated_bytes and raw_bytes";
  if (value.is_string()) {
    const std::string& name = value.get_ref<const std::string&>();
    if (std::string_view what = VariableLengthKind(name); !what.empty()) {
      return RefuseVariableLength(fmt::format("data_type '{}'", name), what, doc);
    }
    // numpy's "S7"/"U13"/"V8" spellings are not v3 names.
    Result<DType> dtype = ParseDTypeName(name);
    if (!dtype.ok() || dtype->is_fixed_length()) {
      return InvalidArgumentError(
          fmt::format("unsupported data_type '{}' in {} ({})", name, doc.name, kSupported));
    }
    return *dtype;
  }
  const OrderedJson* name = value.is_object() ? Find(value, "name") : nullptr;
  if (name == nullptr || !name->is_string()) {
    return doc.Invalid("'data_type' must be a name or an object with a string 'name', got {}",
                       Excerpt(value));
  }
  STRATA_ASSIGN_OR_RETURN(NamedConfiguration type,
                          ReadNamedConfiguration(value, "data_type", doc));
  const bool unicode = type.name == "fixed_length_utf32";
  if (!unicode && type.name != "null_terminated_bytes" && type.name != "raw_bytes") {
    return InvalidArgumentError(fmt::format("unsupported data_type {} in {} ({})", Excerpt(value),
                                            doc.name, kSupported));
  }
  STRATA_RETURN_IF_ERROR(CheckKnownKeys(type.configuration, {"length_bytes"},
                                        "'data_type.configuration'", doc));
  const OrderedJson* length = Find(type.configuration, "length_bytes");
  if (length == nullptr) return doc.Missing("data_type.configuration.length_bytes");
  const int64_t max_bytes = int64_t{DType::kMaxLength} * (unicode ? 4 : 1);
  STRATA_ASSIGN_OR_RETURN(int64_t bytes, ReadInt(*length, "data_type.configuration.length_bytes",
                                                 1, max_bytes, doc));
  if (unicode) {
    if (bytes % 4 != 0) {
      return doc.Invalid("fixed_length_utf32 'length_bytes' {} is not a multiple of 4", bytes);
    }
    return DType::FixedUnicode(static_cast<int>(bytes / 4));
  }
  return type.name == "raw_bytes" ? DType::RawBytes(static_cast<int>(bytes))
                                  : DType::FixedBytes(static_cast<int>(bytes));
}

// The v3 data_type JSON of `dtype`.
OrderedJson V3DataTypeToJson(DType dtype) {
  if (!dtype.is_fixed_length()) return OrderedJson(std::string(dtype.name()));
  return OrderedJson{{"name", std::string(dtype.name())},
                     {"configuration", {{"length_bytes", dtype.size()}}}};
}

// An unknown top-level key is allowed only as an object saying
// "must_understand": false (v3 core, "Extensions").
Status CheckV3ExtensionField(const std::string& key, const OrderedJson& value, const Doc& doc) {
  if (value.is_object()) {
    const OrderedJson* must_understand = Find(value, "must_understand");
    if (must_understand != nullptr && must_understand->is_boolean() &&
        !must_understand->get<bool>()) {
      return Status::Ok();
    }
  }
  return InvalidArgumentError(fmt::format(
      "unsupported field '{}' in {}: unknown fields must be objects with \"must_understand\": "
      "false",
      key, doc.name));
}

// zarr_format and node_type of a v3 document; `expected_node_type` decides
// which of "array"/"group" is a FailedPrecondition.
Status CheckV3Header(const OrderedJson& root, std::string_view expected_node_type, const Doc& doc) {
  if (!root.is_object()) return doc.Invalid("expected a JSON object, got {}", Excerpt(root));
  STRATA_ASSIGN_OR_RETURN(const OrderedJson* zarr_format, Require(root, "zarr_format", doc));
  if (AsInt64(*zarr_format) != 3) {
    return doc.Invalid("'zarr_format' must be 3, got {}", Excerpt(*zarr_format));
  }
  STRATA_ASSIGN_OR_RETURN(const OrderedJson* node_type_value, Require(root, "node_type", doc));
  STRATA_ASSIGN_OR_RETURN(std::string node_type, ReadString(*node_type_value, "node_type", doc));
  if (node_type != "array" && node_type != "group") {
    return doc.Invalid("'node_type' must be \"array\" or \"group\", got {}",
                       Excerpt(*node_type_value));
  }
  if (node_type != expected_node_type) {
    return FailedPreconditionError(fmt::format("{} describes {}, not {}", doc.name,
                                               node_type == "group" ? "a group" : "an array",
                                               node_type == "group" ? "an array" : "a group"));
  }
  return Status::Ok();
}

Result<std::string> ReadV3Attributes(const OrderedJson& root, const Doc& doc) {
  const OrderedJson* attributes = Find(root, "attributes");
  if (attributes == nullptr) return std::string("{}");
  if (!attributes->is_object()) {
    return doc.Invalid("'attributes' must be an object, got {}", Excerpt(*attributes));
  }
  return DumpCompact(*attributes);
}

}  // namespace

Documents EncodeV3Array(const ArrayMetadata& metadata) {
  OrderedJson zarr = OrderedJson::object();
  zarr["zarr_format"] = 3;
  zarr["node_type"] = "array";
  zarr["shape"] = metadata.shape;
  zarr["data_type"] = V3DataTypeToJson(metadata.dtype());
  zarr["chunk_grid"] = {{"name", "regular"},
                        {"configuration", {{"chunk_shape", metadata.chunk_shape}}}};
  const ChunkKeyEncoding& keys = metadata.chunk_key_encoding;
  const bool default_keys = keys.kind == ChunkKeyEncoding::Kind::kDefault;
  zarr["chunk_key_encoding"] = {{"name", default_keys ? "default" : "v2"},
                                {"configuration", {{"separator", std::string(1, keys.separator)}}}};
  // v3 has no null fill value; Strata reads v2's null as zeros, so zero it is.
  zarr["fill_value"] =
      FillValueToJson<OrderedJson>(metadata.fill_value, metadata.dtype(), ZarrFormat::kV3);
  zarr["codecs"] = metadata.sharding ? ShardedCodecsToJson(*metadata.sharding)
                                     : V3CodecsToJson(metadata.encoding);
  zarr["attributes"] = AttributesForEncode<OrderedJson>(metadata.attributes_json);
  if (metadata.dimension_names.has_value()) {
    OrderedJson names = OrderedJson::array();
    for (const std::optional<std::string>& name : *metadata.dimension_names) {
      names.push_back(name.has_value() ? OrderedJson(*name) : OrderedJson(nullptr));
    }
    zarr["dimension_names"] = std::move(names);
  }
  Documents documents;
  documents.emplace_back(
      std::string(kZarrJsonKey),
      RestoreRawText(zarr.dump(2, ' ', false, nlohmann::json::error_handler_t::replace)));
  return documents;
}

}  // namespace strata::internal_zarr

namespace strata {

using internal_zarr::CheckV3ExtensionField;
using internal_zarr::CheckV3Header;
using internal_zarr::ParseV3DataType;
using internal_zarr::ReadV3Attributes;
using internal_zarr::CheckKnownKeys;
using internal_zarr::Doc;
using internal_zarr::Excerpt;
using internal_zarr::Find;
using internal_zarr::NamedConfiguration;
using internal_zarr::NoThrow;
using internal_zarr::NormalizeBloscTypesize;
using internal_zarr::OrderedJson;
using internal_zarr::ParseFillValue;
using internal_zarr::ParseJson;
using internal_zarr::ParseV3Codecs;
using internal_zarr::ReadIndexList;
using internal_zarr::ReadNamedConfiguration;
using internal_zarr::Require;

Result<ArrayMetadata> ParseZarrV3ArrayMetadata(std::string_view zarr_json) {
  const Doc doc{kZarrJsonKey};
  return NoThrow<ArrayMetadata>(doc.name, [&]() -> Result<ArrayMetadata> {
    STRATA_ASSIGN_OR_RETURN(OrderedJson root, ParseJson(zarr_json, doc));
    STRATA_RETURN_IF_ERROR(CheckV3Header(root, "array", doc));
    static constexpr std::string_view kKnown[] = {
        "zarr_format",        "node_type",  "shape",  "data_type",  "chunk_grid",
        "chunk_key_encoding", "fill_value", "codecs", "attributes", "storage_transformers",
        "dimension_names"};
    for (const auto& [key, value] : root.items()) {
      if (std::find(std::begin(kKnown), std::end(kKnown), key) == std::end(kKnown)) {
        STRATA_RETURN_IF_ERROR(CheckV3ExtensionField(key, value, doc));
      }
    }
    ArrayMetadata metadata;
    metadata.zarr_format = ZarrFormat::kV3;

    STRATA_ASSIGN_OR_RETURN(const OrderedJson* shape, Require(root, "shape", doc));
    STRATA_ASSIGN_OR_RETURN(metadata.shape, ReadIndexList(*shape, "shape", 0, doc));
    const int rank = static_cast<int>(metadata.shape.size());

    STRATA_ASSIGN_OR_RETURN(const OrderedJson* data_type, Require(root, "data_type", doc));
    STRATA_ASSIGN_OR_RETURN(metadata.encoding.dtype, ParseV3DataType(*data_type, doc));

    STRATA_ASSIGN_OR_RETURN(const OrderedJson* grid_value, Require(root, "chunk_grid", doc));
    STRATA_ASSIGN_OR_RETURN(NamedConfiguration grid,
                            ReadNamedConfiguration(*grid_value, "chunk_grid", doc));
    if (grid.name != "regular") {
      return InvalidArgumentError(fmt::format(
          "unsupported chunk_grid '{}' in {} (Strata supports \"regular\")", grid.name, doc.name));
    }
    STRATA_RETURN_IF_ERROR(
        CheckKnownKeys(grid.configuration, {"chunk_shape"}, "'chunk_grid.configuration'", doc));
    const OrderedJson* chunk_shape = Find(grid.configuration, "chunk_shape");
    if (chunk_shape == nullptr) return doc.Missing("chunk_grid.configuration.chunk_shape");
    STRATA_ASSIGN_OR_RETURN(
        metadata.chunk_shape,
        ReadIndexList(*chunk_shape, "chunk_grid.configuration.chunk_shape", 1, doc));
    if (static_cast<int>(metadata.chunk_shape.size()) != rank) {
      return doc.Invalid("'chunk_shape' {} and 'shape' {} have different lengths",
                         Excerpt(*chunk_shape), Excerpt(*shape));
    }

    STRATA_ASSIGN_OR_RETURN(const OrderedJson* keys_value,
                            Require(root, "chunk_key_encoding", doc));
    STRATA_ASSIGN_OR_RETURN(NamedConfiguration keys,
                            ReadNamedConfiguration(*keys_value, "chunk_key_encoding", doc));
    if (keys.name == "default") {
      metadata.chunk_key_encoding = {ChunkKeyEncoding::Kind::kDefault, '/'};
    } else if (keys.name == "v2") {
      metadata.chunk_key_encoding = {ChunkKeyEncoding::Kind::kV2, '.'};
    } else {
      return InvalidArgumentError(fmt::format(
          "unsupported chunk_key_encoding '{}' in {} (Strata supports \"default\" and \"v2\")",
          keys.name, doc.name));
    }
    STRATA_RETURN_IF_ERROR(CheckKnownKeys(keys.configuration, {"separator"},
                                          "'chunk_key_encoding.configuration'", doc));
    if (const OrderedJson* sep = Find(keys.configuration, "separator")) {
      if (*sep == "/" || *sep == ".") {
        metadata.chunk_key_encoding.separator = sep->get_ref<const std::string&>()[0];
      } else {
        return doc.Invalid(
            "'chunk_key_encoding.configuration.separator' must be \".\" or "
            "\"/\", got {}",
            Excerpt(*sep));
      }
    }

    STRATA_ASSIGN_OR_RETURN(const OrderedJson* fill, Require(root, "fill_value", doc));
    STRATA_ASSIGN_OR_RETURN(metadata.fill_value,
                            ParseFillValue(*fill, metadata.dtype(), ZarrFormat::kV3, doc));

    STRATA_ASSIGN_OR_RETURN(const OrderedJson* codecs, Require(root, "codecs", doc));
    STRATA_RETURN_IF_ERROR(
        ParseV3Codecs(*codecs, rank, metadata.encoding, doc, &metadata.sharding));
    NormalizeBloscTypesize(metadata.encoding);
    if (metadata.sharding) NormalizeBloscTypesize(metadata.sharding->inner_encoding);

    STRATA_ASSIGN_OR_RETURN(metadata.attributes_json, ReadV3Attributes(root, doc));

    if (const OrderedJson* transformers = Find(root, "storage_transformers")) {
      if (!transformers->is_array()) {
        return doc.Invalid("'storage_transformers' must be a list, got {}", Excerpt(*transformers));
      }
      if (!transformers->empty()) {
        const OrderedJson& first = (*transformers)[0];
        const OrderedJson* name = first.is_object() ? Find(first, "name") : &first;
        return InvalidArgumentError(fmt::format("unsupported storage transformer {} in {}",
                                                name != nullptr && name->is_string()
                                                    ? fmt::format("'{}'", name->get<std::string>())
                                                    : Excerpt(first),
                                                doc.name));
      }
    }

    if (const OrderedJson* names = Find(root, "dimension_names");
        names != nullptr && !names->is_null()) {
      auto bad = [&] {
        return doc.Invalid("'dimension_names' must be a list of {} strings or nulls, got {}", rank,
                           Excerpt(*names));
      };
      if (!names->is_array() || static_cast<int>(names->size()) != rank) return bad();
      std::vector<std::optional<std::string>> parsed;
      for (const OrderedJson& name : *names) {
        if (name.is_null()) {
          parsed.emplace_back();
        } else if (name.is_string()) {
          parsed.emplace_back(name.get<std::string>());
        } else {
          return bad();
        }
      }
      metadata.dimension_names = std::move(parsed);
    }

    STRATA_RETURN_IF_ERROR(metadata.Validate().WithContext(fmt::format("invalid {}", doc.name)));
    return metadata;
  });
}

Result<GroupMetadata> ParseZarrV3GroupMetadata(std::string_view zarr_json) {
  const Doc doc{kZarrJsonKey};
  return NoThrow<GroupMetadata>(doc.name, [&]() -> Result<GroupMetadata> {
    STRATA_ASSIGN_OR_RETURN(OrderedJson root, ParseJson(zarr_json, doc));
    STRATA_RETURN_IF_ERROR(CheckV3Header(root, "group", doc));
    for (const auto& [key, value] : root.items()) {
      if (key == "zarr_format" || key == "node_type" || key == "attributes") continue;
      // zarr-python 3 writes "consolidated_metadata": null into every group;
      // it is a cache of the children's metadata that Strata does not need.
      if (key == "consolidated_metadata" && (value.is_null() || value.is_object())) continue;
      STRATA_RETURN_IF_ERROR(CheckV3ExtensionField(key, value, doc));
    }
    GroupMetadata group;
    group.zarr_format = ZarrFormat::kV3;
    STRATA_ASSIGN_OR_RETURN(group.attributes_json, ReadV3Attributes(root, doc));
    return group;
  });
}

}  // namespace strata
