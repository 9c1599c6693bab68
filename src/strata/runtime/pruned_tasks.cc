#include "strata/runtime/pruned_tasks.h"

#include "strata/plan/block_map.h"
#include "strata/storage/zarr/zarr_target.h"

namespace strata {
namespace {

// The op whose tasks compute `op`'s blocks.
int TaskOp(const Plan& plan, int op) {
  const int leader = plan.ops()[op].computed_with;
  return leader >= 0 ? leader : op;
}

// The ops a task of `op` produces a block of: itself and its siblings.
std::vector<int> Members(const PlannedOp& op) {
  std::vector<int> m = {op.index};
  m.insert(m.end(), op.siblings.begin(), op.siblings.end());
  return m;
}

}  // namespace

std::shared_ptr<const PrunedTasks> PrunedTasks::Compute(const Plan& plan,
                                                        const LeafDone& leaf_done) {
  const std::vector<PlannedOp>& ops = plan.ops();
  const int n = static_cast<int>(ops.size());
  // Task-running ops, each after every op that reads what it produces
  // (depth-first postorder over consumer edges).
  std::vector<int> order;
  std::vector<char> state(n, 0);  // 0 new, 1 on the stack, 2 done
  std::function<void(int)> visit = [&](int u) {
    state[u] = 1;
    for (int m : Members(ops[u])) {
      for (int c : ops[m].consumers) {
        const int cu = TaskOp(plan, c);
        if (ops[cu].runs_tasks() && state[cu] == 0) visit(cu);
      }
    }
    state[u] = 2;
    order.push_back(u);
  };
  for (const PlannedOp& op : ops) {
    if (op.runs_tasks() && state[op.index] == 0) visit(op.index);
  }

  // needed[op][block]: some task that runs reads that block of op.
  std::vector<std::vector<bool>> needed(n);
  for (const PlannedOp& op : ops) {
    if (op.materialized && !op.consumers.empty()) needed[op.index].assign(op.node->num_blocks(), false);
  }
  auto pruned = std::shared_ptr<PrunedTasks>(new PrunedTasks());
  pruned->pruned_.resize(n);
  pruned->count_.assign(n, 0);
  for (int u : order) {
    const PlannedOp& op = ops[u];
    const std::vector<int> members = Members(op);
    const Index tasks = op.num_tasks();
    const Shape& grid = op.node->grid.grid_shape();
    Shape block(grid.size());
    std::vector<bool> bits;
    int64_t count = 0;
    for (Index b = 0; b < tasks; ++b) {
      UnravelIndex(b, grid, block);
      bool runs = false;
      for (int m : members) {
        const PlannedOp& member = ops[m];
        if (member.node->kind == NodeKind::kStore) {
          runs = !leaf_done(member, block);
        } else if (member.output_slot >= 0 || member.is_output) {
          runs = true;  // a result of compute(): its blocks fill the returned array
        } else if (member.consumers.empty()) {
          runs = !leaf_done(member, block);
        } else {
          runs = needed[m][b];
        }
        if (runs) break;
      }
      if (!runs) {
        if (bits.empty()) bits.assign(tasks, false);
        bits[b] = true;
        ++count;
        continue;
      }
      // It runs: every block it reads is needed.
      for (const Dependency& d : op.dependencies) {
        std::vector<bool>& in = needed[d.producer];
        const Shape& in_grid = ops[d.producer].node->grid.grid_shape();
        ForEachInputBlock(d.map, block,
                          [&](std::span<const Index> k) { in[LinearIndex(k, in_grid)] = true; });
      }
    }
    pruned->pruned_[u] = std::move(bits);
    pruned->count_[u] = count;
    pruned->total_ += count;
  }
  if (pruned->total_ == 0) return nullptr;
  return pruned;
}

std::shared_ptr<const PrunedTasks> PrunedTasks::ForResume(const Plan& plan) {
  bool resumed = false;
  for (const PlannedOp& op : plan.ops()) {
    if (op.node->kind == NodeKind::kStore && op.node->target && op.num_tasks() > 0) {
      resumed = resumed || op.node->target->resumed_chunks() > 0;
    }
  }
  if (!resumed) return nullptr;
  return Compute(plan, [](const PlannedOp& op, std::span<const Index> block) {
    const Node& node = *op.node;
    return node.kind == NodeKind::kStore && node.target && node.target->BlockDone(node.grid, block);
  });
}

namespace {

// Whether every block of `producer` along each axis is read by the map:
// then (the blocks read being the product of the per-axis lists) every
// block of it is read by some consumer block.
bool ReadsEveryBlock(const InputMap& map) {
  for (const AxisMap& a : map.axes) {
    if (a.is_identity()) continue;
    for (Index k = 0; k < a.num_input_blocks(); ++k) {
      const bool read = a.kind() == AxisMap::Kind::kFixed ? a.IsRead(k)
                                                          : a.ConsumersOf(k).size() > 0;
      if (!read) return false;
    }
  }
  return true;
}

bool SomeBlockIsUnread(const Plan& plan) {
  for (const PlannedOp& op : plan.ops()) {
    if (!op.runs_tasks()) continue;
    for (const Dependency& d : op.dependencies) {
      if (!ReadsEveryBlock(d.map)) return true;
    }
  }
  return false;
}

}  // namespace

std::shared_ptr<const PrunedTasks> PrunedTasks::ForRun(const Plan& plan) {
  if (std::shared_ptr<const PrunedTasks> resumed = ForResume(plan)) return resumed;
  if (!SomeBlockIsUnread(plan)) return nullptr;
  // No target chunk is complete: every leaf runs, and what is pruned is
  // what no running task reads.
  return Compute(plan, [](const PlannedOp&, std::span<const Index>) { return false; });
}

Index PrunedTasks::NextLive(int op, Index block) const {
  const std::vector<bool>& bits = pruned_[op];
  if (bits.empty()) return block;
  const Index end = static_cast<Index>(bits.size());
  while (block < end && bits[block]) ++block;
  return block;
}

}  // namespace strata
