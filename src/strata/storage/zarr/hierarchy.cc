// Reading a group and its members; consolidated metadata (hierarchy.h).
#include "strata/storage/zarr/hierarchy.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

namespace strata {
namespace {

std::string Where(Store& store, const std::string& path) {
  return path.empty() ? store.url() : JoinKey(store.url(), path);
}

// The path of `key`'s directory relative to `root` ("" for the root itself),
// or nullopt when `key` is not under it.
std::optional<std::string> RelativeDir(const std::string& root, const std::string& key,
                                       std::string_view name) {
  std::string prefix = root.empty() ? "" : root + "/";
  if (key.compare(0, prefix.size(), prefix) != 0) return std::nullopt;
  std::string_view rest = std::string_view(key).substr(prefix.size());
  if (rest == name) return std::string();
  if (rest.size() <= name.size() + 1 || rest.substr(rest.size() - name.size()) != name ||
      rest[rest.size() - name.size() - 1] != '/') {
    return std::nullopt;
  }
  return std::string(rest.substr(0, rest.size() - name.size() - 1));
}

Status FillNode(HierarchyNode& node) {
  if (node.is_array) node.dimensions = DimensionNamesOf(*node.array);
  return Status::Ok();
}

// From consolidated metadata: nullopt when the root group has none.
Result<std::optional<Hierarchy>> FromConsolidated(Store& store, const std::string& path,
                                                  const HierarchyNode& root) {
  using Documents = std::vector<std::pair<std::string, std::string>>;
  std::optional<Documents> docs;
  if (root.zarr_format == ZarrFormat::kV2) {
    Result<std::string> text = store.GetString(JoinKey(path, kZmetadataKey));
    if (!text.ok()) {
      if (IsNotFound(text.status())) return std::optional<Hierarchy>();
      return text.status();
    }
    STRATA_ASSIGN_OR_RETURN(docs, ParseConsolidatedMetadata(*text, ZarrFormat::kV2));
  } else {
    STRATA_ASSIGN_OR_RETURN(std::string text, store.GetString(JoinKey(path, kZarrJsonKey)));
    STRATA_ASSIGN_OR_RETURN(docs, ParseConsolidatedMetadata(text, ZarrFormat::kV3));
  }
  if (!docs) return std::optional<Hierarchy>();
  const std::string where = Where(store, path);
  auto bad = [&](const std::string& key, const Status& s) {
    return s.WithContext(fmt::format("consolidated metadata of {}: '{}'", where, key));
  };
  Hierarchy h;
  h.from_consolidated = true;
  h.nodes.push_back(root);
  if (root.zarr_format == ZarrFormat::kV2) {
    std::map<std::string, std::string> by_key(docs->begin(), docs->end());
    for (const auto& [key, text] : by_key) {
      for (std::string_view name : {kZarrayKey, kZgroupKey}) {
        std::optional<std::string> dir = RelativeDir("", key, name);
        if (!dir || dir->empty()) continue;
        auto attrs = by_key.find(*dir + "/" + std::string(kZattrsKey));
        const std::string zattrs = attrs == by_key.end() ? "" : attrs->second;
        HierarchyNode node;
        node.path = *dir;
        node.zarr_format = ZarrFormat::kV2;
        if (name == kZarrayKey) {
          node.is_array = true;
          Result<ArrayMetadata> m = ParseZarrV2ArrayMetadata(text, zattrs);
          if (!m.ok()) return bad(key, m.status());
          node.array = std::move(m).value();
        } else {
          Result<GroupMetadata> g = ParseZarrV2GroupMetadata(text, zattrs);
          if (!g.ok()) return bad(key, g.status());
          node.group = std::move(g).value();
        }
        STRATA_RETURN_IF_ERROR(FillNode(node));
        h.nodes.push_back(std::move(node));
      }
    }
  } else {
    for (const auto& [key, text] : *docs) {
      if (key.empty()) continue;
      STRATA_RETURN_IF_ERROR(ValidateKey(key));
      HierarchyNode node;
      node.path = key;
      node.zarr_format = ZarrFormat::kV3;
      nlohmann::json probe = nlohmann::json::parse(text, nullptr, false);
      if (probe.is_object() && probe.value("node_type", "") == "group") {
        Result<GroupMetadata> g = ParseZarrV3GroupMetadata(text);
        if (!g.ok()) return bad(key, g.status());
        node.group = std::move(g).value();
      } else {
        node.is_array = true;
        Result<ArrayMetadata> m = ParseZarrV3ArrayMetadata(text);
        if (!m.ok()) return bad(key, m.status());
        node.array = std::move(m).value();
      }
      STRATA_RETURN_IF_ERROR(FillNode(node));
      h.nodes.push_back(std::move(node));
    }
  }
  std::sort(h.nodes.begin() + 1, h.nodes.end(),
            [](const HierarchyNode& a, const HierarchyNode& b) { return a.path < b.path; });
  return std::optional<Hierarchy>(std::move(h));
}

Result<HierarchyNode> ReadNode(Store& store, const std::string& root, const std::string& rel) {
  const std::string path = rel.empty() ? root : JoinKey(root, rel);
  STRATA_ASSIGN_OR_RETURN(NodeInfo info, InspectNode(store, path));
  HierarchyNode node;
  node.path = rel;
  node.zarr_format = info.zarr_format;
  switch (info.kind) {
    case NodeInfo::Kind::kIncompleteArray:
      return FailedPreconditionError(fmt::format(
          "{} is incomplete: a strata run writing it was interrupted (re-run it to finish, or "
          "delete it)",
          Where(store, path)));
    case NodeInfo::Kind::kArray:
      node.is_array = true;
      node.array = std::move(info.array);
      break;
    case NodeInfo::Kind::kGroup: {
      // InspectNode checked the group's metadata; read its attributes.
      if (info.zarr_format == ZarrFormat::kV3) {
        STRATA_ASSIGN_OR_RETURN(std::string text, store.GetString(JoinKey(path, kZarrJsonKey)));
        STRATA_ASSIGN_OR_RETURN(node.group, ParseZarrV3GroupMetadata(text));
      } else {
        STRATA_ASSIGN_OR_RETURN(std::string text, store.GetString(JoinKey(path, kZgroupKey)));
        Result<std::string> attrs = store.GetString(JoinKey(path, kZattrsKey));
        if (!attrs.ok() && !IsNotFound(attrs.status())) return attrs.status();
        STRATA_ASSIGN_OR_RETURN(node.group,
                                ParseZarrV2GroupMetadata(text, attrs.ok() ? *attrs : ""));
      }
      break;
    }
  }
  STRATA_RETURN_IF_ERROR(FillNode(node));
  return node;
}

Result<Hierarchy> ByListing(Store& store, const std::string& path, HierarchyNode root) {
  Hierarchy h;
  h.nodes.push_back(std::move(root));
  STRATA_ASSIGN_OR_RETURN(std::vector<std::string> keys,
                          store.List(path.empty() ? "" : path + "/"));
  std::set<std::string> dirs;
  for (const std::string& key : keys) {
    for (std::string_view name : {kZarrayKey, kZgroupKey, kZarrJsonKey, kIncompleteMarkerKey}) {
      std::optional<std::string> dir = RelativeDir(path, key, name);
      if (dir && !dir->empty()) dirs.insert(*dir);
    }
  }
  for (const std::string& dir : dirs) {
    // Strata's own working directories (a dataset job's staged chunks,
    // tools/dataset_write.h) are not members.
    if (dir.rfind(".strata-", 0) == 0) continue;
    // A node inside an array (chunks named like metadata) is not a member.
    bool inside_array = false;
    for (const HierarchyNode& n : h.nodes) {
      if (n.is_array && dir.compare(0, n.path.size() + 1, n.path + "/") == 0) inside_array = true;
    }
    if (inside_array) continue;
    STRATA_ASSIGN_OR_RETURN(HierarchyNode node, ReadNode(store, path, dir));
    h.nodes.push_back(std::move(node));
  }
  return h;
}

}  // namespace

std::vector<std::optional<std::string>> DimensionNamesOf(const ArrayMetadata& metadata) {
  if (metadata.dimension_names) return *metadata.dimension_names;
  nlohmann::json attrs = nlohmann::json::parse(metadata.attributes_json, nullptr, false);
  std::vector<std::optional<std::string>> names;
  if (attrs.is_object() && attrs.contains("_ARRAY_DIMENSIONS")) {
    const nlohmann::json& dims = attrs["_ARRAY_DIMENSIONS"];
    if (dims.is_array() && static_cast<int>(dims.size()) == metadata.rank()) {
      for (const auto& d : dims) {
        if (d.is_string()) {
          names.emplace_back(d.get<std::string>());
        } else {
          names.emplace_back();
        }
      }
    }
  }
  return names;
}

Result<Hierarchy> ReadHierarchy(Store& store, const std::string& path) {
  STRATA_ASSIGN_OR_RETURN(HierarchyNode root, ReadNode(store, path, ""));
  if (root.is_array) {
    Hierarchy h;
    h.nodes.push_back(std::move(root));
    return h;
  }
  STRATA_ASSIGN_OR_RETURN(std::optional<Hierarchy> consolidated,
                          FromConsolidated(store, path, root));
  if (consolidated) return std::move(*consolidated);
  return ByListing(store, path, std::move(root));
}

Status CreateGroup(Store& store, const std::string& path, const GroupMetadata& group,
                   bool overwrite) {
  Result<NodeInfo> existing = InspectNode(store, path);
  if (existing.ok() && !overwrite) {
    return AlreadyExistsError(fmt::format(
        "{} already holds a Zarr {} (pass --overwrite to replace it)", Where(store, path),
        existing->kind == NodeInfo::Kind::kGroup ? "group" : "array"));
  }
  const std::string prefix = path.empty() ? std::string() : path + "/";
  if (existing.ok()) {
    // Only what belongs to the node replaced goes (a parent's or a
    // sibling's files stay).
    STRATA_RETURN_IF_ERROR(EraseZarrNode(store, prefix, &*existing));
  } else if (IsNotFound(existing.status())) {
    STRATA_ASSIGN_OR_RETURN(std::vector<std::string> keys, store.List(prefix));
    if (!keys.empty()) {
      return FailedPreconditionError(fmt::format(
          "{} is not empty and holds no Zarr group (found '{}'); refusing to write there",
          Where(store, path), keys.front()));
    }
  } else if (!overwrite) {
    return existing.status();
  } else {
    STRATA_RETURN_IF_ERROR(EraseZarrNode(store, prefix, nullptr));
  }
  for (const auto& [key, text] : group.Encode()) {
    STRATA_RETURN_IF_ERROR(store.Set(JoinKey(path, key), text));
  }
  return Status::Ok();
}

Status WriteConsolidatedMetadata(Store& store, const std::string& path) {
  STRATA_ASSIGN_OR_RETURN(HierarchyNode root, ReadNode(store, path, ""));
  if (root.is_array) return InvalidArgumentError("consolidated metadata belongs to a group");
  STRATA_ASSIGN_OR_RETURN(Hierarchy h, ByListing(store, path, root));
  if (root.zarr_format == ZarrFormat::kV2) {
    std::vector<std::pair<std::string, std::string>> docs;
    for (const HierarchyNode& n : h.nodes) {
      std::vector<std::pair<std::string, std::string>> encoded =
          n.is_array ? n.array->Encode() : n.group.Encode();
      for (auto& [key, text] : encoded) {
        docs.emplace_back(n.path.empty() ? key : n.path + "/" + key, std::move(text));
      }
    }
    return store.Set(JoinKey(path, kZmetadataKey), EncodeConsolidatedV2(docs));
  }
  std::vector<std::pair<std::string, std::string>> members;
  for (size_t i = 1; i < h.nodes.size(); ++i) {
    const HierarchyNode& n = h.nodes[i];
    std::vector<std::pair<std::string, std::string>> encoded =
        n.is_array ? n.array->Encode() : n.group.Encode();
    members.emplace_back(n.path, std::move(encoded.front().second));
  }
  return store.Set(JoinKey(path, kZarrJsonKey), EncodeConsolidatedV3(root.group, members));
}

}  // namespace strata
