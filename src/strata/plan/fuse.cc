// The fuse pass: Cubed's fusion rules. A blockwise op (or an exchange) whose
// single consumer is not itself requested is computed inside its consumer's
// tasks, as long as the fused group reads at most kMaxFusedSourceArrays
// source arrays and kMaxFusedInputBlocks input blocks per task (a fused
// exchange gathers slices from its input's tier: those are not source reads),
// and its projected memory stays within allowed_mem. Nothing is fused into an
// exchange (it is where data moves). Fusing a many-task op into a consumer
// with few tasks would leave workers idle, so that is declined too, as is a
// fusion whose fewer, larger tasks divide unevenly among the workers and so
// lengthen the stage by more than 5% (10 tasks become 5 of twice the work:
// 3 rounds on 2 workers, 6 tasks' time instead of 5). An op
// whose node asks to stay materialized (Node::keep_materialized) is never
// fused. Each decision is noted in the plan.
#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "strata/base/byte_size.h"
#include "strata/plan/memory_model.h"
#include "strata/plan/passes_internal.h"

namespace strata::internal_plan {

Status Fuse(PlanDraft& d) {
  std::vector<PlannedOp>& ops = d.ops;
  // Distinct consumer ops of each op.
  std::vector<std::set<int>> consumers(ops.size());
  for (const PlannedOp& op : ops) {
    for (size_t i = 0; i < op.node->inputs.size(); ++i) consumers[d.InputOf(op, i)].insert(op.index);
  }
  auto root_of = [&](int i) {
    while (ops[i].fused_into >= 0) i = ops[i].fused_into;
    return i;
  };
  MemoryModel model(ops, d.index, d.spec.reserved_mem);
  // Sweeps in topological order until nothing changes: an op refused because
  // its consumer's own tasks would not fit is tried again once that consumer
  // is fused further down (where(a < 0.1, nan, a) feeding a streaming
  // reduction: `less` fits only inside the reduction's strips).
  std::map<int, std::string> refused;  // op index -> why, as of the last sweep
  std::vector<std::string> fused;
  for (int sweep = 0; sweep < 4; ++sweep) {
    bool changed = false;
    for (PlannedOp& op : ops) {
      if (op.fused_into >= 0) continue;
      const Node& node = *op.node;
      const bool exchange = node.kind == NodeKind::kExchange;
      if ((node.kind != NodeKind::kBlockwise && !exchange) || op.is_output || !op.materialized ||
          node.keep_materialized) {
        continue;
      }
      if (consumers[op.index].size() != 1) continue;
      const int consumer = *consumers[op.index].begin();
      const int root = root_of(consumer);
      const Node& root_node = *ops[root].node;
      if (root_node.kind == NodeKind::kExchange) continue;
      if (ops[consumer].node->kind == NodeKind::kExchange) continue;
      op.fused_into = root;
      op.materialized = false;
      int sources = 0;
      int64_t blocks = 0;
      GroupStats(d, root, &sources, &blocks);
      const int64_t projected = model.Project(root);
      std::string why;
      const int64_t producer_tasks = node.num_blocks();
      const int64_t consumer_tasks = root_node.num_blocks();
      const int64_t workers = std::max(1, d.spec.workers);
      const int64_t enough = 2 * workers;
      // The stage's length in the producer's tasks: its rounds on the
      // workers times what one of its tasks does.
      const int64_t span_before = (producer_tasks + workers - 1) / workers;
      const int64_t span_after = consumer_tasks <= 0 ? 0
                                 : (consumer_tasks + workers - 1) / workers *
                                       ((producer_tasks + consumer_tasks - 1) / consumer_tasks);
      if (consumer_tasks < producer_tasks && consumer_tasks < enough) {
        why = fmt::format("{} tasks would become {}, fewer than 2 per worker", producer_tasks,
                          consumer_tasks);
      } else if (consumer_tasks < producer_tasks && span_after * 20 > span_before * 21) {
        why = fmt::format("{} tasks would become {}, taking {} of their tasks' time on {} workers "
                          "instead of {}",
                          producer_tasks, consumer_tasks, span_after, workers, span_before);
      } else if (sources > kMaxFusedSourceArrays) {
        why = fmt::format("{} source arrays > {}", sources, kMaxFusedSourceArrays);
      } else if (blocks > kMaxFusedInputBlocks && !exchange) {
        why = fmt::format("{} input blocks per task > {}", blocks, kMaxFusedInputBlocks);
      } else if (projected > d.spec.allowed_mem) {
        why = fmt::format("projected {} > allowed_mem {}", FormatBytes(projected),
                          FormatBytes(d.spec.allowed_mem));
      }
      if (!why.empty()) {
        op.fused_into = -1;
        op.materialized = true;
        refused[op.index] = fmt::format("not fused: {} ({}) into {} ({}): {}", node.name,
                                        node.op_name, root_node.name, root_node.op_name, why);
        continue;
      }
      refused.erase(op.index);
      changed = true;
      fused.push_back(fmt::format(
          "fused {} ({}) into {} ({}): single consumer; {} source arrays; {} input blocks per "
          "task; projected {} <= {}",
          node.name, node.op_name, root_node.name, root_node.op_name, sources, blocks,
          FormatBytes(projected), FormatBytes(d.spec.allowed_mem)));
    }
    if (!changed) break;
  }
  for (std::string& note : fused) d.decisions.push_back(std::move(note));
  for (auto& [index, note] : refused) d.decisions.push_back(std::move(note));
  Link(d);
  return Status::Ok();
}


// The fuse_siblings pass. Cubed fuses an op with its predecessors
// (multiple_inputs_optimize_dag) and leaves "child fusion" of an op's several
// consumers as a TODO; quadratic means needs exactly that: mean(u*u),
// mean(v*v) and mean(u*v) each read u or v, so every block of u and v would
// be read and decoded twice. Here ops that read blocks of one leaf (a Zarr
// source, or an intermediate in a tier) through the same key function, on
// grids of the same blocks and at the same depth (so none reads another),
// become one group: the last of them in topological order runs one task per
// block that computes every member's block, reading each leaf block once.
// A group keeps within Cubed's limits over all its members (source arrays,
// input blocks per task) and within allowed_mem counting every member's
// output (MemoryModel::Project); a member that would break them is left out
// and the plan says why.
namespace {

// A block of a leaf that a task of some op reads, and how.
struct LeafRead {
  const Node* leaf = nullptr;
  InputMap map;  // from the op's blocks to the leaf's
};

std::vector<LeafRead> LeafReadsOf(const PlanDraft& d, int root) {
  std::vector<LeafRead> reads;
  const PlannedOp& op = d.ops[root];
  std::function<void(const Node&, const InputMap*)> walk = [&](const Node& node,
                                                              const InputMap* outer) {
    for (size_t i = 0; i < node.inputs.size(); ++i) {
      const PlannedOp& in = d.ops[d.index.at(node.inputs[i].get())];
      InputMap composed =
          outer ? Compose(*outer, node.maps[i], op.node->grid.grid_shape()) : node.maps[i];
      if (in.materialized || in.node->kind == NodeKind::kZarrSource) {
        reads.push_back({in.node.get(), std::move(composed)});
      } else if (in.fused_into == root || in.node->kind == NodeKind::kVirtual) {
        walk(*in.node, &composed);
      }
    }
  };
  walk(*op.node, nullptr);
  return reads;
}

int64_t BlocksPerTask(const InputMap& map) {
  int64_t n = 1;
  for (const AxisMap& a : map.axes) n *= a.max_inputs();
  return n;
}

bool SiblingCandidate(const PlannedOp& op) {
  return op.runs_tasks() && op.node->kind == NodeKind::kBlockwise && op.fused_into < 0 &&
         op.siblings.empty() && op.node->num_blocks() > 0;
}

}  // namespace

Status FuseSiblings(PlanDraft& d) {
  std::vector<PlannedOp>& ops = d.ops;
  std::vector<std::vector<LeafRead>> reads(ops.size());
  for (const PlannedOp& op : ops) {
    if (SiblingCandidate(op)) reads[op.index] = LeafReadsOf(d, op.index);
  }
  // Whether a and b read some leaf through the same key function and read no
  // leaf through different ones.
  auto share = [&](int a, int b) {
    bool same = false;
    for (const LeafRead& x : reads[a]) {
      for (const LeafRead& y : reads[b]) {
        if (x.leaf != y.leaf) continue;
        if (!SameMap(x.map, y.map)) return false;
        same = true;
      }
    }
    return same;
  };
  MemoryModel model(ops, d.index, d.spec.reserved_mem);
  std::vector<bool> grouped(ops.size(), false);
  for (size_t first = 0; first < ops.size(); ++first) {
    if (grouped[first] || reads[first].empty()) continue;
    const PlannedOp& head = ops[first];
    // The group, in topological order; its last member leads.
    std::vector<int> group = {static_cast<int>(first)};
    std::map<int, std::string> left_out;
    // Sweeps until the group stops growing: a candidate may share a leaf
    // only with a member found after it (v*v with u*v, found through u*u).
    for (bool grew = true; grew;) {
    grew = false;
    for (size_t next = first + 1; next < ops.size(); ++next) {
      const PlannedOp& cand = ops[next];
      if (grouped[next] || reads[next].empty() || cand.depth != head.depth ||
          cand.node->grid.grid_shape() != head.node->grid.grid_shape() ||
          std::find(group.begin(), group.end(), static_cast<int>(next)) != group.end()) {
        continue;
      }
      bool shares = false, conflicts = false;
      for (int m : group) {
        const bool s = share(m, static_cast<int>(next));
        shares = shares || s;
        // Any leaf both read must be read the same way.
        for (const LeafRead& x : reads[m]) {
          for (const LeafRead& y : reads[next]) {
            conflicts = conflicts || (x.leaf == y.leaf && !SameMap(x.map, y.map));
          }
        }
      }
      if (!shares || conflicts) continue;
      // Try it: the limits over the whole group, then its projection.
      std::vector<int> trial = group;
      trial.push_back(static_cast<int>(next));
      std::sort(trial.begin(), trial.end());  // the last one leads
      std::set<const Node*> leaves;
      int64_t blocks = 0;
      for (int m : trial) {
        for (const LeafRead& r : reads[m]) {
          if (leaves.insert(r.leaf).second) blocks += BlocksPerTask(r.map);
        }
      }
      int sources = 0;
      for (const Node* leaf : leaves) sources += leaf->kind != NodeKind::kVirtual;
      std::string why;
      if (sources > kMaxFusedSourceArrays) {
        why = fmt::format("{} source arrays > {}", sources, kMaxFusedSourceArrays);
      } else if (blocks > kMaxFusedInputBlocks) {
        why = fmt::format("{} input blocks per task > {}", blocks, kMaxFusedInputBlocks);
      } else {
        PlannedOp& leader = ops[trial.back()];
        leader.siblings.assign(trial.begin(), trial.end() - 1);
        const int64_t projected = model.Project(leader.index);
        leader.siblings.clear();
        if (projected > d.spec.allowed_mem) {
          why = fmt::format("projected {} > allowed_mem {}", FormatBytes(projected),
                            FormatBytes(d.spec.allowed_mem));
        }
      }
      if (!why.empty()) {
        left_out[static_cast<int>(next)] =
            fmt::format("{} ({}): {}", cand.node->name, cand.node->op_name, why);
        continue;
      }
      left_out.erase(static_cast<int>(next));
      group = std::move(trial);
      grew = true;
    }
    }
    for (const auto& [index, note] : left_out) {
      d.decisions.push_back(fmt::format("not fused with sibling {}: {}", head.node->name, note));
    }
    if (group.size() < 2) continue;
    const int64_t tasks = head.node->num_blocks();
    PlannedOp& leader = ops[group.back()];
    if (tasks < d.spec.workers) {
      d.decisions.push_back(fmt::format(
          "not fused: siblings {} and {} others: {} tasks would leave workers idle",
          leader.node->name, group.size() - 1, tasks));
      continue;
    }
    leader.siblings.assign(group.begin(), group.end() - 1);
    std::vector<std::string> names;
    std::map<int64_t, const Node*> leaves;  // by id: a stable order for the plan text
    int64_t reads_before = 0, reads_after = 0;
    for (int m : group) {
      grouped[m] = true;
      if (m != leader.index) ops[m].computed_with = leader.index;
      names.push_back(fmt::format("{} ({})", ops[m].node->name, ops[m].node->op_name));
      for (const LeafRead& r : reads[m]) {
        reads_before += BlocksPerTask(r.map);
        if (leaves.emplace(r.leaf->id, r.leaf).second) reads_after += BlocksPerTask(r.map);
      }
    }
    std::vector<std::string> leaf_names;
    for (const auto& [id, leaf] : leaves) leaf_names.push_back(leaf->name);
    d.decisions.push_back(fmt::format(
        "fused siblings {}: one task per block computes all {}, reading {} once ({} input "
        "blocks per task, were {}); projected {} <= {}",
        fmt::join(names, ", "), group.size(), fmt::join(leaf_names, ", "), reads_after,
        reads_before, FormatBytes(model.Project(leader.index)),
        FormatBytes(d.spec.allowed_mem)));
  }
  Link(d);
  return Status::Ok();
}

}  // namespace strata::internal_plan
