// Plan::ToText and Plan::ToJson: what `strata plan` prints and what the
// plan's JSON export holds.
#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "strata/base/byte_size.h"
#include "strata/plan/planner.h"

namespace strata {
namespace {

// A grid in a plan line: its chunks, or for an irregular grid the largest
// chunk along each axis.
std::string GridText(const ChunkGrid& grid) {
  if (grid.is_regular()) return grid.ToString();
  return fmt::format("{} irregular", ShapeToString(grid.chunk_shape()));
}

std::string Notes(const std::vector<PlannedOp>& ops, const PlannedOp& op) {
  const Node& n = *op.node;
  std::vector<std::string> notes;
  if (op.fused_into >= 0) notes.push_back(fmt::format("fused into {}", ops[op.fused_into].node->name));
  if (!op.fused_names.empty()) {
    notes.push_back(fmt::format("computes {}", fmt::join(op.fused_names, ", ")));
  }
  if (!op.siblings.empty()) {
    std::vector<std::string> names;
    for (int s : op.siblings) names.push_back(ops[s].node->name);
    notes.push_back(fmt::format("its tasks also compute siblings {}", fmt::join(names, ", ")));
  }
  if (op.computed_with >= 0) {
    notes.push_back(fmt::format("computed in the tasks of sibling {}",
                                ops[op.computed_with].node->name));
  }
  if (op.is_output) notes.push_back("returned");
  if (n.kind == NodeKind::kStore && n.target) {
    std::string writes = fmt::format("writes {}", n.target->url());
    if (n.target->metadata().chunk_shape != n.grid.chunk_shape()) {
      writes += fmt::format(" in chunks {}", ShapeToString(n.target->metadata().chunk_shape));
    }
    notes.push_back(std::move(writes));
  }
  if (op.stored_grid) notes.push_back(fmt::format("stores chunks {}", GridText(*op.stored_grid)));
  if (!op.note.empty()) notes.push_back(op.note);
  return fmt::format("{}", fmt::join(notes, "; "));
}

}  // namespace

std::string Plan::ToText() const {
  std::string out = fmt::format(
      "plan: {} arrays, {} ops with tasks, {} tasks; allowed_mem {}, reserved_mem {}, "
      "total_system_mem {}, executor {} x {}\n",
      ops_.size(),
      std::count_if(ops_.begin(), ops_.end(), [](const PlannedOp& o) { return o.runs_tasks(); }),
      total_tasks(), FormatBytes(spec_.allowed_mem), FormatBytes(spec_.reserved_mem),
      FormatBytes(spec_.total_system_mem), ExecutorName(spec_.executor), spec_.workers);
  out += fmt::format("RAM for intermediates: {}\n", FormatBytes(ram_tier_capacity_));
  out += fmt::format("{:<16} {:<12} {:<11} {:<20} {:<20} {:>7} {:>10}  {:<7} {}\n", "array", "op",
                     "kind", "shape", "chunks", "tasks", "projected", "tier", "notes");
  for (const PlannedOp& op : ops_) {
    const Node& n = *op.node;
    out += fmt::format("{:<16} {:<12} {:<11} {:<20} {:<20} {:>7} {:>10}  {:<7} {}\n", n.name,
                       n.op_name, NodeKindName(n.kind), ShapeToString(n.shape), GridText(n.grid),
                       op.runs_tasks() ? std::to_string(op.num_tasks()) : "-",
                       op.runs_tasks() ? FormatBytes(op.projected_mem) : "-", TierName(op.tier),
                       Notes(ops_, op));
  }
  for (const PlannedOp& op : ops_) {
    if (op.tier != Tier::kNone) {
      out += fmt::format("tier {} -> {}: {}\n", op.node->name, TierName(op.tier), op.tier_reason);
    }
  }
  for (const std::string& d : decisions_) out += d + "\n";
  return out;
}

std::string Plan::ToJson() const {
  nlohmann::json j;
  j["spec"] = {{"allowed_mem", spec_.allowed_mem},
               {"reserved_mem", spec_.reserved_mem},
               {"total_system_mem", spec_.total_system_mem},
               {"executor", std::string(ExecutorName(spec_.executor))},
               {"workers", spec_.workers},
               {"tier", std::string(TierChoiceName(spec_.tier))}};
  j["ram_tier_capacity"] = ram_tier_capacity_;
  j["passes"] = passes_run_;
  j["decisions"] = decisions_;
  j["total_tasks"] = total_tasks();
  nlohmann::json list = nlohmann::json::array();
  for (const PlannedOp& op : ops_) {
    const Node& n = *op.node;
    nlohmann::json o = {{"array", n.name},
                        {"op", n.op_name},
                        {"kind", std::string(NodeKindName(n.kind))},
                        {"shape", n.shape},
                        {"chunks", n.grid.ToString()},
                        {"dtype", std::string(n.dtype.name())},
                        {"materialized", op.materialized},
                        {"tasks", op.num_tasks()},
                        {"projected_mem", op.projected_mem},
                        {"input_blocks_per_task", op.input_blocks_per_task},
                        {"source_arrays", op.source_arrays},
                        {"tier", std::string(TierName(op.tier))},
                        {"tier_reason", op.tier_reason},
                        {"fused", op.fused_names},
                        {"returned", op.is_output},
                        {"note", op.note}};
    if (op.stored_grid) o["stored_chunks"] = op.stored_grid->ToString();
    if (op.fused_into >= 0) o["fused_into"] = ops_[op.fused_into].node->name;
    if (op.computed_with >= 0) o["computed_with"] = ops_[op.computed_with].node->name;
    if (!op.siblings.empty()) {
      std::vector<std::string> names;
      for (int s : op.siblings) names.push_back(ops_[s].node->name);
      o["siblings"] = std::move(names);
    }
    list.push_back(std::move(o));
  }
  j["ops"] = std::move(list);
  return j.dump(2);
}

}  // namespace strata
