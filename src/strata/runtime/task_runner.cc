#include "strata/runtime/task_runner.h"

#include <fmt/format.h>

#include "strata/base/thread_annotations.h"
#include "strata/core/kernels/elementwise.h"
#include "strata/plan/memory_model.h"
#include "strata/storage/zarr/shard.h"
#include "strata/storage/zarr/zarr_array.h"

namespace strata {
namespace {

std::string BlockName(std::span<const Index> block) { return JoinIndices(block, '.'); }

}  // namespace

bool KeepsBlock(const PlannedOp& op) {
  return op.materialized && op.node->kind != NodeKind::kStore &&
         (op.tier == Tier::kMemory || op.output_slot >= 0);
}

TaskRunner::TaskRunner(const Plan& plan, std::span<const std::unique_ptr<IntermediateStore>> tiers,
                       std::span<const ArrayView> result_views, std::shared_ptr<MemoryPool> pool,
                       const ComputeOptions& options, Clock::time_point start)
    : plan_(plan),
      tiers_(tiers),
      result_views_(result_views),
      pool_(std::move(pool)),
      options_(options),
      start_(start) {}

TaskRunner::~TaskRunner() = default;

const PlannedOp& TaskRunner::OpOf(const Node& node) const {
  return plan_.ops()[plan_.IndexOf(&node)];
}

const Node& TaskRunner::Resolve(const Node& node) const { return *OpOf(node).node; }

Result<NDArray> TaskRunner::ComputeBlock(const Node& node, std::span<const Index> block,
                                         Frame& frame) {
  Box box = node.grid.BlockBox(block);
  switch (node.kind) {
    case NodeKind::kZarrSource: {
      STRATA_ASSIGN_OR_RETURN(NDArray a, NewOutput(node, block, box.shape, frame));
      // Inner chunk by inner chunk for a sharded array (its read grid).
      STRATA_RETURN_IF_ERROR(node.zarr->ReadBlock(block, a.view(), *frame.pool).status());
      return a;
    }
    case NodeKind::kMemorySource:
      return NDArray::CopyOf(*frame.pool, node.data->view().Slice(box));
    case NodeKind::kExchange:
      return Exchange(node, block, box, frame);
    default:
      break;
  }
  BlockRequest request;
  request.block = block;
  request.box = box;
  request.pool = frame.pool.get();
  request.inputs.resize(node.inputs.size());
  if (StreamsParts(node)) {
    const Node* one[] = {&node};
    std::vector<NDArray> outs;
    STRATA_RETURN_IF_ERROR(FoldStrips(one, block, frame, &outs));
    return std::move(outs[0]);
  }
  if (node.streams_input && node.inputs.size() == 1 && Streamable(*node.inputs[0]) &&
      CountInputBlocks(node.maps[0], block) == 1) {
    // Hand the op a way to compute its input strip by strip.
    const Node& in = Resolve(*node.inputs[0]);
    Shape k;
    ForEachInputBlock(node.maps[0], block,
                      [&](std::span<const Index> b) { k.assign(b.begin(), b.end()); });
    request.inputs[0].push_back({k, in.grid.BlockBox(k), ConstArrayView()});
    request.compute_region = [this, &in, k, &frame](const Box& region, const ArrayView& out) {
      return RegionOf(in, k, region, out, frame);
    };
    Result<NDArray> out = node.fn(request);
    frame.stream_leaves.clear();
    if (!out.ok()) return out.status().WithContext(fmt::format("{} ({})", node.op_name, node.name));
    return out;
  }
  std::vector<std::shared_ptr<const void>> keep;
  Status status;
  for (size_t i = 0; i < node.inputs.size() && status.ok(); ++i) {
    const Node& in = Resolve(*node.inputs[i]);
    ForEachInputBlock(node.maps[i], block, [&](std::span<const Index> k) {
      if (!status.ok()) return;
      if (node.partial_input(i)) {  // read through read_part
        request.inputs[i].push_back({Shape(k.begin(), k.end()), in.grid.BlockBox(k), {}});
        return;
      }
      Result<BlockView> held = Obtain(in, k, frame);
      if (!held.ok()) {
        status = held.status();
        return;
      }
      request.inputs[i].push_back({Shape(k.begin(), k.end()), in.grid.BlockBox(k), held->view});
      keep.push_back(std::move(held->keepalive));
    });
  }
  STRATA_RETURN_IF_ERROR(status);
  if (!node.partial_inputs.empty()) {
    request.read_part = [this, &node, &frame](size_t i, const InputBlock& b, const Box& region,
                                              const ArrayView& out) {
      return ReadPart(Resolve(*node.inputs[i]), b.block, region, out, frame);
    };
  }
  Result<NDArray> out = node.fn(request);
  if (!out.ok()) return out.status().WithContext(fmt::format("{} ({})", node.op_name, node.name));
  if (out->shape() != box.shape || out->dtype() != node.dtype) {
    return InternalError(fmt::format("{} ({}) produced a block of {} {} for block {} of {} {}",
                                     node.op_name, node.name, ShapeToString(out->shape()),
                                     out->dtype().name(), BlockName(block),
                                     ShapeToString(box.shape), node.dtype.name()));
  }
  return out;
}

bool TaskRunner::Folds(const Node& node) const {
  return FoldsInTask(node, [this](const Node& n) -> const PlannedOp& { return OpOf(n); });
}

int TaskRunner::FoldLeaves(const Node& node, std::span<const Index> block,
                           std::vector<FoldLeaf>* leaves) const {
  if (!Folds(node)) {
    leaves->push_back({&node, Shape(block.begin(), block.end()), 0});
    return 0;
  }
  const Node& in = Resolve(*node.inputs[0]);
  int depth = -1;
  ForEachInputBlock(node.maps[0], block, [&](std::span<const Index> k) {
    const int d = FoldLeaves(in, k, leaves);
    depth = depth == -1 || depth == d ? d : -2;  // -2: leaves at different depths
  });
  if (depth < 0 || leaves->empty()) return -2;
  ++leaves->back().closes;  // this block's inputs end here
  return depth + 1;
}

Status TaskRunner::FoldGroup(std::span<const int> members, std::span<const Index> block,
                             Frame& frame, const std::function<Status()>& check,
                             std::vector<NDArray>* outs) {
  std::vector<std::vector<FoldLeaf>> leaves(members.size());
  int depth = 0;
  for (size_t m = 0; m < members.size(); ++m) {
    const Node& node = *plan_.ops()[members[m]].node;
    if (!Folds(node)) return Status::Ok();
    const int d = FoldLeaves(node, block, &leaves[m]);
    // Lockstep: every member's tree has the same shape.
    if (d < 1 || (m > 0 && d != depth) || leaves[m].size() != leaves[0].size()) {
      return Status::Ok();
    }
    depth = d;
    for (size_t j = 0; j < leaves[m].size(); ++j) {
      if (leaves[m][j].closes != leaves[0][j].closes) return Status::Ok();
    }
  }
  // Per member and level, the running state of the level's current block
  // (a leaf's view until a second input arrives) and how many inputs it has
  // taken. Within a block the inputs are folded in order, as the block's own
  // Combine would take them; a block of one input is combined alone: the
  // same arithmetic as the tree, so the same bytes.
  struct Level {
    BlockView held;
    NDArray acc;
    int inputs = 0;
  };
  std::vector<std::vector<Level>> levels(members.size());
  for (std::vector<Level>& l : levels) l.resize(depth);
  std::vector<NDArray> done(members.size());
  for (size_t j = 0; j < leaves[0].size(); ++j) {
    for (size_t m = 0; m < members.size(); ++m) {
      frame.root = members[m];
      const Node& member = *plan_.ops()[members[m]].node;
      auto fold = [&](const ConstArrayView& one) -> Result<NDArray> {
        Result<NDArray> r = member.fold_states(one, *frame.pool);
        if (!r.ok()) return r.status().WithContext(fmt::format("{} ({})", member.op_name, member.name));
        return r;
      };
      // Adds a state to level l's block: the first is held as it is; at the
      // second it becomes the running state (combined alone, as the block's
      // Combine starts), and each next one is merged into that in place.
      auto add = [&](int l, BlockView state) -> Status {
        Level& level = levels[m][l];
        if (level.inputs == 1) {
          STRATA_ASSIGN_OR_RETURN(level.acc, fold(level.held.view));
          level.held = BlockView();
        }
        if (level.inputs == 0) {
          level.held = std::move(state);
        } else {
          member.merge_state(state.view, level.acc.view());
        }
        ++level.inputs;
        return Status::Ok();
      };
      const FoldLeaf& leaf = leaves[m][j];
      STRATA_ASSIGN_OR_RETURN(BlockView state, Obtain(*leaf.node, leaf.block, frame));
      STRATA_RETURN_IF_ERROR(add(0, std::move(state)));
      for (int l = 0; l < leaf.closes; ++l) {  // blocks whose last input this was
        Level& level = levels[m][l];
        NDArray value;
        if (level.inputs == 1) {
          STRATA_ASSIGN_OR_RETURN(value, fold(level.held.view));
        } else {
          value = std::move(level.acc);
        }
        level = Level();
        if (l + 1 == depth) {
          done[m] = std::move(value);
        } else {
          auto shared = std::make_shared<const NDArray>(std::move(value));
          STRATA_RETURN_IF_ERROR(add(l + 1, BlockView{shared->view(), shared}));
        }
      }
    }
    // Leaf j's source blocks have been read by every member.
    frame.sources.clear();
    frame.fetched.clear();
    STRATA_RETURN_IF_ERROR(check());
  }
  for (size_t m = 0; m < members.size(); ++m) {
    const Node& member = *plan_.ops()[members[m]].node;
    if (done[m].shape() != member.grid.BlockBox(block).shape || done[m].dtype() != member.dtype) {
      return InternalError(fmt::format("{} ({}) folded a block of {} for block {} of {}",
                                       member.op_name, member.name,
                                       ShapeToString(done[m].shape()), BlockName(block),
                                       ShapeToString(member.grid.BlockBox(block).shape)));
    }
  }
  *outs = std::move(done);
  return Status::Ok();
}

Result<BlockView> TaskRunner::Obtain(const Node& given, std::span<const Index> block,
                                     Frame& frame) {
  const int index = plan_.IndexOf(&given);
  const PlannedOp& op = plan_.ops()[index];
  const Node& node = *op.node;
  if (node.kind == NodeKind::kMemorySource) {
    return BlockView{node.data->view().Slice(node.grid.BlockBox(block)), node.data};
  }
  if (op.materialized && index != frame.root) {
    auto key = std::make_pair(index, Shape(block.begin(), block.end()));
    auto it = frame.fetched.find(key);
    if (it == frame.fetched.end()) {
      IntermediateStore* tier = tiers_[index].get();
      if (!tier) {
        return InternalError(
            fmt::format("{} has no tier to read block {} from", node.name, BlockName(block)));
      }
      STRATA_ASSIGN_OR_RETURN(BlockView held, tier->View(block, *frame.pool));
      it = frame.fetched.emplace(std::move(key), std::move(held)).first;
    }
    return it->second;
  }
  if (frame.keep_sources && node.kind == NodeKind::kZarrSource) {
    // Read once for every member of the task's sibling group.
    auto key = std::make_pair(&node, Shape(block.begin(), block.end()));
    auto it = frame.sources.find(key);
    if (it == frame.sources.end()) {
      STRATA_ASSIGN_OR_RETURN(NDArray a, ComputeBlock(node, block, frame));
      auto shared = std::make_shared<const NDArray>(std::move(a));
      it = frame.sources.emplace(std::move(key), BlockView{shared->view(), shared}).first;
    }
    return it->second;
  }
  STRATA_ASSIGN_OR_RETURN(NDArray a, ComputeBlock(node, block, frame));
  auto shared = std::make_shared<const NDArray>(std::move(a));
  return BlockView{shared->view(), shared};
}

Result<NDArray> TaskRunner::NewOutput(const Node& node, std::span<const Index> block,
                                      const Shape& shape, Frame& frame) {
  const int index = plan_.IndexOf(&node);
  if (index >= 0 && index == frame.root && plan_.ops()[index].tier != Tier::kNone &&
      tiers_[index]) {
    return tiers_[index]->NewBlock(block, node.dtype, shape, *frame.pool);
  }
  return NDArray::Allocate(*frame.pool, node.dtype, shape);
}

Result<NDArray> TaskRunner::Exchange(const Node& node, std::span<const Index> block, const Box& box,
                                     Frame& frame) {
  // Gathers exactly the slices of the input blocks this block overlaps,
  // straight into the output: from the input's tier when it is materialized
  // (a copy from RAM or a pread per run from a file), else one input block
  // at a time.
  STRATA_ASSIGN_OR_RETURN(NDArray out, NewOutput(node, block, box.shape, frame));
  STRATA_RETURN_IF_ERROR(ExchangeInto(node, block, box, out.view(), frame));
  return out;
}

Status TaskRunner::ExchangeInto(const Node& node, std::span<const Index> block, const Box& box,
                                const ArrayView& out_view, Frame& frame) {
  const Node& in = Resolve(*node.inputs[0]);
  const int index = plan_.IndexOf(&in);
  const bool tiered = index >= 0 && plan_.ops()[index].materialized && index != frame.root;
  Status status;
  std::vector<IntermediateStore::RegionRead> reads;
  ForEachInputBlock(node.maps[0], block, [&](std::span<const Index> k) {
    if (!status.ok()) return;
    Box kbox = in.grid.BlockBox(k);
    Box part = Intersect(kbox, box);
    if (part.empty()) return;
    ArrayView dst = out_view.Slice(Translate(part, box.origin));
    if (tiered) {
      reads.push_back({Shape(k.begin(), k.end()), Translate(part, kbox.origin), dst});
      return;
    }
    if (Streamable(in)) {
      // A virtual or fused elementwise input: just the part needed.
      status = RegionOf(in, k, Translate(part, kbox.origin), dst, frame);
      return;
    }
    if (in.kind == NodeKind::kZarrSource && !in.zarr->is_sharded()) {
      // Read in place: only the stored bytes holding the part, where the
      // codec decodes runs (else the chunk through a temporary).
      status = in.zarr->ReadChunkPart(k, part, dst, *frame.pool).status();
      return;
    }
    Result<BlockView> held = Obtain(in, k, frame);
    if (!held.ok()) {
      status = held.status();
      return;
    }
    CopyArray(held->view.Slice(Translate(part, kbox.origin)), dst);
  });
  if (status.ok() && !reads.empty()) status = tiers_[index]->GetRegions(reads, *frame.pool);
  if (!status.ok()) return status.WithContext(fmt::format("{} ({})", node.op_name, node.name));
  return Status::Ok();
}

Status TaskRunner::InputRegion(const Node& given, std::span<const Index> block, const Box& region,
                               const ArrayView& out, Frame& frame) {
  const int index = plan_.IndexOf(&given);
  const PlannedOp& op = plan_.ops()[index];
  const Node& node = *op.node;
  const bool tiered = op.materialized && index != frame.root;
  const Box kbox = node.grid.BlockBox(block);
  if (tiered) {
    std::vector<IntermediateStore::RegionRead> reads;
    reads.push_back({Shape(block.begin(), block.end()), Translate(region, kbox.origin), out});
    return tiers_[index]->GetRegions(reads, *frame.pool);
  }
  if (node.kind == NodeKind::kExchange) return ExchangeInto(node, block, region, out, frame);
  if (Streamable(node)) return RegionOf(node, block, Translate(region, kbox.origin), out, frame);
  if (node.kind == NodeKind::kZarrSource && node.zarr->is_sharded()) {
    return node.zarr->ReadRegion(region, out, *frame.pool);
  }
  auto key = std::make_pair(&node, Shape(block.begin(), block.end()));
  auto it = frame.stream_leaves.find(key);
  if (it == frame.stream_leaves.end()) {
    STRATA_ASSIGN_OR_RETURN(BlockView held, Obtain(node, block, frame));
    it = frame.stream_leaves.emplace(std::move(key), std::move(held)).first;
  }
  CopyArray(it->second.view.Slice(Translate(region, kbox.origin)), out);
  return Status::Ok();
}

Status TaskRunner::ReadPart(const Node& given, std::span<const Index> block, const Box& region,
                            const ArrayView& out, Frame& frame) {
  const PlannedOp& op = OpOf(given);
  const Node& node = *op.node;
  const Box kbox = node.grid.BlockBox(block);
  if (op.materialized && op.index != frame.root) {
    std::vector<IntermediateStore::RegionRead> reads;
    reads.push_back({Shape(block.begin(), block.end()), Translate(region, kbox.origin), out});
    return tiers_[op.index]->GetRegions(reads, *frame.pool);
  }
  if (node.kind == NodeKind::kZarrSource && !node.zarr->is_sharded()) {
    // Only the stored bytes holding the region, where the codec decodes runs.
    return node.zarr->ReadChunkPart(block, region, out, *frame.pool).status();
  }
  if (node.kind == NodeKind::kVirtual && node.virtual_fill) return node.virtual_fill(region, out);
  // Anything else is computed whole for the part and released.
  STRATA_ASSIGN_OR_RETURN(BlockView held, Obtain(node, block, frame));
  CopyArray(held.view.Slice(Translate(region, kbox.origin)), out);
  return Status::Ok();
}

Status TaskRunner::StoreShard(const Node& node, std::span<const Index> block, Frame& frame) {
  // The task's block: whole shards (one, or several when a rechunk's last
  // stage writes consolidated chunks), or a part of one (a set of whole
  // inner chunks) when the planner split the shards among tasks.
  const ChunkGrid& shards = node.target->array()->grid();
  const Box box = node.grid.BlockBox(block);
  Shape first, last;
  shards.BlockRangeOf(box, first, last);
  Shape c = first;
  while (true) {
    STRATA_RETURN_IF_ERROR(StoreShardPiece(node, block, box, c, frame));
    int i = static_cast<int>(c.size()) - 1;
    for (; i >= 0; --i) {
      if (++c[i] < last[i]) break;
      c[i] = first[i];
    }
    if (i < 0) return Status::Ok();
  }
}

Status TaskRunner::StoreShardPiece(const Node& node, std::span<const Index> block, const Box& box,
                                   std::span<const Index> shard_block, Frame& frame) {
  const ZarrArray& array = *node.target->array();
  const ShardLayout& layout = *array.shard_layout();
  const Node& in = *node.inputs[0];
  const Box shard = array.grid().BlockBox(shard_block);
  const Box clipped = Box::FromShape(shard.shape);
  const Box mine = Translate(Intersect(box, shard), shard.origin);  // in shard coordinates
  const bool whole = mine == clipped;
  std::unique_ptr<ShardWriter> writer;
  std::shared_ptr<PendingShard> pending;
  if (whole) {
    STRATA_ASSIGN_OR_RETURN(writer, array.BeginShard(shard_block, *frame.pool));
  }
  auto context = [&] {
    return fmt::format("writing shard {} of {}", BlockName(shard_block), array.url());
  };
  // Parts nest in shards (SplitShards): this one's place among its shard's.
  Shape parts_per_shard(box.rank());
  Shape part_in_shard(box.rank());
  for (int i = 0; i < box.rank(); ++i) {
    const Index step = box.shape[i] == shard.shape[i] ? shard.shape[i]
                                                      : node.grid.chunk_shape()[i];
    parts_per_shard[i] = (shard.shape[i] + step - 1) / step;
    part_in_shard[i] = mine.origin[i] / step;
  }
  if (!whole) pending = PendingShardOf(node, shard_block, NumElements(parts_per_shard));
  STRATA_ASSIGN_OR_RETURN(NDArray inner,
                          NDArray::Allocate(*frame.pool, node.dtype, layout.inner_shape()));
  const std::vector<std::byte>& fill = array.metadata().fill_value.bytes;
  // A retried or backup attempt of a part finds some of its inner chunks in
  // the shard already: they hold the same values (tasks are deterministic),
  // and a second copy would take the shard past its size bound.
  auto added = [&](Index j) {
    MutexLock lock(&pending->mu);
    return pending->writer && pending->writer->has(j);
  };
  for (Index j = 0; j < layout.inner_per_shard(); ++j) {
    const Box local = layout.InnerBox(j);
    const Box part = Intersect(local, clipped);
    if (part.empty() || Intersect(part, mine).empty()) continue;
    if (!whole && added(j)) continue;
    if (part != local) FillArray(inner.view(), fill);
    Box global = part;
    for (int i = 0; i < global.rank(); ++i) global.origin[i] += shard.origin[i];
    STRATA_RETURN_IF_ERROR(
        InputRegion(in, block, global, inner.view().Slice(Translate(part, local.origin)), frame));
    if (whole) {
      STRATA_RETURN_IF_ERROR(writer->Add(j, inner.view()));
      continue;
    }
    STRATA_ASSIGN_OR_RETURN(std::optional<Buffer> bytes,
                            layout.EncodeInner(inner.view(), fill, *frame.pool));
    if (!bytes) continue;
    MutexLock lock(&pending->mu);
    if (pending->finished) return Status::Ok();  // a straggler: the shard is stored
    if (!pending->writer) {
      // The writer streams to the shard's temporary file (the planner splits
      // shards only where it does: nothing is held past the task).
      STRATA_ASSIGN_OR_RETURN(pending->writer, array.BeginShard(shard_block, *pool_));
    }
    // Another attempt of this part may have added it meanwhile.
    if (pending->writer->has(j)) continue;
    STRATA_RETURN_IF_ERROR(pending->writer->AddEncoded(j, bytes->span()).WithContext(context()));
  }
  frame.stream_leaves.clear();
  if (whole) return array.FinishShard(shard_block, *writer).WithContext(context());
  return FinishShardPart(node, shard_block, *pending,
                         LinearIndex(part_in_shard, parts_per_shard))
      .WithContext(context());
}

std::shared_ptr<TaskRunner::PendingShard> TaskRunner::PendingShardOf(
    const Node& node, std::span<const Index> shard, Index parts) {
  const Index linear = LinearIndex(shard, node.target->array()->grid().grid_shape());
  MutexLock lock(&shards_mu_);
  std::shared_ptr<PendingShard>& at = pending_shards_[{&node, linear}];
  if (!at) {
    at = std::make_shared<PendingShard>();
    MutexLock lock(&at->mu);  // not shared yet; the lock is for the analysis
    at->added.assign(static_cast<size_t>(parts), false);
  }
  return at;
}

Status TaskRunner::FinishShardPart(const Node& node, std::span<const Index> shard,
                                   PendingShard& pending, Index part) {
  const ZarrArray& array = *node.target->array();
  MutexLock lock(&pending.mu);
  if (pending.finished || pending.added[static_cast<size_t>(part)]) return Status::Ok();
  pending.added[static_cast<size_t>(part)] = true;
  if (++pending.count < static_cast<Index>(pending.added.size())) return Status::Ok();
  pending.finished = true;
  Status done;
  if (pending.writer) {
    done = array.FinishShard(shard, *pending.writer);
  } else {
    // Every inner chunk was the fill value: the shard is not stored.
    STRATA_ASSIGN_OR_RETURN(std::unique_ptr<ShardWriter> empty, array.BeginShard(shard, *pool_));
    done = array.FinishShard(shard, *empty);
  }
  // The entry stays (finished): a straggling attempt of one of its parts
  // must find the shard stored, not start it again.
  pending.writer.reset();
  return done;
}

bool TaskRunner::Streamable(const Node& given) const { return strata::Streamable(OpOf(given)); }

bool TaskRunner::StreamsParts(const Node& node) const {
  return strata::StreamsParts(node, [this](const Node& n) -> const PlannedOp& { return OpOf(n); });
}

bool TaskRunner::StripsTogether(std::span<const Node* const> members) const {
  return strata::StripsTogether(members,
                                [this](const Node& n) -> const PlannedOp& { return OpOf(n); });
}

Result<ConstArrayView> TaskRunner::LeafPart(const Node& node, std::span<const Index> block,
                                            const Box& region, Frame& frame) {
  for (const Frame::LeafPart& p : frame.leaf_parts) {
    if (p.node == &node && std::equal(block.begin(), block.end(), p.block.begin(), p.block.end()) &&
        p.region == region) {
      return ConstArrayView(p.values.view());
    }
  }
  // Only the stored bytes of the chunk holding the region.
  STRATA_ASSIGN_OR_RETURN(NDArray values, NDArray::Allocate(*frame.pool, node.dtype, region.shape));
  Box global = region;
  for (int i = 0; i < region.rank(); ++i) global.origin[i] += node.grid.block_origin(i, block[i]);
  STRATA_RETURN_IF_ERROR(node.zarr->ReadChunkPart(block, global, values.view(), *frame.pool).status());
  frame.leaf_parts.push_back({&node, Shape(block.begin(), block.end()), region, std::move(values)});
  return ConstArrayView(frame.leaf_parts.back().values.view());
}

Status TaskRunner::FoldStrips(std::span<const Node* const> members, std::span<const Index> block,
                              Frame& frame, std::vector<NDArray>* outs) {
  const Node& lead = *members[0];
  const Node& lead_in = Resolve(*lead.inputs[0]);
  Shape k;
  ForEachInputBlock(lead.maps[0], block, [&](std::span<const Index> b) { k.assign(b.begin(), b.end()); });
  const Box in_box = lead_in.grid.BlockBox(k);
  // The strips' axis (where a strip is shorter than a nominal block) and
  // the pieces' (where a piece is shorter than a strip), if any.
  const Shape& strip = lead.stream_part_strip;
  const Shape& piece = lead.stream_part_piece;
  const int rank = in_box.rank();
  int axis = 0;
  while (axis + 1 < rank && strip[axis] >= lead_in.grid.chunk_shape()[axis]) ++axis;
  int piece_axis = 0;
  while (piece_axis + 1 < rank && piece[piece_axis] >= strip[piece_axis]) ++piece_axis;
  // A chain is computed into a piece buffer, one per dtype that the members
  // take in turn; a leaf's part is folded as read.
  std::vector<NDArray> states, buffers;
  std::vector<int> buffer_of;
  for (const Node* m : members) {
    STRATA_ASSIGN_OR_RETURN(NDArray state,
                            NDArray::Allocate(*frame.pool, m->dtype, m->grid.BlockShape(block)));
    states.push_back(std::move(state));
    const Node& in = Resolve(*m->inputs[0]);
    int b = -1;
    if (Streamable(in)) {
      for (size_t j = 0; j < buffers.size() && b < 0; ++j) {
        if (buffers[j].dtype() == in.dtype) b = static_cast<int>(j);
      }
      if (b < 0) {
        Shape shape = in_box.shape;
        for (int i = 0; i < rank; ++i) shape[i] = std::min(shape[i], piece[i]);
        STRATA_ASSIGN_OR_RETURN(NDArray buffer, NDArray::Allocate(*frame.pool, in.dtype, shape));
        b = static_cast<int>(buffers.size());
        buffers.push_back(std::move(buffer));
      }
    }
    buffer_of.push_back(b);
  }
  frame.stream_parts = true;
  Status status;
  for (Index start = 0; start < in_box.shape[axis] && status.ok(); start += strip[axis]) {
    frame.leaf_parts.clear();  // the last strip's parts
    Box window = Box::FromShape(in_box.shape);
    window.origin[axis] = start;
    window.shape[axis] = std::min(strip[axis], in_box.shape[axis] - start);
    const Index end = window.origin[piece_axis] + window.shape[piece_axis];
    for (Index at = window.origin[piece_axis]; at < end && status.ok(); at += piece[piece_axis]) {
      Box part = window;
      part.origin[piece_axis] = at;
      part.shape[piece_axis] = std::min(piece[piece_axis], end - at);
      Shape origin = in_box.origin;
      for (int i = 0; i < rank; ++i) origin[i] += part.origin[i];
      for (size_t m = 0; m < members.size() && status.ok(); ++m) {
        const Node& in = Resolve(*members[m]->inputs[0]);
        ConstArrayView values;
        if (Streamable(in)) {
          ArrayView out = buffers[buffer_of[m]].view().Slice(Box::FromShape(part.shape));
          status = RegionOf(in, k, part, out, frame, &window);
          values = out;
        } else {
          Result<ConstArrayView> read = LeafPart(in, k, window, frame);
          status = read.status();
          if (read.ok()) values = read->Slice(Translate(part, window.origin));
        }
        if (status.ok()) members[m]->fold_strip(values, origin, part, start == 0, states[m].view());
      }
    }
  }
  frame.stream_parts = false;
  frame.leaf_parts.clear();
  frame.stream_leaves.clear();
  if (!status.ok()) {
    return status.WithContext(fmt::format("{} ({})", lead.op_name, lead.name));
  }
  *outs = std::move(states);
  return Status::Ok();
}

Status TaskRunner::RegionOf(const Node& given, std::span<const Index> block, const Box& region,
                            const ArrayView& out, Frame& frame, const Box* window) {
  const Node& node = Resolve(given);
  if (Streamable(node) && node.virtual_fill) {
    Box global = region;
    for (int i = 0; i < region.rank(); ++i) global.origin[i] += node.grid.block_origin(i, block[i]);
    return node.virtual_fill(global, out);
  }
  if (!Streamable(node)) {
    // A leaf: its whole block is obtained once per task and sliced.
    auto key = std::make_pair(&node, Shape(block.begin(), block.end()));
    auto it = frame.stream_leaves.find(key);
    if (it == frame.stream_leaves.end()) {
      STRATA_ASSIGN_OR_RETURN(BlockView held, Obtain(node, block, frame));
      it = frame.stream_leaves.emplace(std::move(key), std::move(held)).first;
    }
    CopyArray(it->second.view.Slice(region), out);
    return Status::Ok();
  }
  // A fused elementwise op: the same region of each input, then the op.
  std::vector<ConstArrayView> views;
  std::vector<NDArray> scratch;
  scratch.reserve(node.inputs.size());
  for (size_t j = 0; j < node.inputs.size(); ++j) {
    const Node& in = Resolve(*node.inputs[j]);
    const InputMap& map = node.maps[j];
    Shape k(in.grid.rank());
    Box r(Shape(in.grid.rank(), 0), Shape(in.grid.rank(), 1));
    Box w = r;  // the window's region of the input, likewise
    for (int i = 0; i < in.grid.rank(); ++i) {
      const AxisMap& a = map.axes[i];
      if (a.kind() == AxisMap::Kind::kFixed) {
        k[i] = a.InputsFor(0)[0];
        r.shape[i] = w.shape[i] = in.grid.block_size(i, k[i]);
      } else {
        k[i] = block[a.out_axis()];
        r.origin[i] = region.origin[a.out_axis()];
        r.shape[i] = region.shape[a.out_axis()];
        if (window) {
          w.origin[i] = window->origin[a.out_axis()];
          w.shape[i] = window->shape[a.out_axis()];
        }
      }
    }
    if (Streamable(in)) {
      STRATA_ASSIGN_OR_RETURN(NDArray part, NDArray::Allocate(*frame.pool, in.dtype, r.shape));
      STRATA_RETURN_IF_ERROR(RegionOf(in, k, r, part.view(), frame, window ? &w : nullptr));
      scratch.push_back(std::move(part));
      views.push_back(BroadcastTo(scratch.back().view(), region.shape));
    } else if (frame.stream_parts && in.kind == NodeKind::kZarrSource) {
      // The strip (window) of the leaf's chunk, read once, sliced.
      const Box& strip = window ? w : r;
      STRATA_ASSIGN_OR_RETURN(ConstArrayView part, LeafPart(in, k, strip, frame));
      views.push_back(BroadcastTo(part.Slice(Translate(r, strip.origin)), region.shape));
    } else {
      auto key = std::make_pair(&in, k);
      auto it = frame.stream_leaves.find(key);
      if (it == frame.stream_leaves.end()) {
        STRATA_ASSIGN_OR_RETURN(BlockView held, Obtain(in, k, frame));
        it = frame.stream_leaves.emplace(std::move(key), std::move(held)).first;
      }
      views.push_back(BroadcastTo(it->second.view.Slice(r), region.shape));
    }
  }
  return node.region_fn(views, out);
}

Status TaskRunner::WriteStoreBlock(const Node& node, std::span<const Index> block,
                                   const ConstArrayView& data, Frame& frame) {
  ZarrArray& array = *node.target->array();
  const ChunkGrid& chunks = array.grid();
  if (chunks == node.grid) return array.WriteChunk(block, data, *frame.pool);
  // A task block of several whole chunks (a rechunk's consolidated write
  // chunks, a shard): each is encoded and written in turn.
  const Box box = node.grid.BlockBox(block);
  Shape first, last;
  chunks.BlockRangeOf(box, first, last);
  Shape c = first;
  while (true) {
    const Box cbox = chunks.BlockBox(c);
    STRATA_RETURN_IF_ERROR(
        array.WriteChunk(c, data.Slice(Translate(cbox, box.origin)), *frame.pool));
    int i = static_cast<int>(c.size()) - 1;
    for (; i >= 0; --i) {
      if (++c[i] < last[i]) break;
      c[i] = first[i];
    }
    if (i < 0) break;
  }
  return Status::Ok();
}

Status TaskRunner::Run(const TaskId& task, int attempt, TaskFigures* figures,
                       const std::function<bool()>& superseded, std::optional<NDArray>* kept) {
  const PlannedOp& op = plan_.ops()[task.op];
  const Node& node = *op.node;
  Shape block(node.grid.rank());
  UnravelIndex(task.block, node.grid.grid_shape(), block);
  if (options_.fault_injector) STRATA_RETURN_IF_ERROR(options_.fault_injector(op, block, attempt));
  // A straggler whose backup finished first stops at its next step: its
  // result is not needed, and not publishing it keeps the tiers' and the
  // destination's writes to the winner's.
  auto check = [&]() -> Status {
    if (superseded && superseded()) {
      return AbortedError(fmt::format("task {} of {} was completed by another attempt",
                                      BlockName(block), node.op_name));
    }
    return Status::Ok();
  };
  STRATA_RETURN_IF_ERROR(check());
  Frame frame;
  frame.root = task.op;
  frame.pool =
      pool_->NewChild({fmt::format("task {} of {} ({})", BlockName(block), node.op_name, node.name),
                       plan_.spec().allowed_mem});
  auto t0 = Clock::now();
  const int64_t read_before = ThreadZarrBytesRead();
  const ZarrTarget* target = node.kind == NodeKind::kStore ? node.target.get() : nullptr;
  if (target != nullptr && target->BlockDone(node.grid, block)) {
    figures->skipped = true;  // resumed: its chunks were already written whole
  } else if (target != nullptr && target->writes_region()) {
    // Into part of an existing array: blocks are aligned to its chunks, so a
    // chunk is written by one task; one partly covered is read-modify-written.
    STRATA_ASSIGN_OR_RETURN(BlockView in, Obtain(*node.inputs[0], block, frame));
    STRATA_RETURN_IF_ERROR(check());
    Box box = node.grid.BlockBox(block);
    for (int i = 0; i < box.rank(); ++i) box.origin[i] += target->mode().region_origin[i];
    STRATA_RETURN_IF_ERROR(target->array()->WriteRegion(box, in.view, *frame.pool));
  } else if (target != nullptr && target->array()->is_sharded()) {
    STRATA_RETURN_IF_ERROR(check());
    STRATA_RETURN_IF_ERROR(StoreShard(node, block, frame));
  } else if (target != nullptr) {
    STRATA_ASSIGN_OR_RETURN(BlockView in, Obtain(*node.inputs[0], block, frame));
    STRATA_RETURN_IF_ERROR(check());
    STRATA_RETURN_IF_ERROR(WriteStoreBlock(node, block, in.view, frame));
  } else {
    // The op's block, then each sibling's (a sibling group reads the blocks
    // its members share once). An executor that keeps blocks itself keeps
    // one per task: the planner fuses no siblings for it.
    STRATA_CHECK(kept == nullptr || op.siblings.empty())
        << "op " << node.name << " has siblings under an executor that keeps blocks";
    frame.keep_sources = !op.siblings.empty();
    // Every member is computed before any is published: a group superseded
    // midway (its backup won) publishes nothing, as a single task does. The
    // group's projection holds all its members' blocks at once.
    std::vector<int> members{task.op};
    members.insert(members.end(), op.siblings.begin(), op.siblings.end());
    std::vector<NDArray> outs;
    STRATA_RETURN_IF_ERROR(FoldGroup(members, block, frame, check, &outs));
    if (outs.empty() && members.size() > 1) {
      std::vector<const Node*> nodes;
      for (int m : members) nodes.push_back(plan_.ops()[m].node.get());
      if (StripsTogether(nodes)) {
        STRATA_RETURN_IF_ERROR(FoldStrips(nodes, block, frame, &outs));
        STRATA_RETURN_IF_ERROR(check());
      }
    }
    for (size_t m = outs.size(); m < members.size(); ++m) {
      frame.root = members[m];
      const Node& member = *plan_.ops()[frame.root].node;
      STRATA_ASSIGN_OR_RETURN(NDArray out, ComputeBlock(member, block, frame));
      outs.push_back(std::move(out));
      STRATA_RETURN_IF_ERROR(check());
    }
    // Inputs are no longer needed.
    frame.fetched.clear();
    frame.sources.clear();
    for (size_t m = 0; m <= op.siblings.size(); ++m) {
      const int index = m == 0 ? task.op : op.siblings[m - 1];
      const PlannedOp& member = plan_.ops()[index];
      NDArray& out = outs[m];
      const bool keep = kept && KeepsBlock(member);
      if (member.output_slot >= 0 && !keep) {
        Box box = member.node->grid.BlockBox(block);
        CopyArray(out.view(), result_views_[member.output_slot].Slice(box));
      }
      if (member.tier != Tier::kNone && !(keep && member.tier == Tier::kMemory)) {
        IntermediateStore& tier = *tiers_[index];
        if (keep) {  // a result block that readers also find on disk
          STRATA_ASSIGN_OR_RETURN(NDArray copy, NDArray::CopyOf(*frame.pool, out.view()));
          STRATA_RETURN_IF_ERROR(tier.Put(block, std::move(copy), *frame.pool));
        } else {
          STRATA_RETURN_IF_ERROR(tier.Put(block, std::move(out), *frame.pool));
        }
      }
      if (keep) kept->emplace(std::move(out));
    }
  }
  figures->zarr_bytes_read = ThreadZarrBytesRead() - read_before;
  auto t1 = Clock::now();
  figures->start_seconds = Seconds(t0);
  figures->end_seconds = Seconds(t1);
  figures->measured_peak = frame.pool->peak_bytes();
  return Status::Ok();
}

}  // namespace strata
