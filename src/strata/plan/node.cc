#include "strata/plan/node.h"

#include <fmt/format.h>

namespace strata {

std::string_view NodeKindName(NodeKind kind) {
  switch (kind) {
    case NodeKind::kZarrSource: return "zarr-source";
    case NodeKind::kMemorySource: return "memory-source";
    case NodeKind::kVirtual: return "virtual";
    case NodeKind::kBlockwise: return "blockwise";
    case NodeKind::kRechunk: return "rechunk";
    case NodeKind::kExchange: return "exchange";
    case NodeKind::kStore: return "store";
  }
  return "?";
}

int64_t NextNodeId() {
  static std::atomic<int64_t> next{1};
  return next.fetch_add(1, std::memory_order_relaxed);
}

std::string NodeName(int64_t id) { return fmt::format("array-{:03d}", id); }

std::shared_ptr<const Node> MakeNode(Node node) {
  STRATA_CHECK(node.inputs.size() == node.maps.size())
      << node.op_name << ": " << node.inputs.size() << " inputs, " << node.maps.size() << " maps";
  for (size_t i = 0; i < node.inputs.size(); ++i) {
    STRATA_CHECK(static_cast<int>(node.maps[i].axes.size()) == node.inputs[i]->grid.rank())
        << node.op_name << ": map " << i << " has " << node.maps[i].axes.size()
        << " axes for an input of rank " << node.inputs[i]->grid.rank();
  }
  STRATA_CHECK(node.partial_inputs.size() <= node.inputs.size()) << node.op_name;
  STRATA_CHECK(node.grid.shape() == node.shape) << node.op_name;
  node.id = NextNodeId();
  if (node.name.empty()) node.name = NodeName(node.id);
  return std::make_shared<const Node>(std::move(node));
}

std::shared_ptr<const Node> MakeRechunk(const std::shared_ptr<const Node>& input, ChunkGrid grid,
                                        int64_t min_mem) {
  Node node;
  node.op_name = "rechunk";
  node.kind = NodeKind::kRechunk;
  node.shape = input->shape;
  node.dtype = input->dtype;
  InputMap map;
  for (int i = 0; i < grid.rank(); ++i) map.axes.push_back(AxisMap::Overlap(i, grid, input->grid, i));
  node.grid = std::move(grid);
  node.inputs = {input};
  node.maps = {std::move(map)};
  node.rechunk_min_mem = min_mem;
  node.spec = input->spec;
  return MakeNode(std::move(node));
}

}  // namespace strata
