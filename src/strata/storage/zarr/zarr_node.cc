// InspectNode and EraseZarrNode (zarr_array.h): the nodes of a hierarchy,
// arrays and groups of either version.
#include "strata/storage/zarr/zarr_array.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "strata/storage/zarr/json_util.h"

#include "strata/storage/zarr/zarr_array_internal.h"

namespace strata {

using internal_zarr::DecodeMarker;
using internal_zarr::GetOptionalString;
using internal_zarr::NodeUrl;

namespace {

// True for a key (relative to a node) spelled as a chunk key of some array:
// "0.1", "0/1", "c/0/1", "c.0.1", "0", "c".
bool LooksLikeChunkKey(std::string_view key) {
  if (key == "c") return true;
  if (key.size() > 2 && key[0] == 'c' && (key[1] == '/' || key[1] == '.')) key.remove_prefix(2);
  if (key.empty()) return false;
  bool digit = false;
  for (char ch : key) {
    if (ch >= '0' && ch <= '9') {
      digit = true;
    } else if ((ch == '.' || ch == '/') && digit) {
      digit = false;
    } else {
      return false;
    }
  }
  return digit;
}


}  // namespace

Status EraseZarrNode(Store& store, const std::string& prefix, const NodeInfo* existing) {
  STRATA_ASSIGN_OR_RETURN(std::vector<std::string> keys, store.List(prefix));
  if (existing != nullptr && existing->kind == NodeInfo::Kind::kGroup) {
    // The group's documents, then each member (a child holding a Zarr node),
    // erased as that node is; a file that is no member's (a photo kept in
    // the group's directory) stays, as it does in an array's.
    for (std::string_view doc : {kZarrJsonKey, kZgroupKey, kZattrsKey, kZmetadataKey}) {
      STRATA_RETURN_IF_ERROR(store.Erase(prefix + std::string(doc)));
    }
    std::vector<std::string> children;
    for (const std::string& key : keys) {
      std::string_view relative = std::string_view(key).substr(prefix.size());
      const size_t slash = relative.find('/');
      if (slash == std::string_view::npos) continue;
      children.emplace_back(relative.substr(0, slash));
    }
    std::sort(children.begin(), children.end());
    children.erase(std::unique(children.begin(), children.end()), children.end());
    for (const std::string& child : children) {
      const std::string path = prefix + child;
      Result<NodeInfo> member = InspectNode(store, path);
      if (IsNotFound(member.status())) continue;  // not a member
      STRATA_RETURN_IF_ERROR(
          EraseZarrNode(store, path + "/", member.ok() ? &*member : nullptr));
    }
    return Status::Ok();
  }
  for (std::string_view doc : {kZarrJsonKey, kZarrayKey, kZattrsKey, kIncompleteMarkerKey}) {
    STRATA_RETURN_IF_ERROR(store.Erase(prefix + std::string(doc)));
  }
  STRATA_RETURN_IF_ERROR(store.ErasePrefix(prefix + std::string(kFillJournalPrefix)));
  Shape block;
  for (const std::string& key : keys) {
    std::string_view relative = std::string_view(key).substr(prefix.size());
    const bool chunk = existing != nullptr && existing->array
                           ? existing->array->ParseChunkKey(relative, block)
                           : LooksLikeChunkKey(relative);
    if (chunk) STRATA_RETURN_IF_ERROR(store.Erase(key));
  }
  return Status::Ok();
}

Result<NodeInfo> InspectNode(Store& store, const std::string& path) {
  std::string where = NodeUrl(store, path);
  STRATA_ASSIGN_OR_RETURN(std::optional<std::string> v3,
                          GetOptionalString(store, JoinKey(path, kZarrJsonKey)));
  if (v3) {
    // A group is told by its node_type; anything else (an array, or a
    // node_type of the wrong type) gets the array parser's error.
    Result<nlohmann::ordered_json> doc = internal_zarr::ParseLimitedJson(*v3, kZarrJsonKey);
    const nlohmann::ordered_json* node_type = nullptr;
    if (doc.ok() && doc->is_object()) {
      auto it = doc->find("node_type");
      if (it != doc->end()) node_type = &*it;
    }
    if (node_type != nullptr && node_type->is_string() &&
        node_type->get_ref<const std::string&>() == "group") {
      STRATA_RETURN_IF_ERROR(
          ParseZarrV3GroupMetadata(*v3).status().WithContext(fmt::format("reading {}", where)));
      return NodeInfo{NodeInfo::Kind::kGroup, ZarrFormat::kV3, std::nullopt};
    }
    Result<ArrayMetadata> m = ParseZarrV3ArrayMetadata(*v3);
    if (!m.ok()) return m.status().WithContext(fmt::format("reading {}/zarr.json", where));
    return NodeInfo{NodeInfo::Kind::kArray, ZarrFormat::kV3, std::move(m).value()};
  }
  STRATA_ASSIGN_OR_RETURN(std::optional<std::string> zarray,
                          GetOptionalString(store, JoinKey(path, kZarrayKey)));
  if (zarray) {
    STRATA_ASSIGN_OR_RETURN(std::optional<std::string> zattrs,
                            GetOptionalString(store, JoinKey(path, kZattrsKey)));
    Result<ArrayMetadata> m = ParseZarrV2ArrayMetadata(*zarray, zattrs.value_or(""));
    if (!m.ok()) return m.status().WithContext(fmt::format("reading {}/.zarray", where));
    return NodeInfo{NodeInfo::Kind::kArray, ZarrFormat::kV2, std::move(m).value()};
  }
  STRATA_ASSIGN_OR_RETURN(std::optional<std::string> zgroup,
                          GetOptionalString(store, JoinKey(path, kZgroupKey)));
  if (zgroup) {
    STRATA_ASSIGN_OR_RETURN(std::optional<std::string> zattrs,
                            GetOptionalString(store, JoinKey(path, kZattrsKey)));
    STRATA_RETURN_IF_ERROR(ParseZarrV2GroupMetadata(*zgroup, zattrs.value_or(""))
                               .status()
                               .WithContext(fmt::format("reading {}/.zgroup", where)));
    return NodeInfo{NodeInfo::Kind::kGroup, ZarrFormat::kV2, std::nullopt};
  }
  STRATA_ASSIGN_OR_RETURN(std::optional<std::string> marker,
                          GetOptionalString(store, JoinKey(path, kIncompleteMarkerKey)));
  if (marker) {
    STRATA_ASSIGN_OR_RETURN(ArrayMetadata m, DecodeMarker(*marker, where));
    ZarrFormat format = m.zarr_format;
    return NodeInfo{NodeInfo::Kind::kIncompleteArray, format, std::move(m)};
  }
  return NotFoundError(fmt::format("no Zarr array or group at {}", where));
}

}  // namespace strata
