#include "strata/plan/memory_model.h"

#include <algorithm>
#include <map>
#include <utility>
#include <vector>

#include "strata/base/check.h"
#include "strata/storage/codec/chunk_codec.h"
#include "strata/storage/zarr/zarr_array.h"

namespace strata {
namespace {

bool HasRaggedEdges(const Shape& shape, const Shape& chunks) {
  for (size_t i = 0; i < shape.size(); ++i) {
    if (chunks[i] > 0 && shape[i] % chunks[i] != 0) return true;
  }
  return false;
}

// What reading one chunk of the Zarr source `source` takes at its peak: the
// chunk decoded beside its codec's copies, and a padded full chunk at
// ragged edges.
int64_t ZarrChunkReadBytes(const Node& source) {
  const ChunkGrid& chunks = source.zarr->grid();
  return source.zarr->chunk_bytes() * (1 + source.zarr->codec().read_copies()) +
         (HasRaggedEdges(chunks.shape(), chunks.chunk_shape()) ? source.max_block_bytes() : 0);
}

// What reading the parts of the Zarr source `source`'s chunks that blocks
// of `grid` overlap takes at its peak, one part at a time into the block
// (ZarrArray::ReadChunkPart): the scratch of decoding a part's runs, or a
// whole chunk's read where a part may go through the chunk.
int64_t ZarrPartsReadBytes(const Node& source, const ChunkGrid& grid) {
  if (source.zarr->is_sharded()) return ZarrChunkReadBytes(source);
  Shape max_part = source.grid.chunk_shape();
  for (size_t d = 0; d < max_part.size(); ++d) {
    max_part[d] = std::min(max_part[d], grid.chunk_shape()[d]);
  }
  return source.zarr->PartReadScratch(max_part).value_or(ZarrChunkReadBytes(source));
}

// Largest number of input blocks any output block reads through `map`.
int64_t MaxInputs(const InputMap& map) {
  int64_t n = 1;
  for (const AxisMap& a : map.axes) n *= a.max_inputs();
  return n;
}

// The largest object a block of `op` is kept as on the object tier: one of
// its stored chunks, or the whole block (ObjectIntermediateStore).
int64_t LargestObjectBytes(const PlannedOp& op) {
  return op.stored_grid ? op.stored_grid->max_block_elements() * op.node->dtype.size()
                        : op.node->max_block_bytes();
}

// What moving a whole block of `op` to or from its tier stages beside the
// block: a block kept as several objects goes one object at a time through
// a staging buffer; a block kept as one object, or on another tier, goes
// directly.
int64_t BlockStagingBytes(const PlannedOp& op) {
  return op.tier == Tier::kObject && op.stored_grid ? LargestObjectBytes(op) : 0;
}

// What reading a region of a block of `op` from its tier stages: the object
// tier GETs a byte range of one object at a time; the others are read in
// place.
int64_t RegionStagingBytes(const PlannedOp& op) {
  return op.tier == Tier::kObject ? LargestObjectBytes(op) : 0;
}

}  // namespace

bool Streamable(const PlannedOp& op) {
  return (op.node->region_fn || op.node->virtual_fill) && !op.materialized;
}

bool ReadsInParts(const Node& given, const Shape& part, const OpLookup& op_of, bool* zarr) {
  const PlannedOp& op = op_of(given);
  const Node& node = *op.node;
  if (Streamable(op)) {
    if (node.virtual_fill) return true;
    for (size_t j = 0; j < node.inputs.size(); ++j) {
      const Node& in = *op_of(*node.inputs[j]).node;
      if (!ReadsInParts(in, InputPartShape(node.maps[j], in.grid, part), op_of, zarr)) return false;
    }
    return true;
  }
  if (node.kind == NodeKind::kMemorySource) return true;
  if (op.materialized || node.kind != NodeKind::kZarrSource || !(node.grid == node.zarr->grid())) {
    return false;
  }
  *zarr = true;
  return node.zarr->StripReadScratch(part).has_value();
}

bool StreamsParts(const Node& node, const OpLookup& op_of) {
  bool zarr = false;
  return node.streams_input && node.inputs.size() == 1 && node.fold_strip &&
         !node.stream_part_strip.empty() &&
         ReadsInParts(*node.inputs[0], node.stream_part_strip, op_of, &zarr) && zarr;
}

bool StripsTogether(std::span<const Node* const> members, const OpLookup& op_of) {
  const Node& lead = *members[0];
  for (const Node* m : members) {
    if (!StreamsParts(*m, op_of) || m->stream_part_strip != lead.stream_part_strip ||
        !SameMap(m->maps[0], lead.maps[0]) ||
        !(op_of(*m->inputs[0]).node->grid == op_of(*lead.inputs[0]).node->grid)) {
      return false;
    }
  }
  return true;
}

bool FoldsInTask(const Node& node, const OpLookup& op_of) {
  if (!node.fold_states || !node.merge_state || node.inputs.size() != 1) return false;
  const PlannedOp& in = op_of(*node.inputs[0]);
  return in.node->kind == NodeKind::kBlockwise && !in.materialized;
}

CopyCosts TierCopies(Tier tier, CopyCosts ends) {
  if (tier == Tier::kObject) return {ends.read + 1, ends.write + 1};
  return ends;
}

int64_t RechunkMaxMem(const ResolvedSpec& spec, CopyCosts copies) {
  return spec.task_budget() / (3 + copies.read + copies.write);
}

int64_t DefaultRechunkMinMem(int64_t max_mem, int64_t nbytes) {
  return std::min(max_mem / 20, nbytes);
}

ChunkFit FitChunksToBudget(Shape chunks, std::span<const Index> min_chunks,
                           const std::function<int64_t(const Shape&)>& task_bytes,
                           int64_t task_budget) {
  STRATA_CHECK(min_chunks.empty() || min_chunks.size() == chunks.size());
  auto floor_of = [&](size_t d) { return min_chunks.empty() ? Index{1} : min_chunks[d]; };
  int64_t bytes = task_bytes(chunks);
  while (bytes > task_budget) {
    int best = -1;
    int64_t best_bytes = 0;
    for (size_t d = 0; d < chunks.size(); ++d) {
      const Index keep = chunks[d];
      if (keep <= floor_of(d)) continue;
      chunks[d] = std::max(floor_of(d), (keep + 1) / 2);
      const int64_t b = task_bytes(chunks);
      chunks[d] = keep;
      if (best < 0 || b < best_bytes || (b == best_bytes && keep > chunks[best])) {
        best = static_cast<int>(d);
        best_bytes = b;
      }
    }
    if (best < 0) break;  // every axis at its minimum
    chunks[best] = std::max(floor_of(best), (chunks[best] + 1) / 2);
    bytes = best_bytes;
  }
  return {std::move(chunks), bytes, bytes <= task_budget};
}

int64_t LeafReadBytes(const Node& node) {
  return node.kind == NodeKind::kZarrSource ? ZarrChunkReadBytes(node) : node.max_block_bytes();
}

int64_t InPlaceRechunkBytes(const Node& source, const ChunkGrid& target, int write_copies) {
  return target.max_block_elements() * source.dtype.size() * (1 + write_copies) +
         ZarrPartsReadBytes(source, target);
}

MemoryModel::MemoryModel(std::span<const PlannedOp> ops,
                         const std::unordered_map<const Node*, int>& index, int64_t reserved_mem)
    : ops_(ops), index_(index), reserved_(reserved_mem) {}

bool MemoryModel::IsLeaf(const PlannedOp& op, int root) const {
  return op.node->kind == NodeKind::kZarrSource || (op.materialized && op.index != root);
}

MemoryModel::Cost MemoryModel::Obtain(const Node& given, int root) const {
  const PlannedOp& op = OpOf(given);
  const Node& node = *op.node;
  const int64_t block = node.max_block_bytes();
  if (held_leaves_ && IsLeaf(op, root) && held_leaves_->count(&node)) return {0, 0};
  switch (node.kind) {
    case NodeKind::kMemorySource:
      return {0, 0};
    case NodeKind::kZarrSource:
      return {ZarrChunkReadBytes(node), block};
    case NodeKind::kVirtual: {
      Cost c = Gather(node, root);
      return {std::max(c.peak, c.held + node.extra_mem + block), block};
    }
    default:
      break;
  }
  if (op.materialized && op.index != root) {
    return {block + BlockStagingBytes(op), block};  // fetched from its tier
  }
  // Computed here (fused, or the root itself).
  if (node.kind == NodeKind::kExchange) {
    // Slices go straight into the output from the input's tier (the object
    // tier stages them); a Zarr source is read in place, a part at a time;
    // an input computed here is obtained one block at a time.
    const Node& in = *node.inputs[0];
    const PlannedOp& in_op = OpOf(in);
    const int64_t staged = in_op.materialized && in_op.index != root ? RegionStagingBytes(in_op)
                           : in_op.node->kind == NodeKind::kZarrSource
                               ? ZarrPartsReadBytes(*in_op.node, node.grid)
                               : Obtain(in, root).peak;
    return {block + staged, block};
  }
  if (StreamsParts(node)) {
    // The input chain is computed strip by strip, each leaf read a strip at
    // a time (TaskRunner::FoldStrips): no leaf block is ever whole.
    const Node* one[] = {&node};
    return {StripsPeak(one), block};
  }
  if (node.streams_input && node.inputs.size() == 1 && StreamableHere(*node.inputs[0])) {
    // The input chain is computed strip by strip: its leaves' blocks are
    // held for the task, plus one strip of scratch per level.
    Cost c = StreamCost(*node.inputs[0], root, node.stream_strip_elements);
    const int64_t own = node.stream_strip_elements * OpOf(*node.inputs[0]).node->dtype.size();
    return {std::max(c.peak, c.held + own + node.extra_mem + block), block};
  }
  Cost c = Gather(node, root);
  const int64_t out = node.kind == NodeKind::kStore ? 0 : block;
  // Partial inputs are read while the op runs, its output and the parts it
  // reads into (extra_mem) allocated: one read at a time.
  int64_t part = 0;
  for (size_t i = 0; i < node.inputs.size(); ++i) {
    if (node.partial_input(i)) part = std::max(part, PartReadPeak(*node.inputs[i], root));
  }
  return {std::max(c.peak, c.held + node.extra_mem + out + part), out};
}

int64_t MemoryModel::PartReadPeak(const Node& given, int root) const {
  // As TaskRunner::ReadPart reads.
  const PlannedOp& op = OpOf(given);
  const Node& node = *op.node;
  if (op.materialized && op.index != root) return RegionStagingBytes(op);
  // ReadChunkPart decodes at most the whole chunk, into a temporary.
  if (node.kind == NodeKind::kZarrSource && !node.zarr->is_sharded()) {
    return ZarrChunkReadBytes(node);
  }
  if (node.kind == NodeKind::kVirtual && node.virtual_fill) return 0;
  return Obtain(node, root).peak;  // obtained whole, released after the copy
}

bool MemoryModel::StreamableHere(const Node& given) const { return Streamable(OpOf(given)); }

bool MemoryModel::StreamsParts(const Node& node) const {
  return strata::StreamsParts(node, [this](const Node& n) -> const PlannedOp& { return OpOf(n); });
}

int64_t MemoryModel::StripsPeak(std::span<const Node* const> members) const {
  int64_t held = 0, chain = 0;
  LeafParts leaves, read;
  std::map<DTypeId, int64_t> pieces;
  for (const Node* member : members) {
    const Node& node = *member;
    const Node& in = *OpOf(*node.inputs[0]).node;
    const Shape& strip = node.stream_part_strip;
    // Its state for the whole task, a piece per dtype of the chains (a
    // leaf's part is folded as read), each leaf's strip once for all, and
    // one chain's scratch at a time (the members compute a piece in turn, in
    // this order).
    held += node.max_block_bytes() + node.extra_mem;
    if (StreamableHere(in)) pieces[in.dtype.id()] = NumElements(node.stream_part_piece) * in.dtype.size();
    chain = std::max(chain, PartsScratch(in, strip, node.stream_part_piece, read).peak);
    PartsLeaves(in, strip, leaves);
  }
  for (const auto& [leaf, bytes] : leaves) held += bytes;
  for (const auto& [dtype, bytes] : pieces) held += bytes;
  return held + chain;
}

void MemoryModel::PartsLeaves(const Node& given, const Shape& part, LeafParts& out) const {
  const Node& node = *OpOf(given).node;
  if (StreamableHere(node)) {
    for (size_t j = 0; j < node.inputs.size(); ++j) {
      const Node& in = *OpOf(*node.inputs[j]).node;
      PartsLeaves(in, InputPartShape(node.maps[j], in.grid, part), out);
    }
  } else if (node.kind == NodeKind::kZarrSource) {
    out[{&node, part}] = NumElements(part) * node.dtype.size();
  }
}

MemoryModel::Cost MemoryModel::PartsScratch(const Node& given, const Shape& part,
                                            const Shape& piece, LeafParts& read) const {
  const Node& node = *OpOf(given).node;
  if (StreamableHere(node)) {
    Cost total;
    if (node.virtual_fill) return total;
    for (size_t j = 0; j < node.inputs.size(); ++j) {
      const Node& in = *OpOf(*node.inputs[j]).node;
      const Shape p = InputPartShape(node.maps[j], in.grid, part);
      const Shape q = InputPartShape(node.maps[j], in.grid, piece);
      Cost c = PartsScratch(in, p, q, read);
      if (StreamableHere(in)) {  // its piece is computed into a scratch
        c.held += NumElements(q) * in.dtype.size();
        c.peak = std::max(c.peak, c.held);
      }
      total.peak = std::max(total.peak, total.held + c.peak);
      total.held += c.held;
    }
    return total;
  }
  if (node.kind == NodeKind::kMemorySource) return {};
  // A Zarr leaf: read once per strip (TaskRunner::LeafPart), its strip
  // counted by the caller; the read's scratch while it reads.
  if (!read.emplace(std::make_pair(&node, part), 0).second) return {};
  return {node.zarr->StripReadScratch(part).value_or(ZarrChunkReadBytes(node)), 0};
}

// Leaves of a streamed elementwise chain (held whole) and a strip of
// scratch for every streamed level below the top.
MemoryModel::Cost MemoryModel::StreamCost(const Node& given, int root,
                                          int64_t strip_elements) const {
  const Node& node = *OpOf(given).node;
  Cost total;
  if (node.virtual_fill) return total;
  for (const auto& in : node.inputs) {
    Cost c;
    if (StreamableHere(*in)) {
      c = StreamCost(*in, root, strip_elements);
      c.held += strip_elements * OpOf(*in).node->dtype.size();
      c.peak = std::max(c.peak, c.held);
    } else {
      c = Obtain(*in, root);
    }
    total.peak = std::max(total.peak, total.held + c.peak);
    total.held += c.held;
  }
  return total;
}

MemoryModel::Cost MemoryModel::Gather(const Node& node, int root) const {
  Cost total;
  for (size_t i = 0; i < node.inputs.size(); ++i) {
    if (node.partial_input(i)) continue;  // read while the op runs
    Cost each = Obtain(*node.inputs[i], root);
    const int64_t n = MaxInputs(node.maps[i]);
    // Blocks are gathered one after another; all are held until computing.
    if (n > 0) {
      total.peak = std::max(total.peak, total.held + (n - 1) * each.held + each.peak);
      total.held += n * each.held;
    }
  }
  return total;
}

int64_t MemoryModel::InputRegionPeak(const Node& given, int root, int64_t region_bytes) const {
  const PlannedOp& in_op = OpOf(given);
  const Node& in = *in_op.node;
  if (in_op.materialized && in_op.index != root) {
    return RegionStagingBytes(in_op);  // read by region from its tier
  }
  if (in.kind == NodeKind::kExchange) {
    const PlannedOp& src_op = OpOf(*in.inputs[0]);
    const Node& src = *src_op.node;
    if (src_op.materialized && src_op.index != root) return RegionStagingBytes(src_op);
    if (StreamableHere(src)) {
      return StreamCost(src, root, region_bytes / std::max(1, src.dtype.size())).peak;
    }
    if (src.kind == NodeKind::kZarrSource) return ZarrPartsReadBytes(src, in.grid);
    return Obtain(src, root).peak;  // one input block at a time
  }
  if (StreamableHere(in)) {
    return StreamCost(in, root, region_bytes / std::max(1, in.dtype.size())).peak;
  }
  if (in.kind == NodeKind::kZarrSource && in.zarr->is_sharded()) {
    // Read inner chunk by inner chunk (an edge one through a temporary).
    return in.zarr->chunk_bytes() * (2 + in.zarr->codec().read_copies());
  }
  return Obtain(in, root).peak;  // the whole block, held for the task
}

void MemoryModel::Leaves(const Node& given, int root, std::unordered_map<const Node*, int64_t>& out,
                         int64_t mult) const {
  const Node& node = *OpOf(given).node;
  if (StreamsParts(node)) return;  // its leaves are read a strip at a time, never held
  for (size_t i = 0; i < node.inputs.size(); ++i) {
    const PlannedOp& in = OpOf(*node.inputs[i]);
    const int64_t n = mult * MaxInputs(node.maps[i]);
    if (IsLeaf(in, root)) {
      int64_t& most = out[in.node.get()];
      most = std::max(most, n);
    } else if (in.node->kind != NodeKind::kMemorySource) {
      Leaves(*in.node, root, out, n);
    }
  }
}

int64_t MemoryModel::ProjectGroup(const PlannedOp& leader) const {
  std::vector<int> members = {leader.index};
  members.insert(members.end(), leader.siblings.begin(), leader.siblings.end());
  std::vector<const Node*> nodes;
  for (int m : members) nodes.push_back(ops_[m].node.get());
  if (StripsTogether(nodes, [this](const Node& n) -> const PlannedOp& { return OpOf(n); })) {
    return reserved_ + StripsPeak(nodes);
  }
  std::unordered_map<const Node*, int64_t> leaves;
  for (int m : members) Leaves(*ops_[m].node, m, leaves, 1);
  int64_t held = 0, scratch = 0, outputs = 0;
  for (const auto& [leaf, n] : leaves) {
    // Obtained as a leaf of the first member that reads it.
    int reader = leader.index;
    const Cost c = Obtain(*leaf, reader);
    held += n * c.held;
    scratch = std::max(scratch, c.peak - c.held);
  }
  for (int m : members) outputs += ops_[m].node->max_block_bytes();
  int64_t worst = 0;
  held_leaves_ = &leaves;
  for (int m : members) {
    const Cost c = Obtain(*ops_[m].node, m);
    worst = std::max(worst, c.peak + outputs - ops_[m].node->max_block_bytes());
  }
  held_leaves_ = nullptr;
  return reserved_ + held + scratch + worst;
}

std::optional<int64_t> MemoryModel::ProjectFold(std::span<const int> members) const {
  const OpLookup op_of = [this](const Node& n) -> const PlannedOp& { return OpOf(n); };
  // Each member's tree from the top: its combine rounds, then its leaf.
  std::vector<std::vector<const Node*>> trees;
  for (int m : members) {
    std::vector<const Node*> levels;
    const Node* node = ops_[m].node.get();
    while (FoldsInTask(*node, op_of)) {
      levels.push_back(node);
      node = OpOf(*node->inputs[0]).node.get();
    }
    if (levels.empty()) return std::nullopt;
    levels.push_back(node);
    // The runtime folds in lockstep only trees of one shape: the same maps
    // at every level read the same leaves, closing the same blocks.
    if (!trees.empty()) {
      const std::vector<const Node*>& lead = trees[0];
      if (levels.size() != lead.size() || !(node->grid == lead.back()->grid)) return std::nullopt;
      for (size_t l = 0; l + 1 < levels.size(); ++l) {
        if (!SameMap(levels[l]->maps[0], lead[l]->maps[0])) return std::nullopt;
      }
    }
    trees.push_back(std::move(levels));
  }
  // A level holds its running state, and an input state beside it while the
  // first input is combined alone into it.
  int64_t states = 0;
  for (const std::vector<const Node*>& levels : trees) {
    for (size_t l = 0; l + 1 < levels.size(); ++l) {
      states += levels[l]->max_block_bytes() + levels[l + 1]->max_block_bytes();
    }
  }
  // A leaf's sources are read once for all members (a sibling group keeps
  // them) and released before the next leaf; each member's leaf is computed
  // in turn beside them.
  std::unordered_map<const Node*, int64_t> leaves;
  for (size_t m = 0; m < members.size(); ++m) Leaves(*trees[m].back(), members[m], leaves, 1);
  int64_t held = 0, scratch = 0;
  for (const auto& [leaf, n] : leaves) {
    const Cost c = Obtain(*leaf, members[0]);
    held += n * c.held;
    scratch = std::max(scratch, c.peak - c.held);
  }
  int64_t worst = 0;
  held_leaves_ = &leaves;
  for (size_t m = 0; m < members.size(); ++m) {
    worst = std::max(worst, Obtain(*trees[m].back(), members[m]).peak);
  }
  held_leaves_ = nullptr;
  // The members' blocks are stored in turn, each staging at most one object.
  int64_t staging = 0;
  for (int m : members) staging = std::max(staging, BlockStagingBytes(ops_[m]));
  return reserved_ + states + held + scratch + worst + staging;
}

int64_t MemoryModel::Project(int index) const {
  const PlannedOp& op = ops_[index];
  if (op.node->fold_states) {
    std::vector<int> members = {index};
    members.insert(members.end(), op.siblings.begin(), op.siblings.end());
    if (std::optional<int64_t> fold = ProjectFold(members)) return *fold;
  }
  if (!op.siblings.empty()) return ProjectGroup(op);
  const Node& node = *op.node;
  if (node.kind == NodeKind::kStore && node.target && node.target->sharded() &&
      !node.target->writes_region()) {
    // One inner chunk buffer and its encoding, the writer's buffer (none
    // when it streams to a file), and the input's cost per inner chunk: a
    // shard is never held whole.
    // (A task writing a part of a shard, when the shards were split among
    // tasks, appends each inner chunk to the shard's file as it is encoded.)
    const int64_t inner = node.target->chunk_bytes();
    return reserved_ + inner * (1 + node.target->codec().write_copies()) +
           node.target->shard_writer_bytes() + InputRegionPeak(*node.inputs[0], index, inner);
  }
  const Cost c = Obtain(node, index);
  int64_t write_extra = 0;
  if (node.kind == NodeKind::kStore && node.target) {
    // The encoded chunk beside the block (and a padded full chunk at edges);
    // a task writing several chunks encodes them one at a time.
    const ArrayMetadata& m = node.target->metadata();
    write_extra = node.target->chunk_bytes() * node.target->codec().write_copies() +
                  (HasRaggedEdges(m.shape, m.chunk_shape) ? node.target->chunk_bytes() : 0);
    if (node.target->writes_region()) {
      // A partly covered chunk is read (decoded beside its encoded bytes)
      // and rewritten; a shard keeps its old encoded bytes while rebuilt.
      const int64_t chunk = node.target->chunk_bytes();
      write_extra += chunk * (1 + node.target->codec().read_copies());
      if (node.target->sharded()) write_extra += node.target->shard_layout()->max_shard_bytes();
    }
  }
  return reserved_ + c.peak + write_extra + BlockStagingBytes(op);
}

int64_t ProjectTaskMemory(const Plan& plan, int op_index) {
  return MemoryModel(plan.ops(), plan.index(), plan.spec().reserved_mem).Project(op_index);
}

}  // namespace strata
