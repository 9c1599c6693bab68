// The collect pass: the DAG reachable from the requested arrays, in
// topological order (inputs first), with the replacements lower_rechunk made
// taken in; which ops run tasks; the results' bytes. Link (also here) derives
// what every materialized op depends on through fused chains.
#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <map>
#include <set>
#include <span>

#include "strata/plan/passes_internal.h"

namespace strata::internal_plan {
namespace {

bool Materializable(NodeKind kind) {
  return kind == NodeKind::kBlockwise || kind == NodeKind::kExchange || kind == NodeKind::kStore;
}

}  // namespace

const std::shared_ptr<const Node>& ResolveNode(const PlanDraft& d,
                                               const std::shared_ptr<const Node>& node) {
  const std::shared_ptr<const Node>* at = &node;
  for (auto it = d.replaced.find(at->get()); it != d.replaced.end();
       it = d.replaced.find(at->get())) {
    at = &it->second;
  }
  return *at;
}

Status Collect(PlanDraft& d) {
  d.ops.clear();
  d.index.clear();
  d.outputs.clear();
  d.result_bytes = 0;
  // Iterative depth-first post-order: deep chains of ops must not exhaust
  // the stack.
  struct Frame {
    std::shared_ptr<const Node> node;
    size_t next = 0;
  };
  for (const auto& requested : d.requested) {
    if (!requested) return InvalidArgumentError("compute() was given an empty array handle");
    std::vector<Frame> stack;
    const auto& root = ResolveNode(d, requested);
    if (!d.index.count(root.get())) stack.push_back({root, 0});
    while (!stack.empty()) {
      Frame& top = stack.back();
      if (top.next < top.node->inputs.size()) {
        const auto& in = ResolveNode(d, top.node->inputs[top.next++]);
        if (!d.index.count(in.get())) stack.push_back({in, 0});
        continue;
      }
      PlannedOp op;
      op.node = top.node;
      op.index = static_cast<int>(d.ops.size());
      op.materialized = Materializable(top.node->kind) || d.published.count(top.node.get()) > 0;
      auto note = d.notes.find(top.node.get());
      if (note != d.notes.end()) op.note = note->second;
      d.index[top.node.get()] = op.index;
      d.ops.push_back(std::move(op));
      stack.pop_back();
    }
  }
  // Replaced nodes are found at their replacement's op.
  for (const auto& [node, replacement] : d.replaced) {
    auto it = d.index.find(ResolveNode(d, replacement).get());
    if (it != d.index.end()) d.index[node] = it->second;
  }
  for (size_t i = 0; i < d.requested.size(); ++i) {
    PlannedOp& op = d.ops[d.index.at(d.requested[i].get())];
    d.outputs.push_back(op.index);
    if (op.node->kind != NodeKind::kStore) {
      op.is_output = true;
      if (op.output_slot < 0) op.output_slot = static_cast<int>(i);
    }
  }
  // Sources and virtual arrays that are requested must still produce blocks:
  // a task copies each block.
  for (PlannedOp& op : d.ops) {
    if (op.is_output && !op.materialized && op.node->kind != NodeKind::kRechunk) {
      op.materialized = true;
    }
    if (op.is_output && op.materialized) d.result_bytes += op.node->nbytes();
  }
  Link(d);
  return Status::Ok();
}

void GroupStats(const PlanDraft& d, int root, int* sources, int64_t* blocks) {
  GroupStats(d, std::span<const int>(&root, 1), sources, blocks);
}

void GroupStats(const PlanDraft& d, std::span<const int> roots, int* sources, int64_t* blocks) {
  const std::vector<PlannedOp>& ops = d.ops;
  auto root_of = [&](int i) {
    while (ops[i].fused_into >= 0) i = ops[i].fused_into;
    return i;
  };
  // Input blocks per task by leaf: a leaf several roots read through the same
  // key function is read once (sibling fusion shares it).
  std::map<std::pair<const Node*, int64_t>, int64_t> leaves;
  std::function<void(const Node&, int64_t, int)> walk = [&](const Node& node, int64_t mult,
                                                            int root) {
    for (size_t i = 0; i < node.inputs.size(); ++i) {
      const PlannedOp& in_op = ops[d.index.at(node.inputs[i].get())];
      int64_t n = mult;
      for (const AxisMap& a : node.maps[i].axes) n *= a.max_inputs();
      const bool here =
          (!in_op.materialized && in_op.fused_into >= 0 && root_of(in_op.index) == root) ||
          (in_op.node->kind == NodeKind::kVirtual && !in_op.materialized);
      if (here) {
        walk(*in_op.node, n, root);
      } else {
        const int64_t input = roots.size() > 1 ? -1 : static_cast<int64_t>(i);
        int64_t& count = leaves[{in_op.node.get(), input}];
        count = roots.size() > 1 ? std::max(count, n) : count + n;
      }
    }
  };
  for (int root : roots) walk(*ops[root].node, 1, root);
  std::set<const Node*> arrays;
  int64_t total = 0;
  for (const auto& [leaf, n] : leaves) {
    arrays.insert(leaf.first);
    total += n;
  }
  *sources = static_cast<int>(arrays.size());
  *blocks = total;
}

void Link(PlanDraft& d) {
  std::vector<PlannedOp>& ops = d.ops;
  for (PlannedOp& op : ops) {
    if (op.fused_into >= 0) {
      int root = op.fused_into;
      while (ops[root].fused_into >= 0) root = ops[root].fused_into;
      op.fused_into = root;
    }
    op.dependencies.clear();
    op.consumers.clear();
    op.fused_names.clear();
    op.depth = 0;
  }
  for (PlannedOp& op : ops) {
    if (!op.materialized) continue;
    // Dependencies through fused chains (and virtual arrays, recomputed in
    // place).
    std::function<void(const Node&, const InputMap*)> walk = [&](const Node& node,
                                                                const InputMap* outer) {
      for (size_t i = 0; i < node.inputs.size(); ++i) {
        const PlannedOp& in_op = ops[d.index.at(node.inputs[i].get())];
        InputMap composed = outer ? Compose(*outer, node.maps[i], op.node->grid.grid_shape())
                                  : node.maps[i];
        if (in_op.materialized) {
          op.dependencies.push_back({in_op.index, std::move(composed)});
        } else if (in_op.fused_into == op.index) {
          op.fused_names.push_back(fmt::format("{} ({})", in_op.node->name, in_op.node->op_name));
          walk(*in_op.node, &composed);
        } else if (in_op.node->kind == NodeKind::kVirtual) {
          walk(*in_op.node, &composed);
        }
      }
    };
    walk(*op.node, nullptr);
  }
  // A sibling's blocks are computed in its leader's tasks: the leader waits
  // for what the whole group reads.
  for (PlannedOp& op : ops) {
    if (op.computed_with < 0) continue;
    std::vector<Dependency>& group = ops[op.computed_with].dependencies;
    for (Dependency& dep : op.dependencies) group.push_back(std::move(dep));
    op.dependencies.clear();
  }
  for (PlannedOp& op : ops) {
    if (!op.materialized || op.computed_with >= 0) continue;
    std::vector<int> roots = {op.index};
    roots.insert(roots.end(), op.siblings.begin(), op.siblings.end());
    GroupStats(d, roots, &op.source_arrays, &op.input_blocks_per_task);
  }
  for (PlannedOp& op : ops) {
    if (op.computed_with >= 0) op.depth = ops[op.computed_with].depth;
    for (const Dependency& dep : op.dependencies) {
      op.depth = std::max(op.depth, ops[dep.producer].depth + 1);
      std::vector<int>& c = ops[dep.producer].consumers;
      if (std::find(c.begin(), c.end(), op.index) == c.end()) c.push_back(op.index);
    }
  }
}

}  // namespace strata::internal_plan
