// The lower_rechunk pass: each logical rechunk (a node that only carries its
// target grid) becomes the ops that move its data, decided here and nowhere
// else (shared/DESIGN.md, "Rechunk and tiers"):
//
//   virtual source    regenerated in the target chunks; nothing moves.
//   read in place     a Zarr source whose chunks decode in parts (raw bytes,
//                     blosc's blocks; ZarrArray::ReadChunkPart) on a store
//                     with cheap ranged reads: each target block reads and
//                     decodes only the parts of the source chunks it needs,
//                     and nothing is held between tasks. Chosen (unless a
//                     tier is forced) when that decodes at most
//                     kMaxPartialReadAmplification bytes per stored byte,
//                     as estimated by PartialReadAmplification, and when
//                     a task fits its budget with the parts it decodes
//                     (InPlaceRechunkBytes); a source decoded
//                     once and published would take RAM (or disk) for the
//                     whole array and fresh memory to fill.
//   exchange          one stage: the input is published to a tier (a Zarr
//                     source is read and decoded once), and each target block
//                     gathers exactly the slices it needs. Chosen when the
//                     intermediate fits in the RAM the capacity ledger has
//                     left, when the memory or spill tier is forced, or past
//                     the RAM when spilling the excess per block costs less
//                     than the stages (an estimate of disk time for both).
//   multistage        rechunker's stages on the disk or object tier (forced,
//                     or chosen by that estimate), as Cubed runs them: a Zarr
//                     source is read in place by the first stage (never
//                     copied first); each stage is one op whose tasks copy a
//                     block of its copy chunks from the previous array and
//                     store it as rechunker's intermediate chunks (split to
//                     fit both grids, StoredLayout); when the rechunk is only
//                     written to Zarr (or returned), the last stage's tasks
//                     write its consolidated write chunks, several target
//                     chunks each, so that storing adds no task.
//
// Before lowering, a store of a sharded array written only from a rechunk
// may have its shards split into parts (SplitShards): see there.
//
// The lowering claims the exchange's intermediate from the capacity ledger
// (its placement, with PlaceIntermediate's reason, is what place_tiers then
// applies), and places the stages on their tier, so that the plan's tier of
// every rechunk intermediate is the one its strategy says.
#include <fmt/format.h>

#include <algorithm>

#include "strata/base/byte_size.h"
#include "strata/plan/memory_model.h"
#include "strata/plan/passes_internal.h"
#include "strata/plan/rechunk_plan.h"
#include "strata/storage/codec/chunk_codec.h"
#include "strata/storage/zarr/shard.h"
#include "strata/storage/zarr/zarr_array.h"
#include "strata/storage/zarr/zarr_target.h"

namespace strata::internal_plan {
namespace {

// Rough costs of moving intermediate bytes through local disk, to choose
// between spilling a one-stage exchange and rechunker's stages.
constexpr double kDiskBytesPerSecond = 1e9;
constexpr double kSecondsPerIoOp = 50e-6;
// Reading in place may decode this many bytes per stored byte at most (a
// blosc block shared by two targets' parts is decoded by both). Decoding
// blocks again costs less than the fresh memory a published decode fills:
// blosc decodes at 1-4 GB/s a core, and faulting in fresh pages runs at
// ~0.7 GB/s on the VMs measured (bench/README.md).
constexpr double kMaxPartialReadAmplification = 2.0;
// A ranged read costs a page at least, whatever it decodes.
constexpr int64_t kPageBytes = 4096;

std::shared_ptr<const Node> ExchangeNode(const std::shared_ptr<const Node>& input,
                                         const ChunkGrid& grid, std::string name) {
  Node n;
  n.name = std::move(name);
  n.op_name = "rechunk";
  n.kind = NodeKind::kExchange;
  n.shape = input->shape;
  n.dtype = input->dtype;
  n.grid = grid;
  InputMap map;
  for (int i = 0; i < grid.rank(); ++i) map.axes.push_back(AxisMap::Overlap(i, grid, input->grid, i));
  n.inputs = {input};
  n.maps = {std::move(map)};
  n.spec = input->spec;
  return MakeNode(std::move(n));
}

// The readers of `node` among the draft's ops.
std::vector<const PlannedOp*> ReadersOf(const PlanDraft& d, const Node* node) {
  std::vector<const PlannedOp*> readers;
  for (const PlannedOp& op : d.ops) {
    for (const auto& in : op.node->inputs) {
      if (in.get() == node) {
        readers.push_back(&op);
        break;
      }
    }
  }
  return readers;
}

// How many parts a shard of `inner_grid` inner chunks is cut into along each
// axis for about `want` parts: whole inner chunks, leading axes first, each
// count dividing the axis's inner chunks (so parts nest in every shard).
Shape PartsPerShard(const Shape& inner_grid, int64_t want) {
  Shape k(inner_grid.size(), 1);
  for (size_t i = 0; i < inner_grid.size() && want > 1; ++i) {
    const Index g = inner_grid[i];
    if (g >= want) {
      Index c = want;
      while (g % c != 0) ++c;
      k[i] = c;
      want = 1;
    } else {
      k[i] = g;
      want = (want + g - 1) / g;
    }
  }
  return k;
}

// Shards split among tasks. A store task of a sharded array assembles a
// whole shard, so a shard of hundreds of MB is encoded by one worker while
// the others wait (one task in all for an array of one shard). Under the
// threads executor, writing to a local directory (where a shard's writer
// streams to one file, holding nothing), a store whose input is a rechunk
// read by nothing else takes parts of shards as its task blocks instead:
// groups of whole inner chunks, enough for four tasks a worker and none over
// a quarter of the task budget. Each part task encodes its inner chunks and
// appends them to the shard's file; the last part writes the index
// (TaskRunner::AddShardPart). The rechunk then targets the parts, so each
// part task reads only what its inner chunks need. Other executors keep one
// task a shard: their tasks share no writer.
Status SplitShards(PlanDraft& d) {
  const ResolvedSpec& spec = d.spec;
  if (spec.executor != ExecutorKind::kThreads || spec.workers < 2) return Status::Ok();
  bool split = false;
  for (const PlannedOp& op : d.ops) {
    const Node& store = *op.node;
    if (store.kind != NodeKind::kStore || !store.target || !store.target->sharded() ||
        store.target->writes_region() || store.target->shard_writer_bytes() != 0) {
      continue;
    }
    const std::shared_ptr<const Node> rechunk = ResolveNode(d, store.inputs[0]);
    if (rechunk->kind != NodeKind::kRechunk || d.OpOf(*rechunk).is_output ||
        ReadersOf(d, rechunk.get()).size() != 1) {
      continue;
    }
    const ShardLayout& layout = *store.target->shard_layout();
    if (!store.grid.is_regular() || store.grid.chunk_shape() != layout.shard_shape()) continue;
    const int64_t shard_bytes = NumElements(layout.shard_shape()) * store.dtype.size();
    const int64_t quarter = std::max<int64_t>(1, spec.task_budget() / 4);
    int64_t want = std::max<int64_t>((4 * spec.workers + store.grid.num_blocks() - 1) /
                                         store.grid.num_blocks(),
                                     (shard_bytes + quarter - 1) / quarter);
    want = std::min<int64_t>(want, layout.inner_per_shard());
    if (want <= 1) continue;
    const Shape k = PartsPerShard(layout.inner_grid(), want);
    Shape part(k.size());
    for (size_t i = 0; i < k.size(); ++i) part[i] = layout.shard_shape()[i] / k[i];
    STRATA_ASSIGN_OR_RETURN(ChunkGrid parts, ChunkGrid::Regular(store.shape, part));
    Node r = *rechunk;
    r.grid = parts;
    std::shared_ptr<const Node> target = MakeNode(std::move(r));
    Node s = store;
    s.grid = parts;
    s.inputs = {target};
    s.maps = {InputMap::IdentityMap(parts.grid_shape())};
    d.replaced[op.node.get()] = MakeNode(std::move(s));
    d.decisions.push_back(fmt::format(
        "store {}: shards {} split into parts {} ({} per shard, {} tasks for {} workers): each "
        "task encodes a part's inner chunks and appends them to its shard's file",
        store.name, ShapeToString(layout.shard_shape()), ShapeToString(part), NumElements(k),
        parts.num_blocks(), spec.workers));
    split = true;
  }
  if (split) STRATA_RETURN_IF_ERROR(Collect(d));
  return Status::Ok();
}

Status LowerOne(PlanDraft& d, const std::shared_ptr<const Node>& rechunk) {
  const ResolvedSpec& spec = d.spec;
  const std::shared_ptr<const Node> x = ResolveNode(d, rechunk->inputs[0]);
  const ChunkGrid& target = rechunk->grid;
  const std::string what = fmt::format("rechunk {} {} -> {}", rechunk->name, x->grid.ToString(),
                                       target.ToString());
  if (x->grid == target) {
    d.replaced[rechunk.get()] = x;
    return Status::Ok();
  }
  if (x->kind == NodeKind::kVirtual && x->virtual_fill) {
    // Computed in any chunking: nothing moves.
    Node regridded = *x;
    regridded.name = rechunk->name;
    regridded.grid = target;
    d.replaced[rechunk.get()] = MakeNode(std::move(regridded));
    d.decisions.push_back(fmt::format("{}: a virtual array, regenerated in the new chunks", what));
    return Status::Ok();
  }
  const Shape& shape = x->shape;
  const int64_t itemsize = x->dtype.size();
  const int64_t bytes = x->nbytes();
  const Shape& source = x->grid.chunk_shape();
  const Shape& target_chunks = target.chunk_shape();
  const bool regular = x->grid.is_regular() && target.is_regular() && x->grid.rank() > 0 &&
                       bytes > 0;
  const Tier stage_tier = spec.tier == TierChoice::kObject ? Tier::kObject : Tier::kDisk;

  // The copies the storage path makes at either end: the source's codec,
  // and the store's when the result is written to Zarr.
  CopyCosts ends;
  if (x->kind == NodeKind::kZarrSource) ends.read = x->zarr->codec().read_copies();
  for (const PlannedOp* reader : ReadersOf(d, rechunk.get())) {
    if (reader->node->kind == NodeKind::kStore && reader->node->target) {
      ends.write = std::max(ends.write, reader->node->target->codec().write_copies());
    }
  }

  if (spec.tier == TierChoice::kAuto && regular && x->kind == NodeKind::kZarrSource &&
      !x->zarr->is_sharded() && x->zarr->store()->cheap_ranged_reads() &&
      InPlaceRechunkBytes(*x, target, ends.write) <=
          spec.task_budget()) {
    if (const std::optional<int64_t> unit = x->zarr->PartialReadUnit()) {
      const double amplification = PartialReadAmplification(
          shape, source, target_chunks, itemsize, std::max(*unit, kPageBytes));
      if (amplification <= kMaxPartialReadAmplification) {
        std::shared_ptr<const Node> exchange = ExchangeNode(x, target, rechunk->name);
        const std::string why = fmt::format(
            "read in place: each target block decodes only the parts of the source chunks it "
            "needs ({:.2f} bytes decoded per byte, in units of {}), nothing is held",
            amplification, FormatBytes(*unit));
        d.notes[exchange.get()] = why;
        d.replaced[rechunk.get()] = exchange;
        d.decisions.push_back(fmt::format("{}: {}", what, why));
        return Status::Ok();
      }
    }
  }

  // rechunker's stages, with the task budget split by what the storage path
  // copies at either end and on the stage tier.
  const CopyCosts copies = TierCopies(stage_tier, ends);
  // Strata's stage tasks hold only their output block (slices are read
  // straight into it), so a stage may move blocks as large as the ends: a
  // source chunk only when a task can hold one beside reading a Zarr
  // source's chunk (decoded whole, with its codec's copies). Otherwise a
  // source chunk over max_mem has no multistage plan (as in rechunker), and
  // the exchange below reads each chunk once and publishes it.
  const int64_t source_block =
      x->kind != NodeKind::kZarrSource ||
              x->max_block_bytes() + LeafReadBytes(*x) <= spec.task_budget()
          ? x->max_block_bytes()
          : 0;
  const int64_t max_mem = std::max({RechunkMaxMem(spec, copies), source_block,
                                    target.max_block_elements() * itemsize});
  const int64_t min_mem = rechunk->rechunk_min_mem >= 0
                              ? rechunk->rechunk_min_mem
                              : DefaultRechunkMinMem(max_mem, bytes);
  Result<MultistagePlan> multi =
      regular ? PlanMultistage(shape, source, target_chunks, itemsize, std::min(min_mem, max_mem),
                               max_mem)
              : Result<MultistagePlan>(InvalidArgumentError("irregular chunks"));
  std::vector<RechunkCopy> ops;
  if (multi.ok()) ops = CopyOperations(*multi, target_chunks);

  bool multistage = (spec.tier == TierChoice::kDisk || spec.tier == TierChoice::kObject) && multi.ok();
  std::string why;
  const int64_t left = d.ledger.left();
  if (spec.tier == TierChoice::kMemory || spec.tier == TierChoice::kSpill) {
    why = fmt::format("one-stage exchange ({} tier forced)", TierChoiceName(spec.tier));
  } else if (spec.tier == TierChoice::kDisk || spec.tier == TierChoice::kObject) {
    why = multistage ? fmt::format("multistage on the {} tier ({} forced): {}",
                                   TierName(stage_tier), TierChoiceName(spec.tier), multi->reason)
                     : fmt::format("one-stage exchange through the {} tier ({} forced; {})",
                                   TierName(stage_tier), TierChoiceName(spec.tier),
                                   multi.status().message());
  } else if (bytes <= left) {
    why = fmt::format("one-stage exchange in RAM: {} fits in the {} left for intermediates",
                      FormatBytes(bytes), FormatBytes(left));
  } else if (!multi.ok()) {
    why = fmt::format("one-stage exchange spilling per block ({} exceeds the {} of RAM left; no "
                      "multistage plan: {})",
                      FormatBytes(bytes), FormatBytes(left), multi.status().message());
  } else {
    // Spilling writes and reads back the excess once, in whole blocks, and
    // reads a share of the pieces from disk; the stages write and read the
    // whole array once per stored stage.
    const int64_t pieces = ExchangePieces(shape, source, target_chunks);
    const double excess = static_cast<double>(bytes - left);
    const double spill = 2 * excess / kDiskBytesPerSecond +
                         static_cast<double>(pieces) * (excess / static_cast<double>(bytes)) *
                             kSecondsPerIoOp;
    const double stored = static_cast<double>(ops.size() - 1);
    const double staged = 2 * stored * static_cast<double>(bytes) / kDiskBytesPerSecond +
                          static_cast<double>(multi->io_ops) * kSecondsPerIoOp;
    multistage = staged < spill;
    why = fmt::format(
        "{} exceeds the {} of RAM left: {} (estimated {:.1f} s spilling {} with {} pieces vs "
        "{:.1f} s for {} stored stage{} with {} IO ops)",
        FormatBytes(bytes), FormatBytes(left),
        multistage       ? "multistage on disk"
        : left > 0       ? "one-stage exchange spilling per block"
                         : "one-stage exchange through local disk",
        spill,
        FormatBytes(static_cast<int64_t>(excess)), pieces, staged, stored, stored == 1 ? "" : "s",
        multi->io_ops);
  }

  if (!multistage) {
    std::shared_ptr<const Node> exchange = ExchangeNode(x, target, rechunk->name);
    // The input is published: a Zarr source is read and decoded once.
    if (x->kind == NodeKind::kZarrSource) d.published.insert(x.get());
    if (x->kind != NodeKind::kMemorySource && !d.placed.count(x.get())) {
      d.placed[x.get()] = PlaceIntermediate(d.ledger, bytes, spec);
    }
    d.notes[exchange.get()] = why;
    d.replaced[rechunk.get()] = exchange;
    d.decisions.push_back(fmt::format("{}: {}", what, why));
    return Status::Ok();
  }

  // The stages. The last one produces the target chunks its readers key on,
  // unless its one reader is a store of them (its tasks then write several
  // target chunks each) or nothing reads it (its blocks are results).
  const std::vector<const PlannedOp*> readers = ReadersOf(d, rechunk.get());
  const bool requested = d.OpOf(*rechunk).is_output;
  const PlannedOp* store = readers.size() == 1 && !requested &&
                                   readers[0]->node->kind == NodeKind::kStore &&
                                   readers[0]->node->grid == target
                               ? readers[0]
                               : nullptr;
  const bool write_chunks = store != nullptr || (readers.empty() && requested);
  std::vector<std::string> steps;
  std::shared_ptr<const Node> previous = x;
  const size_t n = ops.size();
  for (size_t k = 0; k < n; ++k) {
    const bool last = k + 1 == n;
    Shape copy = last && !write_chunks ? target_chunks : ops[k].copy;
    for (size_t i = 0; i < copy.size(); ++i) copy[i] = std::min(copy[i], std::max<Index>(1, shape[i]));
    STRATA_ASSIGN_OR_RETURN(ChunkGrid grid, ChunkGrid::Regular(shape, copy));
    std::shared_ptr<const Node> stage = ExchangeNode(
        previous, grid, last ? rechunk->name : fmt::format("{}-stage{}", rechunk->name, k + 1));
    d.notes[stage.get()] = fmt::format("stage {} of {}", k + 1, n);
    if (!last) {
      TierPlacement p;
      p.tier = stage_tier;
      const bool forced = spec.tier == TierChoice::kDisk || spec.tier == TierChoice::kObject;
      p.reason = forced ? fmt::format("{} tier forced: stage {} of {} of rechunk {}",
                                      TierName(stage_tier), k + 1, n, rechunk->name)
                        : fmt::format("stage {} of {} of rechunk {}: multistage on the {} tier",
                                      k + 1, n, rechunk->name, TierName(stage_tier));
      p.stored_grid = SplitGrid(shape, copy, ops[k].store);
      d.placed[stage.get()] = std::move(p);
    }
    steps.push_back(fmt::format("{} -> {}", ShapeToString(copy), ShapeToString(ops[k].store)));
    previous = std::move(stage);
  }
  d.replaced[rechunk.get()] = previous;
  if (store) {
    // The store's tasks take the last stage's blocks, each writing the
    // target chunks it covers.
    Node regridded = *store->node;
    regridded.grid = previous->grid;
    regridded.inputs = {previous};
    regridded.maps = {InputMap::IdentityMap(previous->grid.grid_shape())};
    d.replaced[store->node.get()] = MakeNode(std::move(regridded));
  }
  d.decisions.push_back(fmt::format("{}: {}; max_mem {}, min_mem {}; copies {}", what, why,
                                    FormatBytes(max_mem), FormatBytes(min_mem),
                                    fmt::join(steps, ", ")));
  return Status::Ok();
}

}  // namespace

Status LowerRechunks(PlanDraft& d) {
  STRATA_RETURN_IF_ERROR(SplitShards(d));
  // What the intermediates take together (the spill tier gets half): every
  // rechunk's input, and every op with tasks that other ops read and that
  // fusion cannot fold away.
  int64_t intermediate = 0;
  std::vector<int> readers(d.ops.size(), 0);
  for (const PlannedOp& op : d.ops) {
    for (size_t i = 0; i < op.node->inputs.size(); ++i) ++readers[d.InputOf(op, i)];
  }
  for (const PlannedOp& op : d.ops) {
    if (op.node->kind == NodeKind::kRechunk) {
      intermediate += d.ops[d.InputOf(op, 0)].node->nbytes();
    } else if (op.materialized && readers[op.index] > 1) {
      intermediate += op.node->nbytes();
    }
  }
  d.ledger = CapacityLedger::For(d.spec, d.result_bytes, intermediate);
  bool lowered = false;
  for (size_t i = 0; i < d.ops.size(); ++i) {
    if (d.ops[i].node->kind != NodeKind::kRechunk) continue;
    STRATA_RETURN_IF_ERROR(LowerOne(d, d.ops[i].node));
    lowered = true;
  }
  if (lowered) STRATA_RETURN_IF_ERROR(Collect(d));
  return Status::Ok();
}

}  // namespace strata::internal_plan
