// The check pass (the memory contract: no task over allowed_mem, refused
// before anything runs, naming the op) and the invariants every pass must
// leave true, checked after each pass in debug builds.
#include <fmt/format.h>

#include <algorithm>

#include "strata/base/byte_size.h"
#include "strata/plan/passes_internal.h"

namespace strata::internal_plan {

Status CheckBudget(const PlanDraft& d) {
  const ResolvedSpec& spec = d.spec;
  if (d.result_bytes > 0 && d.result_bytes > spec.total_system_mem - spec.allowed_mem) {
    return ResourceExhaustedError(fmt::format(
        "the results compute() would return take {}, more than total_system_mem {} leaves beside "
        "one task's allowed_mem {}; write them with to_zarr instead",
        FormatBytes(d.result_bytes), FormatBytes(spec.total_system_mem),
        FormatBytes(spec.allowed_mem)));
  }
  for (const PlannedOp& op : d.ops) {
    if (!op.node->calling_process_only.empty() && (spec.executor == ExecutorKind::kProcesses ||
                                                   spec.executor == ExecutorKind::kMpi)) {
      return InvalidArgumentError(fmt::format(
          "op '{}' ({}) {}, so it cannot run on the {} executor; use the threads or inline "
          "executor",
          op.node->op_name, op.node->name, op.node->calling_process_only,
          ExecutorName(spec.executor)));
    }
    if (op.materialized && op.projected_mem > d.spec.allowed_mem) {
      // ResourceExhausted: the plan does not fit its memory (Python's PlanError).
      return ResourceExhaustedError(fmt::format(
          "op '{}' ({}) projects {} per task, over allowed_mem {} (chunks {} of {}, reserved_mem "
          "{}); use smaller chunks or raise allowed_mem",
          op.node->op_name, op.node->name, FormatBytes(op.projected_mem),
          FormatBytes(d.spec.allowed_mem), op.node->grid.ToString(), op.node->dtype.name(),
          FormatBytes(d.spec.reserved_mem)));
    }
  }
  return Status::Ok();
}

Status CheckInvariants(const PlanDraft& d, std::string_view after) {
  auto broken = [&](std::string what) {
    return InternalError(fmt::format("plan check after {}: {}", after, what));
  };
  const std::vector<PlannedOp>& ops = d.ops;
  const bool lowered = after != "collect";
  const bool placed = after == "place_tiers" || after == "project_memory" || after == "check";
  const bool projected = after == "project_memory" || after == "check";
  for (const PlannedOp& op : ops) {
    const Node& node = *op.node;
    if (op.index < 0 || static_cast<size_t>(op.index) >= ops.size() || &ops[op.index] != &op) {
      return broken(fmt::format("{} has index {}", node.name, op.index));
    }
    auto self = d.index.find(&node);
    if (self == d.index.end() || self->second != op.index) {
      return broken(fmt::format("{} is not indexed at its op", node.name));
    }
    if (lowered && node.kind == NodeKind::kRechunk) {
      return broken(fmt::format("{} is a rechunk that was not lowered", node.name));
    }
    if (node.inputs.size() != node.maps.size()) {
      return broken(fmt::format("{} has {} inputs and {} maps", node.name, node.inputs.size(),
                                node.maps.size()));
    }
    for (size_t i = 0; i < node.inputs.size(); ++i) {
      auto in = d.index.find(node.inputs[i].get());
      if (in == d.index.end()) return broken(fmt::format("an input of {} is missing", node.name));
      if (in->second >= op.index) {
        return broken(fmt::format("{} reads {}, which comes after it", node.name,
                                  ops[in->second].node->name));
      }
      if (static_cast<int>(node.maps[i].axes.size()) != ops[in->second].node->grid.rank()) {
        return broken(fmt::format("map {} of {} does not match its input's rank", i, node.name));
      }
    }
    if (op.fused_into >= 0) {
      if (op.materialized) return broken(fmt::format("{} is fused and materialized", node.name));
      const PlannedOp& root = ops[op.fused_into];
      if (!root.materialized || root.fused_into >= 0) {
        return broken(fmt::format("{} is fused into {}, which runs no tasks of its own",
                                  node.name, root.node->name));
      }
    }
    if (op.materialized && (node.kind == NodeKind::kBlockwise || node.kind == NodeKind::kVirtual) &&
        !node.fn) {
      return broken(fmt::format("{} runs tasks but has no block function", node.name));
    }
    for (const Dependency& dep : op.dependencies) {
      if (!op.materialized) return broken(fmt::format("{} has dependencies but no tasks", node.name));
      const PlannedOp& p = ops[dep.producer];
      if (!p.materialized || p.index >= op.index) {
        return broken(fmt::format("{} depends on {}, which is not an earlier op with tasks",
                                  node.name, p.node->name));
      }
      if (static_cast<int>(dep.map.axes.size()) != p.node->grid.rank()) {
        return broken(fmt::format("the dependency of {} on {} has a map of the wrong rank",
                                  node.name, p.node->name));
      }
      if (std::find(p.consumers.begin(), p.consumers.end(), op.index) == p.consumers.end()) {
        return broken(fmt::format("{} depends on {} but is not among its consumers", node.name,
                                  p.node->name));
      }
    }
    if (op.tier != Tier::kNone && (!op.materialized || op.consumers.empty())) {
      return broken(fmt::format("{} has a tier but no readers", node.name));
    }
    if (placed && op.materialized && !op.consumers.empty() && op.tier == Tier::kNone) {
      return broken(fmt::format("{} is read by other tasks but has no tier", node.name));
    }
    if (op.stored_grid && op.stored_grid->shape() != node.shape) {
      return broken(fmt::format("{} stores chunks of another shape", node.name));
    }
    if (projected && op.runs_tasks() && op.projected_mem < d.spec.reserved_mem) {
      return broken(fmt::format("{} runs tasks with no projection", node.name));
    }
    if (op.computed_with >= 0) {
      const PlannedOp& leader = ops[op.computed_with];
      if (!op.materialized || !leader.runs_tasks() ||
          std::find(leader.siblings.begin(), leader.siblings.end(), op.index) ==
              leader.siblings.end()) {
        return broken(fmt::format("{} is computed with {}, which does not list it", node.name,
                                  leader.node->name));
      }
      if (leader.node->grid.grid_shape() != node.grid.grid_shape() || !op.dependencies.empty()) {
        return broken(fmt::format("sibling {} of {} has other blocks or dependencies of its own",
                                  node.name, leader.node->name));
      }
    }
    for (int s : op.siblings) {
      if (s < 0 || static_cast<size_t>(s) >= ops.size() || ops[s].computed_with != op.index) {
        return broken(fmt::format("{} lists a sibling that is not computed with it", node.name));
      }
      for (const Dependency& dep : op.dependencies) {
        if (dep.producer == s) {
          return broken(fmt::format("{} reads its sibling {}", node.name, ops[s].node->name));
        }
      }
    }
  }
  for (int out : d.outputs) {
    if (out < 0 || static_cast<size_t>(out) >= ops.size() ||
        (!ops[out].materialized && ops[out].node->kind != NodeKind::kRechunk)) {
      return broken(fmt::format("requested op {} runs no tasks", out));
    }
  }
  return Status::Ok();
}

}  // namespace strata::internal_plan
