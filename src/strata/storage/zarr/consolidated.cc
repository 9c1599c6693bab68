// Consolidated metadata: zarr-python 2's .zmetadata and v3's inline
// "consolidated_metadata" of a group's zarr.json (metadata.h).
#include "strata/storage/zarr/metadata_internal.h"

namespace strata {

using internal_zarr::AttributesForEncode;
using internal_zarr::Doc;
using internal_zarr::Documents;
using internal_zarr::DumpLikeZarrPython;
using internal_zarr::Excerpt;
using internal_zarr::Find;
using internal_zarr::NoThrow;
using internal_zarr::OrderedJson;
using internal_zarr::ParseJson;
using internal_zarr::RestoreRawText;
using internal_zarr::SortedJson;

Result<std::optional<std::vector<std::pair<std::string, std::string>>>> ParseConsolidatedMetadata(
    std::string_view text, ZarrFormat format) {
  const Doc doc{format == ZarrFormat::kV2 ? kZmetadataKey : kZarrJsonKey};
  return NoThrow<std::optional<Documents>>(doc.name, [&]() -> Result<std::optional<Documents>> {
    STRATA_ASSIGN_OR_RETURN(OrderedJson root, ParseJson(text, doc));
    if (!root.is_object()) return doc.Invalid("expected a JSON object, got {}", Excerpt(root));
    const OrderedJson* metadata = nullptr;
    if (format == ZarrFormat::kV2) {
      metadata = Find(root, "metadata");
      if (metadata == nullptr) return doc.Missing("metadata");
    } else {
      const OrderedJson* consolidated = Find(root, "consolidated_metadata");
      if (consolidated == nullptr || consolidated->is_null()) return std::optional<Documents>();
      if (!consolidated->is_object()) {
        return doc.Invalid("'consolidated_metadata' must be an object, got {}",
                           Excerpt(*consolidated));
      }
      metadata = Find(*consolidated, "metadata");
      if (metadata == nullptr) return doc.Missing("consolidated_metadata.metadata");
    }
    if (!metadata->is_object()) {
      return doc.Invalid("the consolidated 'metadata' must be an object, got {}",
                         Excerpt(*metadata));
    }
    Documents out;
    for (const auto& [key, value] : metadata->items()) {
      if (!value.is_object()) {
        return doc.Invalid("consolidated document '{}' must be an object, got {}", key,
                           Excerpt(value));
      }
      out.emplace_back(key, RestoreRawText(value.dump(-1, ' ', false,
                                                      nlohmann::json::error_handler_t::replace)));
    }
    return std::optional<Documents>(std::move(out));
  });
}

std::string EncodeConsolidatedV2(const std::vector<std::pair<std::string, std::string>>& documents) {
  SortedJson metadata = SortedJson::object();
  for (const auto& [key, text] : documents) {
    Result<OrderedJson> parsed = ParseJson(text, Doc{key});
    STRATA_CHECK(parsed.ok()) << "EncodeConsolidatedV2 of an invalid document " << key;
    metadata[key] = SortedJson(*parsed);
  }
  SortedJson root = {{"metadata", std::move(metadata)}, {"zarr_consolidated_format", 1}};
  return DumpLikeZarrPython(std::move(root));
}

std::string EncodeConsolidatedV3(const GroupMetadata& group,
                                 const std::vector<std::pair<std::string, std::string>>& members) {
  OrderedJson zarr = OrderedJson::object();
  zarr["zarr_format"] = 3;
  zarr["node_type"] = "group";
  zarr["attributes"] = AttributesForEncode<OrderedJson>(group.attributes_json);
  OrderedJson metadata = OrderedJson::object();
  for (const auto& [path, text] : members) {
    Result<OrderedJson> parsed = ParseJson(text, Doc{path});
    STRATA_CHECK(parsed.ok()) << "EncodeConsolidatedV3 of an invalid document " << path;
    metadata[path] = *parsed;
  }
  zarr["consolidated_metadata"] = {
      {"kind", "inline"}, {"must_understand", false}, {"metadata", std::move(metadata)}};
  return RestoreRawText(zarr.dump(2, ' ', false, nlohmann::json::error_handler_t::replace));
}

}  // namespace strata
