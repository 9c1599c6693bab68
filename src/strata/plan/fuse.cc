// The fuse pass: Cubed's fusion rules. A blockwise op (or an exchange) whose
// single consumer is not itself requested is computed inside its consumer's
// tasks, as long as the fused group reads at most kMaxFusedSourceArrays
// source arrays and kMaxFusedInputBlocks input blocks per task (a fused
// exchange gathers slices from its input's tier: those are not source reads),
// and its projected memory stays within allowed_mem. Nothing is fused into an
// exchange (it is where data moves). Fusing a many-task op into a consumer
// with few tasks would leave workers idle, so that is declined too. An op
// whose node asks to stay materialized (Node::keep_materialized) is never
// fused. Each decision is noted in the plan.
#include <fmt/format.h>

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
      const int64_t enough = 2 * static_cast<int64_t>(d.spec.workers);
      if (consumer_tasks < producer_tasks && consumer_tasks < enough) {
        why = fmt::format("{} tasks would become {}, fewer than 2 per worker", producer_tasks,
                          consumer_tasks);
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

}  // namespace strata::internal_plan
