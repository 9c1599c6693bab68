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

// The dimension names of an array of rank `rank`: `dimension_names` (v3)
// when given, else the `_ARRAY_DIMENSIONS` attribute xarray writes.
std::vector<std::optional<std::string>> DimensionNames(
    const std::optional<std::vector<std::optional<std::string>>>& dimension_names,
    const std::string& attributes_json, int rank) {
  if (dimension_names) return *dimension_names;
  nlohmann::json attrs = nlohmann::json::parse(attributes_json, nullptr, false);
  std::vector<std::optional<std::string>> names;
  if (attrs.is_object() && attrs.contains("_ARRAY_DIMENSIONS")) {
    const nlohmann::json& dims = attrs["_ARRAY_DIMENSIONS"];
    if (dims.is_array() && static_cast<int>(dims.size()) == rank) {
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

Status FillNode(HierarchyNode& node) {
  if (node.is_array && node.array) node.dimensions = DimensionNamesOf(*node.array);
  return Status::Ok();
}

// The node of an array of variable-length elements (zarr-python's strings:
// v2 dtype "|O", v3 data_type "string", "variable_length_utf8", ...) from
// its metadata document `text` (and, in v2, its .zattrs text), or nullopt
// when `text` is not such an array's. Only what a reader of the array needs
// is read: its shape, attributes and dimension names.
std::optional<HierarchyNode> VariableLengthNode(const std::string& path, ZarrFormat format,
                                                const std::string& text,
                                                const std::string& zattrs) {
  nlohmann::json doc = nlohmann::json::parse(text, nullptr, false);
  if (!doc.is_object() || !doc.contains("shape") || !doc["shape"].is_array()) {
    return std::nullopt;
  }
  HierarchyNode node;
  node.path = path;
  node.is_array = true;
  node.variable_length = true;
  node.zarr_format = format;
  std::optional<std::vector<std::optional<std::string>>> dimension_names;
  if (format == ZarrFormat::kV2) {
    const nlohmann::json& dtype = doc.value("dtype", nlohmann::json());
    if (!dtype.is_string() || dtype.get<std::string>().size() < 2 ||
        dtype.get<std::string>()[1] != 'O') {
      return std::nullopt;
    }
    node.variable_length_attributes_json = zattrs.empty() ? "{}" : zattrs;
  } else {
    static const std::set<std::string> kVariableLength = {
        "string", "variable_length_utf8", "variable_length_bytes", "bytes"};
    const nlohmann::json& dtype = doc.value("data_type", nlohmann::json());
    if (!dtype.is_string() || !kVariableLength.contains(dtype.get<std::string>())) {
      return std::nullopt;
    }
    if (doc.contains("attributes")) node.variable_length_attributes_json = doc["attributes"].dump();
    if (doc.contains("dimension_names") && doc["dimension_names"].is_array()) {
      dimension_names.emplace();
      for (const auto& d : doc["dimension_names"]) {
        if (d.is_string()) {
          dimension_names->emplace_back(d.get<std::string>());
        } else {
          dimension_names->emplace_back();
        }
      }
    }
  }
  for (const auto& n : doc["shape"]) {
    if (!n.is_number_integer() || n.get<int64_t>() < 0) return std::nullopt;
    node.variable_length_shape.push_back(n.get<int64_t>());
  }
  node.dimensions = DimensionNames(dimension_names, node.variable_length_attributes_json,
                                   static_cast<int>(node.variable_length_shape.size()));
  return node;
}

// From consolidated metadata: nullopt when the root group has none.
Result<std::optional<Hierarchy>> FromConsolidated(Store& store, const std::string& path,
                                                  const HierarchyNode& root,
                                                  const HierarchyOptions& options) {
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
          if (!m.ok()) {
            std::optional<HierarchyNode> v;
            if (options.keep_variable_length) {
              v = VariableLengthNode(*dir, ZarrFormat::kV2, text, zattrs);
            }
            if (!v) return bad(key, m.status());
            node = std::move(*v);
          } else {
            node.array = std::move(m).value();
          }
        } else {
          Result<GroupMetadata> g = ParseZarrV2GroupMetadata(text, zattrs);
          if (!g.ok()) return bad(key, g.status());
          node.group = std::move(g).value();
        }
        if (options.keep_documents) node.document = text;
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
        if (!m.ok()) {
          std::optional<HierarchyNode> v;
          if (options.keep_variable_length) {
            v = VariableLengthNode(key, ZarrFormat::kV3, text, "");
          }
          if (!v) return bad(key, m.status());
          node = std::move(*v);
        } else {
          node.array = std::move(m).value();
        }
      }
      if (options.keep_documents) node.document = text;
      STRATA_RETURN_IF_ERROR(FillNode(node));
      h.nodes.push_back(std::move(node));
    }
  }
  std::sort(h.nodes.begin() + 1, h.nodes.end(),
            [](const HierarchyNode& a, const HierarchyNode& b) { return a.path < b.path; });
  return std::optional<Hierarchy>(std::move(h));
}

// The metadata document of the node at `path` and its format: zarr.json,
// else .zarray, else .zgroup; and, in v2, its .zattrs ("" when absent).
struct NodeDocument {
  ZarrFormat format;
  std::string text;
  std::string zattrs;
};
Result<NodeDocument> ReadDocument(Store& store, const std::string& path) {
  Result<std::string> v3 = store.GetString(JoinKey(path, kZarrJsonKey));
  if (v3.ok()) return NodeDocument{ZarrFormat::kV3, *std::move(v3), ""};
  if (!IsNotFound(v3.status())) return v3.status();
  Result<std::string> v2 = store.GetString(JoinKey(path, kZarrayKey));
  if (!v2.ok() && IsNotFound(v2.status())) v2 = store.GetString(JoinKey(path, kZgroupKey));
  if (!v2.ok()) return v2.status();
  Result<std::string> attrs = store.GetString(JoinKey(path, kZattrsKey));
  if (!attrs.ok() && !IsNotFound(attrs.status())) return attrs.status();
  return NodeDocument{ZarrFormat::kV2, *std::move(v2), attrs.ok() ? *std::move(attrs) : ""};
}

Result<HierarchyNode> ReadNode(Store& store, const std::string& root, const std::string& rel,
                               const HierarchyOptions& options) {
  const std::string path = rel.empty() ? root : JoinKey(root, rel);
  Result<NodeInfo> inspected = InspectNode(store, path);
  if (!inspected.ok() && options.keep_variable_length &&
      inspected.status().code() == StatusCode::kInvalidArgument) {
    // An array Strata does not hold may still be one a reader wants.
    Result<NodeDocument> doc = ReadDocument(store, path);
    if (doc.ok()) {
      std::optional<HierarchyNode> v = VariableLengthNode(rel, doc->format, doc->text, doc->zattrs);
      if (v) {
        if (options.keep_documents) v->document = std::move(doc->text);
        return std::move(*v);
      }
    }
  }
  STRATA_ASSIGN_OR_RETURN(NodeInfo info, std::move(inspected));
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
  if (options.keep_documents && info.kind == NodeInfo::Kind::kArray) {
    STRATA_ASSIGN_OR_RETURN(NodeDocument doc, ReadDocument(store, path));
    node.document = std::move(doc.text);
  } else if (options.keep_documents) {
    STRATA_ASSIGN_OR_RETURN(node.document,
                            store.GetString(JoinKey(path, info.zarr_format == ZarrFormat::kV3
                                                              ? kZarrJsonKey
                                                              : kZgroupKey)));
  }
  STRATA_RETURN_IF_ERROR(FillNode(node));
  return node;
}

Result<Hierarchy> ByListing(Store& store, const std::string& path, HierarchyNode root,
                            const HierarchyOptions& options) {
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
    STRATA_ASSIGN_OR_RETURN(HierarchyNode node, ReadNode(store, path, dir, options));
    h.nodes.push_back(std::move(node));
  }
  return h;
}

}  // namespace

std::vector<std::optional<std::string>> DimensionNamesOf(const ArrayMetadata& metadata) {
  return DimensionNames(metadata.dimension_names, metadata.attributes_json, metadata.rank());
}

Result<Hierarchy> ReadHierarchy(Store& store, const std::string& path,
                                const HierarchyOptions& options) {
  STRATA_ASSIGN_OR_RETURN(HierarchyNode root, ReadNode(store, path, "", options));
  if (root.is_array) {
    Hierarchy h;
    h.nodes.push_back(std::move(root));
    return h;
  }
  using Consolidated = HierarchyOptions::Consolidated;
  if (options.consolidated != Consolidated::kIgnore) {
    STRATA_ASSIGN_OR_RETURN(std::optional<Hierarchy> consolidated,
                            FromConsolidated(store, path, root, options));
    if (consolidated) return std::move(*consolidated);
    if (options.consolidated == Consolidated::kRequire) {
      const char* where_missing = root.zarr_format == ZarrFormat::kV2
                                      ? ".zmetadata"
                                      : "zarr.json's consolidated_metadata";
      return FailedPreconditionError(fmt::format("{} has no consolidated metadata ({})",
                                                 Where(store, path), where_missing));
    }
  }
  return ByListing(store, path, std::move(root), options);
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
  STRATA_ASSIGN_OR_RETURN(HierarchyNode root, ReadNode(store, path, "", HierarchyOptions{}));
  if (root.is_array) return InvalidArgumentError("consolidated metadata belongs to a group");
  STRATA_ASSIGN_OR_RETURN(Hierarchy h, ByListing(store, path, root, HierarchyOptions{}));
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
