// Zarr v2 documents: .zarray (+ .zattrs) and .zgroup, read and written the
// way zarr-python 2 writes them (metadata.h).
#include "strata/storage/zarr/metadata_internal.h"

namespace strata::internal_zarr {

Documents EncodeV2Array(const ArrayMetadata& metadata) {
  Documents documents;
  // Exactly the keys zarr-python 2.13 writes; "dimension_separator" only
  // when it is not the default, as zarr.create(...) does.
  const ChunkEncoding& encoding = metadata.encoding;
  SortedJson zarray = SortedJson::object();
  zarray["zarr_format"] = 2;
  zarray["shape"] = metadata.shape;
  zarray["chunks"] = metadata.chunk_shape;
  zarray["dtype"] = metadata.dtype().ZarrV2Name(encoding.endian);
  // The last bytes codec is the compressor, the others filters (see parsing).
  zarray["compressor"] = encoding.bytes_codecs.empty()
                             ? SortedJson(nullptr)
                             : NumcodecsConfigToJson<SortedJson>(encoding.bytes_codecs.back());
  zarray["fill_value"] =
      FillValueToJson<SortedJson>(metadata.fill_value, metadata.dtype(), ZarrFormat::kV2);
  if (encoding.bytes_codecs.size() > 1) {
    SortedJson filters = SortedJson::array();
    for (size_t i = 0; i + 1 < encoding.bytes_codecs.size(); ++i) {
      filters.push_back(NumcodecsConfigToJson<SortedJson>(encoding.bytes_codecs[i]));
    }
    zarray["filters"] = std::move(filters);
  } else {
    zarray["filters"] = nullptr;
  }
  zarray["order"] = encoding.transpose.empty() ? "C" : "F";
  if (metadata.chunk_key_encoding.separator == '/') zarray["dimension_separator"] = "/";
  documents.emplace_back(std::string(kZarrayKey), DumpLikeZarrPython(std::move(zarray)));
  SortedJson attributes = AttributesForEncode<SortedJson>(metadata.attributes_json);
  if (!attributes.empty()) {
    documents.emplace_back(std::string(kZattrsKey), DumpLikeZarrPython(std::move(attributes)));
  }
  return documents;
}

}  // namespace strata::internal_zarr

namespace strata {

using internal_zarr::AsInt64;
using internal_zarr::Doc;
using internal_zarr::Excerpt;
using internal_zarr::Find;
using internal_zarr::NoThrow;
using internal_zarr::NormalizeBloscTypesize;
using internal_zarr::OrderedJson;
using internal_zarr::ParseAttributes;
using internal_zarr::ParseFillValue;
using internal_zarr::ParseJson;
using internal_zarr::ParseNumcodecsCodec;
using internal_zarr::ParseV2Compressor;
using internal_zarr::ReadIndexList;
using internal_zarr::RefuseVariableLength;
using internal_zarr::Require;
using internal_zarr::VariableLengthKind;

Result<ArrayMetadata> ParseZarrV2ArrayMetadata(std::string_view zarray_json,
                                               std::string_view zattrs_json) {
  const Doc doc{kZarrayKey};
  return NoThrow<ArrayMetadata>(doc.name, [&]() -> Result<ArrayMetadata> {
    STRATA_ASSIGN_OR_RETURN(OrderedJson root, ParseJson(zarray_json, doc));
    if (!root.is_object()) return doc.Invalid("expected a JSON object, got {}", Excerpt(root));
    ArrayMetadata metadata;
    metadata.zarr_format = ZarrFormat::kV2;

    STRATA_ASSIGN_OR_RETURN(const OrderedJson* zarr_format, Require(root, "zarr_format", doc));
    if (AsInt64(*zarr_format) != 2) {
      return doc.Invalid("'zarr_format' must be 2, got {}", Excerpt(*zarr_format));
    }
    STRATA_ASSIGN_OR_RETURN(const OrderedJson* shape, Require(root, "shape", doc));
    STRATA_ASSIGN_OR_RETURN(metadata.shape, ReadIndexList(*shape, "shape", 0, doc));
    STRATA_ASSIGN_OR_RETURN(const OrderedJson* chunks, Require(root, "chunks", doc));
    STRATA_ASSIGN_OR_RETURN(metadata.chunk_shape, ReadIndexList(*chunks, "chunks", 1, doc));
    if (metadata.chunk_shape.size() != metadata.shape.size()) {
      return doc.Invalid("'chunks' {} and 'shape' {} have different lengths", Excerpt(*chunks),
                         Excerpt(*shape));
    }

    STRATA_ASSIGN_OR_RETURN(const OrderedJson* dtype_value, Require(root, "dtype", doc));
    if (dtype_value->is_array()) {
      return InvalidArgumentError(
          fmt::format("unsupported Zarr v2 dtype {} in {}: structured data types are not supported",
                      Excerpt(*dtype_value), doc.name));
    }
    if (!dtype_value->is_string()) {
      return doc.Invalid("'dtype' must be a typestr such as \"<f8\", got {}",
                         Excerpt(*dtype_value));
    }
    const std::string& typestr = dtype_value->get_ref<const std::string&>();
    if (typestr.size() >= 2 && typestr[1] == 'O') {
      // numpy's object dtype: what the objects are is the first filter's id
      // (zarr-python writes vlen-utf8 for str, vlen-bytes, json2, ...).
      std::string_view what = "variable-length Python objects";
      const OrderedJson* filters = Find(root, "filters");
      if (filters != nullptr && filters->is_array() && !filters->empty() &&
          (*filters)[0].is_object()) {
        const OrderedJson* id = Find((*filters)[0], "id");
        if (id != nullptr && id->is_string()) {
          std::string_view kind = VariableLengthKind(id->get_ref<const std::string&>());
          if (!kind.empty()) what = kind;
        }
      }
      return RefuseVariableLength(fmt::format("Zarr v2 dtype '{}'", typestr), what, doc);
    }
    Result<DTypeWithEndian> dtype = ParseZarrV2DType(typestr);
    if (!dtype.ok()) return dtype.status().WithContext(fmt::format("invalid {}", doc.name));
    metadata.encoding.dtype = dtype->dtype;
    metadata.encoding.endian = dtype->endian;

    // Filters run before the compressor on write: the bytes codecs are the
    // filters in order, then the compressor. Strata supports the filters
    // that act on bytes (checksums, shuffle, compressors); array filters
    // (delta, fixedscaleoffset, ...) are refused by name.
    STRATA_ASSIGN_OR_RETURN(const OrderedJson* filters, Require(root, "filters", doc));
    if (!filters->is_null()) {
      if (!filters->is_array()) {
        return doc.Invalid("'filters' must be null or a list, got {}", Excerpt(*filters));
      }
      for (size_t i = 0; i < filters->size(); ++i) {
        STRATA_ASSIGN_OR_RETURN(
            BytesCodecSpec filter,
            ParseNumcodecsCodec((*filters)[i], fmt::format("filters[{}]", i), doc));
        metadata.encoding.bytes_codecs.push_back(std::move(filter));
      }
    }
    STRATA_ASSIGN_OR_RETURN(const OrderedJson* compressor, Require(root, "compressor", doc));
    STRATA_ASSIGN_OR_RETURN(std::optional<BytesCodecSpec> codec,
                            ParseV2Compressor(*compressor, doc));
    if (codec.has_value()) metadata.encoding.bytes_codecs.push_back(std::move(*codec));
    NormalizeBloscTypesize(metadata.encoding);

    STRATA_ASSIGN_OR_RETURN(const OrderedJson* order_value, Require(root, "order", doc));
    if (*order_value == "F") {
      const int n = static_cast<int>(metadata.shape.size());
      for (int i = n - 1; i >= 0; --i) metadata.encoding.transpose.push_back(i);
    } else if (*order_value != "C") {
      return doc.Invalid("'order' must be \"C\" or \"F\", got {}", Excerpt(*order_value));
    }

    STRATA_ASSIGN_OR_RETURN(const OrderedJson* fill, Require(root, "fill_value", doc));
    STRATA_ASSIGN_OR_RETURN(metadata.fill_value,
                            ParseFillValue(*fill, metadata.dtype(), ZarrFormat::kV2, doc));

    metadata.chunk_key_encoding = {ChunkKeyEncoding::Kind::kV2, '.'};
    if (const OrderedJson* sep = Find(root, "dimension_separator"); sep != nullptr) {
      if (*sep == "/") {
        metadata.chunk_key_encoding.separator = '/';
      } else if (*sep != "." && !sep->is_null()) {
        return doc.Invalid("'dimension_separator' must be \".\" or \"/\", got {}", Excerpt(*sep));
      }
    }
    // Other keys are ignored, as the v2 spec asks.

    if (!zattrs_json.empty()) {
      STRATA_RETURN_IF_ERROR(ParseAttributes(zattrs_json, Doc{kZattrsKey}).status());
      metadata.attributes_json = std::string(zattrs_json);
    }
    STRATA_RETURN_IF_ERROR(metadata.Validate().WithContext(fmt::format("invalid {}", doc.name)));
    return metadata;
  });
}

Result<GroupMetadata> ParseZarrV2GroupMetadata(std::string_view zgroup_json,
                                               std::string_view zattrs_json) {
  const Doc doc{kZgroupKey};
  return NoThrow<GroupMetadata>(doc.name, [&]() -> Result<GroupMetadata> {
    STRATA_ASSIGN_OR_RETURN(OrderedJson root, ParseJson(zgroup_json, doc));
    if (!root.is_object()) return doc.Invalid("expected a JSON object, got {}", Excerpt(root));
    STRATA_ASSIGN_OR_RETURN(const OrderedJson* zarr_format, Require(root, "zarr_format", doc));
    if (AsInt64(*zarr_format) != 2) {
      return doc.Invalid("'zarr_format' must be 2, got {}", Excerpt(*zarr_format));
    }
    GroupMetadata group;
    group.zarr_format = ZarrFormat::kV2;
    if (!zattrs_json.empty()) {
      STRATA_RETURN_IF_ERROR(ParseAttributes(zattrs_json, Doc{kZattrsKey}).status());
      group.attributes_json = std::string(zattrs_json);
    }
    return group;
  });
}

}  // namespace strata
