// Hierarchies: a Zarr group and everything under it (a dataset: data
// variables, coordinates, nested groups), read in one go.
//
// ReadHierarchy reads the consolidated metadata of the root group when it has
// some (one object: `.zmetadata` in v2, the root zarr.json in v3), else lists
// the store under the group and reads each node's metadata. Nodes come back
// sorted by path, the root first. An array's dimension names come from v3's
// dimension_names or, in v2, from xarray's `_ARRAY_DIMENSIONS` attribute.
//
// HierarchyOptions let a reader other than Strata's own (strata.xarray,
// which hands string coordinates to zarr-python) have each node's metadata
// document and the arrays of variable-length elements Strata does not hold,
// and choose whether consolidated metadata is used.
//
// WriteConsolidatedMetadata writes a hierarchy's documents back as
// consolidated metadata at its root, in the root's format.
//
// Thread-safety: plain functions over a Store (thread-safe).
#ifndef STRATA_STORAGE_ZARR_HIERARCHY_H_
#define STRATA_STORAGE_ZARR_HIERARCHY_H_

#include <optional>
#include <string>
#include <vector>

#include "strata/base/status.h"
#include "strata/storage/store.h"
#include "strata/storage/zarr/metadata.h"
#include "strata/storage/zarr/zarr_array.h"

namespace strata {

struct HierarchyNode {
  std::string path;  // relative to the hierarchy's root: "", "temperature", "obs/lat"
  bool is_array = false;
  ZarrFormat zarr_format = ZarrFormat::kV2;
  std::optional<ArrayMetadata> array;  // arrays (unset for a variable-length one)
  GroupMetadata group;                 // groups
  // One name (or nullopt) per axis of an array, or empty when it has none.
  std::vector<std::optional<std::string>> dimensions;
  // With HierarchyOptions::keep_documents: the node's own metadata document
  // as stored (.zarray or .zgroup text, or its zarr.json object).
  std::string document;
  // With HierarchyOptions::keep_variable_length: an array of variable-length
  // elements (zarr-python's strings, Python objects), which Strata does not
  // hold. `array` is unset; its shape and attributes are these.
  bool variable_length = false;
  Shape variable_length_shape;
  std::string variable_length_attributes_json = "{}";

  const std::string& attributes_json() const {
    if (!is_array) return group.attributes_json;
    return array ? array->attributes_json : variable_length_attributes_json;
  }
};

struct Hierarchy {
  std::vector<HierarchyNode> nodes;  // sorted by path; nodes[0] is the root
  bool from_consolidated = false;    // read from consolidated metadata
  ZarrFormat zarr_format() const { return nodes.front().zarr_format; }
};

struct HierarchyOptions {
  // Consolidated metadata is read when the root group has some
  // (kIfPresent), required (kRequire: FailedPrecondition when it has none),
  // or not read (kIgnore: every node's own metadata, by listing).
  enum class Consolidated { kIfPresent, kRequire, kIgnore };
  Consolidated consolidated = Consolidated::kIfPresent;
  // Keep each node's metadata document (HierarchyNode::document).
  bool keep_documents = false;
  // Keep arrays of variable-length elements as nodes without `array`,
  // instead of refusing the hierarchy (InvalidArgument naming the array).
  bool keep_variable_length = false;
};

// Reads the node at `path` and every node under it. NotFound when nothing is
// there; errors name the node whose metadata is bad. An incomplete array (a
// strata run was interrupted) is an error naming it.
Result<Hierarchy> ReadHierarchy(Store& store, const std::string& path,
                                const HierarchyOptions& options = {});

// The dimension names of an array: dimension_names (v3), else the
// `_ARRAY_DIMENSIONS` attribute xarray writes (v2); empty when neither.
std::vector<std::optional<std::string>> DimensionNamesOf(const ArrayMetadata& metadata);

// Creates (or replaces, with `overwrite`) the group at `path`.
Status CreateGroup(Store& store, const std::string& path, const GroupMetadata& group,
                   bool overwrite);

// Writes the consolidated metadata of the hierarchy under `path` (read back
// from the store by listing, so it is exactly what is there).
Status WriteConsolidatedMetadata(Store& store, const std::string& path);

}  // namespace strata

#endif  // STRATA_STORAGE_ZARR_HIERARCHY_H_
