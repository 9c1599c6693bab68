#include "strata/api/plan_checks.h"

#include <fmt/format.h>

#include <unordered_set>

#include "strata/storage/location.h"
#include "strata/storage/zarr/zarr_array.h"

namespace strata::internal_api {
namespace {

// Every node reachable from `roots`, each once.
std::vector<const Node*> Reachable(const std::vector<std::shared_ptr<const Node>>& roots) {
  std::vector<const Node*> out;
  std::unordered_set<const Node*> seen;
  std::vector<const Node*> stack;
  for (const auto& r : roots) stack.push_back(r.get());
  while (!stack.empty()) {
    const Node* n = stack.back();
    stack.pop_back();
    if (n == nullptr || !seen.insert(n).second) continue;
    out.push_back(n);
    for (const auto& in : n->inputs) stack.push_back(in.get());
  }
  return out;
}

}  // namespace

Status CheckBlockCount(const ChunkGrid& grid, std::string_view what) {
  // NumElements of a grid shape is not checked: multiply with care.
  Index blocks = 1;
  bool over = false;
  for (Index d : grid.grid_shape()) {
    if (__builtin_mul_overflow(blocks, d, &blocks)) over = true;
  }
  if (!over && blocks <= kMaxBlocksPerArray) return Status::Ok();
  return InvalidArgumentError(fmt::format(
      "{} of shape {} in chunks {} has {} blocks, more than the {} Strata plans; use larger "
      "chunks",
      what, ShapeToString(grid.shape()), ShapeToString(grid.chunk_shape()),
      over ? std::string("more than 2^63") : fmt::format("{}", blocks), kMaxBlocksPerArray));
}

Status CheckGridLimits(const std::vector<std::shared_ptr<const Node>>& roots) {
  for (const Node* n : Reachable(roots)) {
    STRATA_RETURN_IF_ERROR(CheckBlockCount(n->grid, fmt::format("{} ({})", n->name, n->op_name)));
  }
  return Status::Ok();
}

Status CheckNoAliasing(const std::vector<std::shared_ptr<const Node>>& roots) {
  std::vector<const Node*> sources, stores;
  for (const Node* n : Reachable(roots)) {
    if (n->kind == NodeKind::kZarrSource && n->zarr) sources.push_back(n);
    if (n->kind == NodeKind::kStore && n->target) stores.push_back(n);
  }
  if (stores.empty()) return Status::Ok();
  std::vector<Location> written;
  for (const Node* s : stores) {
    STRATA_ASSIGN_OR_RETURN(Location w, ResolveLocation(s->target->url()));
    for (const Node* src : sources) {
      STRATA_ASSIGN_OR_RETURN(Location r, ResolveLocation(src->zarr->url()));
      if (Overlaps(r, w)) {
        return InvalidArgumentError(fmt::format(
            "to_zarr {}: the computation reads the Zarr array {} ({}), and writing {} would "
            "destroy it; write to another location",
            s->target->url(), src->zarr->url(), src->name,
            r.path == w.path ? "to the same location" : "around or inside it"));
      }
    }
    for (const Location& other : written) {
      if (Overlaps(other, w)) {
        return InvalidArgumentError(fmt::format(
            "to_zarr {}: another output of the same computation writes {}, which overlaps it",
            s->target->url(), other.ToString()));
      }
    }
    written.push_back(std::move(w));
  }
  return Status::Ok();
}

}  // namespace strata::internal_api
