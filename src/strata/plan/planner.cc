#include "strata/plan/planner.h"

#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <unordered_map>
#include <unordered_set>

#include "strata/base/byte_size.h"
#include "strata/storage/codec/chunk_codec.h"
#include "strata/storage/zarr/zarr_array.h"

namespace strata {

std::string_view TierName(Tier tier) {
  switch (tier) {
    case Tier::kNone: return "-";
    case Tier::kMemory: return "memory";
    case Tier::kDisk: return "disk";
    case Tier::kObject: return "object";
  }
  return "?";
}

const PlannedOp* Plan::Find(const Node* node) const {
  int i = IndexOf(node);
  return i < 0 ? nullptr : &ops_[i];
}

int Plan::IndexOf(const Node* node) const {
  auto it = index_.find(node);
  return it == index_.end() ? -1 : it->second;
}

int64_t Plan::total_tasks() const {
  int64_t n = 0;
  for (const PlannedOp& op : ops_) n += op.num_tasks();
  return n;
}

namespace {

// Largest number of input blocks any output block reads through `map`.
int64_t MaxInputs(const InputMap& map, std::span<const Index> /*out_grid_shape*/) {
  int64_t n = 1;
  for (const AxisMap& a : map.axes) n *= a.max_inputs();
  return n;
}

bool HasRaggedEdges(const Node& node) {
  for (int i = 0; i < node.grid.rank(); ++i) {
    if (node.grid.shape()[i] % node.grid.chunk_shape()[i] != 0) return true;
  }
  return false;
}

bool Materializable(NodeKind kind) {
  return kind == NodeKind::kBlockwise || kind == NodeKind::kExchange || kind == NodeKind::kStore;
}

// The recursive per-task memory model (see planner.h).
class MemoryModel {
 public:
  MemoryModel(const std::vector<PlannedOp>& ops, const std::unordered_map<const Node*, int>& index,
              int64_t reserved)
      : ops_(ops), index_(index), reserved_(reserved) {}

  // Peak and held bytes of obtaining one block of `node` inside a task of
  // `root` (the materialized op whose task runs).
  struct Cost {
    int64_t peak = 0;
    int64_t held = 0;
  };

  Cost Obtain(const Node& node, int root) const {
    const PlannedOp& op = ops_[index_.at(&node)];
    const int64_t block = node.max_block_bytes();
    switch (node.kind) {
      case NodeKind::kMemorySource:
        return {0, 0};
      case NodeKind::kZarrSource: {
        int64_t chunk = node.zarr->chunk_bytes();
        int64_t rc = node.zarr->codec().read_copies();
        int64_t peak = chunk * (1 + rc) + (HasRaggedEdges(node) ? block : 0);
        return {peak, block};
      }
      case NodeKind::kVirtual: {
        Cost c = Gather(node, root);
        int64_t peak = std::max(c.peak, c.held + node.extra_mem + block);
        return {peak, block};
      }
      default:
        break;
    }
    if (op.materialized && op.index != root) return {block, block};  // fetched from its tier
    // Computed here (fused, or the root itself).
    if (node.kind == NodeKind::kExchange) {
      // Slices go straight into the output from the input's tier; an input
      // computed here is obtained one block at a time.
      const Node& in = *node.inputs[0];
      const PlannedOp& in_op = ops_[index_.at(&in)];
      int64_t staged = 0;
      if (!(in_op.materialized && in_op.index != root)) {
        staged = Obtain(in, root).peak;
      } else if (in_op.tier == Tier::kObject) {
        staged = in.max_block_bytes();  // one ranged GET at a time
      }
      return {block + staged, block};
    }
    if (node.streams_input && node.inputs.size() == 1 && StreamableHere(*node.inputs[0])) {
      // The input chain is computed strip by strip: its leaves' blocks are
      // held for the task, plus one strip of scratch per level.
      Cost c = StreamCost(*node.inputs[0], root, node.stream_strip_elements);
      int64_t own = node.stream_strip_elements * node.inputs[0]->dtype.size();
      return {std::max(c.peak, c.held + own + node.extra_mem + block), block};
    }
    Cost c = Gather(node, root);
    int64_t out = node.kind == NodeKind::kStore ? 0 : block;
    return {std::max(c.peak, c.held + node.extra_mem + out), out};
  }

  bool StreamableHere(const Node& node) const {
    return (node.region_fn || node.virtual_fill) && !ops_[index_.at(&node)].materialized;
  }

  // Leaves of a streamed elementwise chain (held whole) and a strip of
  // scratch for every streamed level below the top.
  Cost StreamCost(const Node& node, int root, int64_t strip_elements) const {
    Cost total;
    if (node.virtual_fill) return total;
    for (const auto& in : node.inputs) {
      Cost c;
      if (StreamableHere(*in)) {
        c = StreamCost(*in, root, strip_elements);
        c.held += strip_elements * in->dtype.size();
        c.peak = std::max(c.peak, c.held);
      } else {
        c = Obtain(*in, root);
      }
      total.peak = std::max(total.peak, total.held + c.peak);
      total.held += c.held;
    }
    return total;
  }

  Cost Gather(const Node& node, int root) const {
    Cost total;
    for (size_t i = 0; i < node.inputs.size(); ++i) {
      const Node& in = *node.inputs[i];
      Cost each = Obtain(in, root);
      int64_t n = MaxInputs(node.maps[i], node.grid.grid_shape());
      // Blocks are gathered one after another; all are held until computing.
      if (n > 0) {
        total.peak = std::max(total.peak, total.held + (n - 1) * each.held + each.peak);
        total.held += n * each.held;
      }
    }
    return total;
  }

  // Per-task projection of materialized op `index`.
  int64_t Project(int index) const {
    const PlannedOp& op = ops_[index];
    const Node& node = *op.node;
    Cost c = Obtain(node, index);
    int64_t write_extra = 0;
    if (node.kind == NodeKind::kStore && node.target) {
      // The encoded chunk beside the block (and a padded full chunk at edges).
      write_extra = node.target->chunk_bytes() * node.target->codec().write_copies() +
                    (HasRaggedEdges(node) ? node.target->chunk_bytes() : 0);
    }
    return reserved_ + c.peak + write_extra;
  }

 private:
  const std::vector<PlannedOp>& ops_;
  const std::unordered_map<const Node*, int>& index_;
  int64_t reserved_;
};

}  // namespace

int64_t ProjectTaskMemory(const Plan& plan, int op_index) {
  std::unordered_map<const Node*, int> index;
  for (const PlannedOp& op : plan.ops()) index[op.node.get()] = op.index;
  return MemoryModel(plan.ops(), index, plan.spec().reserved_mem).Project(op_index);
}

Result<std::shared_ptr<const Plan>> BuildPlan(
    const std::vector<std::shared_ptr<const Node>>& outputs, const ResolvedSpec& spec,
    const PlanOptions& options) {
  auto plan = std::make_shared<Plan>();
  plan->spec_ = spec;
  std::vector<PlannedOp>& ops = plan->ops_;
  std::unordered_map<const Node*, int> index;

  // 1. Topological order (inputs before consumers), by iterative DFS.
  std::function<void(const std::shared_ptr<const Node>&)> visit =
      [&](const std::shared_ptr<const Node>& node) {
        if (index.count(node.get())) return;
        for (const auto& in : node->inputs) visit(in);
        PlannedOp op;
        op.node = node;
        op.index = static_cast<int>(ops.size());
        op.materialized = Materializable(node->kind);
        index[node.get()] = op.index;
        ops.push_back(std::move(op));
      };
  for (const auto& out : outputs) {
    if (!out) return InvalidArgumentError("compute() was given an empty array handle");
    visit(out);
  }
  for (size_t i = 0; i < outputs.size(); ++i) {
    PlannedOp& op = ops[index[outputs[i].get()]];
    plan->outputs_.push_back(op.index);
    if (op.node->kind != NodeKind::kStore) {
      op.is_output = true;
      if (op.output_slot < 0) op.output_slot = static_cast<int>(i);
    }
  }

  // Distinct consumer nodes of each node.
  std::vector<std::set<int>> consumer_nodes(ops.size());
  for (const PlannedOp& op : ops) {
    for (const auto& in : op.node->inputs) consumer_nodes[index[in.get()]].insert(op.index);
  }
  // Sources and virtual arrays that are requested must still produce blocks:
  // give them a task that copies each block (a blockwise identity). A Zarr
  // source read by a rechunk is published the same way, so that each source
  // chunk is read and decoded once, not once per target block.
  for (PlannedOp& op : ops) {
    if (op.is_output && !op.materialized) op.materialized = true;
    if (op.node->kind == NodeKind::kZarrSource) {
      for (int c : consumer_nodes[op.index]) {
        if (ops[c].node->kind == NodeKind::kExchange) op.materialized = true;
      }
    }
  }

  MemoryModel model(ops, index, spec.reserved_mem);

  auto root_of = [&](int i) {
    while (ops[i].fused_into >= 0) i = ops[i].fused_into;
    return i;
  };

  auto group_stats = [&](int root, int* sources, int64_t* blocks) {
    // Distinct non-virtual leaves and input blocks read by one task of root.
    std::set<const Node*> leaves;
    int64_t total_blocks = 0;
    std::function<void(const Node&, int64_t)> walk = [&](const Node& node, int64_t mult) {
      for (size_t i = 0; i < node.inputs.size(); ++i) {
        const Node& in = *node.inputs[i];
        const PlannedOp& in_op = ops[index[&in]];
        int64_t n = mult * MaxInputs(node.maps[i], node.grid.grid_shape());
        bool computed_here =
            (!in_op.materialized && in_op.fused_into >= 0 && root_of(in_op.index) == root) ||
            (in.kind == NodeKind::kVirtual && !in_op.materialized);
        if (computed_here) {
          walk(in, n);
        } else {
          leaves.insert(&in);
          total_blocks += n;
        }
      }
    };
    walk(*ops[root].node, 1);
    *sources = static_cast<int>(leaves.size());
    *blocks = total_blocks;
  };

  // 2. Optimizer passes.
  if (!options.disabled_passes.count("fuse") && spec.fuse) {
    plan->passes_run_.push_back("fuse");
    for (PlannedOp& op : ops) {
      const Node& node = *op.node;
      const bool exchange = node.kind == NodeKind::kExchange;
      if ((node.kind != NodeKind::kBlockwise && !exchange) || op.is_output || !op.materialized) {
        continue;
      }
      if (consumer_nodes[op.index].size() != 1) continue;
      int consumer = *consumer_nodes[op.index].begin();
      int root = root_of(consumer);
      const Node& root_node = *ops[root].node;
      if (root_node.kind == NodeKind::kExchange) continue;
      if (ops[consumer].node->kind == NodeKind::kExchange) continue;
      op.fused_into = root;
      op.materialized = false;
      int sources = 0;
      int64_t blocks = 0;
      group_stats(root, &sources, &blocks);
      int64_t projected = model.Project(root);
      std::string why;
      // Fusing a many-task op into a consumer with few tasks would leave
      // workers idle (Cubed runs on hundreds of workers; we often have two).
      const int64_t producer_tasks = node.num_blocks();
      const int64_t consumer_tasks = root_node.num_blocks();
      const int64_t enough = 2 * static_cast<int64_t>(spec.workers);
      if (consumer_tasks < producer_tasks && consumer_tasks < enough) {
        why = fmt::format("{} tasks would become {}, fewer than 2 per worker", producer_tasks,
                          consumer_tasks);
      } else if (sources > kMaxFusedSourceArrays) {
        why = fmt::format("{} source arrays > {}", sources, kMaxFusedSourceArrays);
      } else if (blocks > kMaxFusedInputBlocks && !exchange) {
        // (A fused exchange gathers slices from its input's tier; its input
        // blocks are not source reads.)
        why = fmt::format("{} input blocks per task > {}", blocks, kMaxFusedInputBlocks);
      } else if (projected > spec.allowed_mem) {
        why = fmt::format("projected {} > allowed_mem {}", FormatBytes(projected),
                          FormatBytes(spec.allowed_mem));
      }
      if (!why.empty()) {
        op.fused_into = -1;
        op.materialized = true;
        plan->decisions_.push_back(fmt::format("not fused: {} ({}) into {} ({}): {}", node.name,
                                               node.op_name, root_node.name, root_node.op_name,
                                               why));
        continue;
      }
      plan->decisions_.push_back(fmt::format(
          "fused {} ({}) into {} ({}): single consumer; {} source arrays; {} input blocks per "
          "task; projected {} <= {}",
          node.name, node.op_name, root_node.name, root_node.op_name, sources, blocks,
          FormatBytes(projected), FormatBytes(spec.allowed_mem)));
    }
  }

  for (PlannedOp& op : ops) {
    if (op.fused_into >= 0) op.fused_into = root_of(op.index);
  }

  // Dependencies through fused chains; fused names; depth; consumers.
  for (PlannedOp& op : ops) {
    if (!op.materialized) continue;
    std::function<void(const Node&, const InputMap*)> walk = [&](const Node& node,
                                                                const InputMap* outer) {
      for (size_t i = 0; i < node.inputs.size(); ++i) {
        const Node& in = *node.inputs[i];
        const PlannedOp& in_op = ops[index[&in]];
        InputMap composed = outer ? Compose(*outer, node.maps[i], op.node->grid.grid_shape())
                                  : node.maps[i];
        if (in_op.materialized) {
          op.dependencies.push_back({in_op.index, std::move(composed)});
        } else if (in_op.fused_into == op.index) {
          op.fused_names.push_back(fmt::format("{} ({})", in.name, in.op_name));
          walk(in, &composed);
        } else if (in.kind == NodeKind::kVirtual) {
          walk(in, &composed);  // virtual arrays are recomputed in place
        }
      }
    };
    walk(*op.node, nullptr);
    int sources = 0;
    int64_t blocks = 0;
    group_stats(op.index, &sources, &blocks);
    op.source_arrays = sources;
    op.input_blocks_per_task = blocks;
    for (const Dependency& d : op.dependencies) {
      op.depth = std::max(op.depth, ops[d.producer].depth + 1);
      std::vector<int>& c = ops[d.producer].consumers;
      if (std::find(c.begin(), c.end(), op.index) == c.end()) c.push_back(op.index);
    }
  }

  // 3. Tiers (before the projection: reading the object tier stages a
  // block). Capacity for intermediates in RAM: what is left of
  // total_system_mem after every worker runs a task at its budget and the
  // results are held.
  for (const PlannedOp& op : ops) {
    if (op.is_output && op.materialized) plan->result_bytes_ += op.node->nbytes();
  }
  const int64_t running = static_cast<int64_t>(spec.workers) * spec.allowed_mem;
  int64_t capacity = spec.total_system_mem - running - plan->result_bytes_;
  if (plan->result_bytes_ > 0 && plan->result_bytes_ > spec.total_system_mem - spec.allowed_mem) {
    return ResourceExhaustedError(fmt::format(
        "the results compute() would return take {}, more than total_system_mem {} leaves beside "
        "one task's allowed_mem {}; write them with to_zarr instead",
        FormatBytes(plan->result_bytes_), FormatBytes(spec.total_system_mem),
        FormatBytes(spec.allowed_mem)));
  }
  int64_t intermediate_bytes = 0;
  for (const PlannedOp& op : ops) {
    if (op.materialized && !op.consumers.empty()) intermediate_bytes += op.node->nbytes();
  }
  if (spec.tier == TierChoice::kSpill) capacity = std::min(capacity, intermediate_bytes / 2);
  plan->ram_tier_capacity_ = std::max<int64_t>(0, capacity);
  int64_t used = 0;
  for (PlannedOp& op : ops) {
    if (!op.materialized || op.consumers.empty()) continue;
    const int64_t bytes = op.node->nbytes();
    const int64_t left = std::max<int64_t>(0, capacity - used);
    if (spec.tier == TierChoice::kDisk) {
      op.tier = Tier::kDisk;
      op.tier_reason = "disk tier forced";
    } else if (spec.tier == TierChoice::kObject) {
      op.tier = Tier::kObject;
      op.tier_reason = "object tier forced";
    } else if (bytes <= left) {
      op.tier = Tier::kMemory;
      used += bytes;
      op.tier_reason =
          fmt::format("{}{} fits in RAM: {} left of {} for intermediates (total_system_mem {} - "
                      "{} workers x allowed_mem {} - results {})",
                      spec.tier == TierChoice::kMemory ? "memory tier forced; " : "",
                      FormatBytes(bytes), FormatBytes(left), FormatBytes(capacity),
                      FormatBytes(spec.total_system_mem), spec.workers,
                      FormatBytes(spec.allowed_mem), FormatBytes(plan->result_bytes_));
    } else if (left > 0 || spec.tier == TierChoice::kMemory || spec.tier == TierChoice::kSpill) {
      // Spilling writes only the excess; the disk tier would write it all.
      op.tier = Tier::kMemory;
      used += std::min(bytes, left);
      op.tier_reason = fmt::format(
          "{} exceeds the {} of RAM left: memory tier spilling ~{} per block to local disk "
          "(cheaper than writing all {} to the disk tier)",
          FormatBytes(bytes), FormatBytes(left), FormatBytes(bytes - left), FormatBytes(bytes));
    } else {
      op.tier = Tier::kDisk;
      op.tier_reason = fmt::format("{} and no RAM left for intermediates; local disk",
                                   FormatBytes(bytes));
    }
  }

  // 4. Memory projection.
  for (PlannedOp& op : ops) {
    if (op.materialized) op.projected_mem = model.Project(op.index);
  }

  plan->index_ = index;

  // 5. Check.
  for (const PlannedOp& op : ops) {
    if (op.materialized && op.projected_mem > spec.allowed_mem) {
      return InvalidArgumentError(fmt::format(
          "op '{}' ({}) projects {} per task, over allowed_mem {} (chunks {} of {}, reserved_mem "
          "{}); use smaller chunks or raise allowed_mem",
          op.node->op_name, op.node->name, FormatBytes(op.projected_mem),
          FormatBytes(spec.allowed_mem), op.node->grid.ToString(), op.node->dtype.name(),
          FormatBytes(spec.reserved_mem)));
    }
    if (op.fused_into >= 0 && !ops[op.fused_into].materialized) {
      return InternalError(fmt::format("plan check: {} fused into unmaterialized {}",
                                       op.node->name, ops[op.fused_into].node->name));
    }
  }
  return std::shared_ptr<const Plan>(std::move(plan));
}

std::string Plan::ToText() const {
  std::string out = fmt::format(
      "plan: {} arrays, {} ops with tasks, {} tasks; allowed_mem {}, reserved_mem {}, "
      "total_system_mem {}, executor {} x {}\n",
      ops_.size(),
      std::count_if(ops_.begin(), ops_.end(), [](const PlannedOp& o) { return o.materialized; }),
      total_tasks(), FormatBytes(spec_.allowed_mem), FormatBytes(spec_.reserved_mem),
      FormatBytes(spec_.total_system_mem), ExecutorName(spec_.executor), spec_.workers);
  out += fmt::format("RAM for intermediates: {}\n", FormatBytes(ram_tier_capacity_));
  out += fmt::format("{:<10} {:<16} {:<10} {:<18} {:<18} {:>7} {:>10}  {:<7} {}\n", "array", "op",
                     "kind", "shape", "chunks", "tasks", "projected", "tier", "notes");
  for (const PlannedOp& op : ops_) {
    const Node& n = *op.node;
    std::string notes;
    if (op.fused_into >= 0) notes = fmt::format("fused into {}", ops_[op.fused_into].node->name);
    if (!op.fused_names.empty()) notes = fmt::format("computes {}", fmt::join(op.fused_names, ", "));
    if (op.is_output) notes += notes.empty() ? "returned" : "; returned";
    if (n.kind == NodeKind::kStore && n.target) {
      notes += (notes.empty() ? "" : "; ") + fmt::format("writes {}", n.target->url());
    }
    if (!n.note.empty()) notes += (notes.empty() ? "" : "; ") + n.note;
    out += fmt::format("{:<10} {:<16} {:<10} {:<18} {:<18} {:>7} {:>10}  {:<7} {}\n", n.name,
                       n.op_name, NodeKindName(n.kind), ShapeToString(n.shape), n.grid.ToString(),
                       op.materialized ? std::to_string(op.num_tasks()) : "-",
                       op.materialized ? FormatBytes(op.projected_mem) : "-", TierName(op.tier),
                       notes);
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
                        {"note", n.note}};
    if (op.fused_into >= 0) o["fused_into"] = ops_[op.fused_into].node->name;
    list.push_back(std::move(o));
  }
  j["ops"] = std::move(list);
  return j.dump(2);
}

}  // namespace strata
