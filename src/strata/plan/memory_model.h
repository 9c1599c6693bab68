// The memory model: what one task of an op needs, projected before anything
// runs (shared/DESIGN.md, "Memory contract"):
//
//   projected = reserved_mem + sum over inputs of chunk_bytes x (1 + read_copies)
//             + extra_op_mem + output_chunk_bytes x (1 + write_copies)
//
// computed recursively through the ops fused into a task: inputs are
// gathered one after another and held until the op runs; a fused input holds
// only its output once computed; a streamed elementwise chain (a partial
// reduction over `u * v`) holds its leaves' blocks and one strip per level; an
// exchange gathers slices straight into its output, staging one input block
// at a time when it computes its input itself (a Zarr source read in place)
// or reads the object tier (one ranged GET at a time).
//
// read_copies / write_copies are what the storage path costs (CopyCosts): a
// codec decoding straight into the destination costs 0, a compressed chunk 1;
// the object tier stages a block per request on both sides.
//
// The same model sizes a multistage rechunk: each stage's blocks may take
// max_mem = (allowed_mem - reserved_mem) / (3 + read_copies + write_copies)
// (rechunker's split of the task budget, as Cubed uses it), and stages whose
// stored chunks are smaller than min_mem (max_mem / 20 unless given) are not
// worth their IO.
//
// An op that sizes its own chunks at build time (tensordot's operands, a
// sort's blocks, an indexing op's input blocks per task, a batch of LAPACK
// matrices) fits them to the task budget with FitChunksToBudget: the one rule
// for halving chunks until a task fits, fed the op's per-task bytes as this
// model projects the op's node.
//
// Thread-safety: MemoryModel reads the ops it is given; use it while they
// live and do not change.
#ifndef STRATA_PLAN_MEMORY_MODEL_H_
#define STRATA_PLAN_MEMORY_MODEL_H_

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <unordered_map>

#include "strata/plan/planner.h"
#include "strata/plan/spec.h"

namespace strata {

// Copies a storage path makes besides the decoded block.
struct CopyCosts {
  int read = 0;
  int write = 0;
};

// What reading and writing blocks through `tier` costs, on top of what the
// codecs of the arrays at either end cost (`ends`). The object tier stages a
// block per ranged GET and per PUT body, as Cubed counts cloud storage (its
// BufferCopies 2/2 where local files cost 1/1).
CopyCosts TierCopies(Tier tier, CopyCosts ends);

// The bytes a multistage rechunk's blocks may take: the task budget split
// between the input read, the array processed and the output written, each
// with its copies.
int64_t RechunkMaxMem(const ResolvedSpec& spec, CopyCosts copies);
// The smallest stored chunk worth a stage: max_mem / 20, or the whole array
// when smaller (Cubed's default).
int64_t DefaultRechunkMinMem(int64_t max_mem, int64_t nbytes);

// Chunks fitted to the task budget (FitChunksToBudget).
struct ChunkFit {
  Shape chunks;
  int64_t task_bytes = 0;  // task_bytes(chunks)
  bool fits = false;       // task_bytes <= task_budget
};

// Halves `chunks` until a task of the op fits `task_budget`
// (ResolvedSpec::task_budget()). `task_bytes(c)` is one task's memory with
// chunks (or, per axis, whatever count sizes the op's blocks) `c`, reserved_mem
// excluded, as the memory model projects the op. While a task does not fit,
// the axis whose halving (rounded up, never below min_chunks[d]; 1 when
// min_chunks is empty) lowers task_bytes most is halved, the widest on a tie,
// then the first. An axis at or below its minimum (a 0-length one, an axis
// that must stay whole) is left as it is. When every axis is at its minimum
// and a task still does not fit, `fits` is false and the op reports it (or
// the plan check does).
ChunkFit FitChunksToBudget(Shape chunks, std::span<const Index> min_chunks,
                           const std::function<int64_t(const Shape&)>& task_bytes,
                           int64_t task_budget);

// What reading one block of `node` in a task takes at its peak, as the model
// counts a leaf: a Zarr source's chunk decoded beside its codec's copies
// (and a padded full chunk at ragged edges); any other node's block, the
// block. An op sizing its tasks before the plan knows what is fused adds its
// own margin for an input computed in the task.
int64_t LeafReadBytes(const Node& node);

// What one task of a rechunk to `target` that reads the Zarr source
// `source` in place needs, reserved_mem excluded: its output block (with
// `write_copies` more when a store encodes it) and the parts of the source
// chunks it reads, one at a time, as MemoryModel stages an exchange's input:
// the scratch of decoding a part's runs, or the chunk decoded whole beside
// its encoded bytes where a part may be read through it.
int64_t InPlaceRechunkBytes(const Node& source, const ChunkGrid& target, int write_copies);

// The op computing a node (itself, or what the planner put in its place).
using OpLookup = std::function<const PlannedOp&(const Node&)>;

// True when `op`'s node is computed where it is read (a region function or
// a virtual array) rather than materialized: its readers obtain regions of it.
bool Streamable(const PlannedOp& op);

// Reading Zarr leaves a strip at a time, as the runtime (TaskRunner::
// FoldStrips) does and the model projects; both decide with these.
//
// True when every leaf of `node` (a streamable chain or a leaf itself)
// reads a region of `part`'s shape in runs (a Zarr source:
// ZarrArray::StripReadScratch) or costs nothing to slice (a memory or
// virtual array); `zarr` is set when one is a Zarr source.
bool ReadsInParts(const Node& node, const Shape& part, const OpLookup& op_of, bool* zarr);
// True when `node` folds its input in Node::stream_part_strip strips with
// every Zarr leaf read a strip at a time.
bool StreamsParts(const Node& node, const OpLookup& op_of);
// True when a sibling group's `members` fold their inputs' strips in
// lockstep: each StreamsParts, the same strip of inputs on one grid.
bool StripsTogether(std::span<const Node* const> members, const OpLookup& op_of);

// True when `node` is a reduction's combine round whose input blocks are
// computed in the task reading them (a fused partial or combine round):
// TaskRunner::FoldGroup then folds the fused tree's leaves one at a time,
// and MemoryModel projects that.
bool FoldsInTask(const Node& node, const OpLookup& op_of);

// Per-task memory of the ops of a plan (or a draft of one).
class MemoryModel {
 public:
  // `index` maps every node (aliases included) to its op in `ops`.
  MemoryModel(std::span<const PlannedOp> ops, const std::unordered_map<const Node*, int>& index,
              int64_t reserved_mem);

  // Peak and held bytes of obtaining one block of `node` inside a task of op
  // `root` (the materialized op whose task runs).
  struct Cost {
    int64_t peak = 0;
    int64_t held = 0;
  };
  Cost Obtain(const Node& node, int root) const;
  // The projection of one task of materialized op `index`. For the leader of
  // a sibling group: every member's block, the input blocks the members read
  // (each read once and held for the whole task), and the largest member's
  // own working memory (see ProjectGroup).
  int64_t Project(int index) const;

 private:
  // A sibling group's task computes its members one after another, reading
  // each leaf block (a Zarr source's chunk, a tiered producer's block) once
  // and holding it until the task ends, and holding every member's output:
  //   reserved + sum of leaf blocks held + the largest leaf's decode scratch
  //   + max over members (its peak with leaves already held + the other
  //     members' outputs)
  int64_t ProjectGroup(const PlannedOp& leader) const;
  // A task whose members (the op, then its siblings) each FoldsInTask, with
  // trees of one shape, folds leaf j of every member before leaf j + 1
  // (TaskRunner::FoldGroup): per member and level of its tree, a running
  // state and an input state; the leaf blocks' sources, held until every
  // member has read them; one member's leaf computed at a time. Nullopt when
  // the members' trees differ (each is then computed whole).
  std::optional<int64_t> ProjectFold(std::span<const int> members) const;
  // The leaves a task of `root` reads while computing `node` (Zarr sources
  // and blocks fetched from tiers), with the most blocks of each it reads.
  void Leaves(const Node& node, int root, std::unordered_map<const Node*, int64_t>& out,
              int64_t mult) const;
  bool IsLeaf(const PlannedOp& op, int root) const;

  const PlannedOp& OpOf(const Node& node) const { return ops_[index_.at(&node)]; }
  bool StreamableHere(const Node& node) const;
  Cost StreamCost(const Node& node, int root, int64_t strip_elements) const;
  bool StreamsParts(const Node& node) const;
  // The peak of folding `members`' inputs strip by strip (one node that
  // StreamsParts, or a sibling group's that StripsTogether): every member's
  // state, a piece per dtype, each leaf's strip once, and one member's chain
  // at a time.
  int64_t StripsPeak(std::span<const Node* const> members) const;
  // A chain computed a piece of `piece`'s shape at a time for a strip of
  // `part`'s shape, its Zarr leaves read a strip at a time. Each leaf's
  // strip is held once for the whole strip (PartsLeaves, counted by the
  // caller); beyond those, the chain holds a piece per streamed level below
  // the top and, at its peak, the scratch of reading a leaf's strip the
  // first time (`read`: the leaves read already, by this chain or an
  // earlier member's).
  using LeafParts = std::map<std::pair<const Node*, Shape>, int64_t>;
  Cost PartsScratch(const Node& node, const Shape& part, const Shape& piece,
                    LeafParts& read) const;
  // The Zarr leaves of such a chain with the bytes of the part each holds.
  void PartsLeaves(const Node& node, const Shape& part, LeafParts& out) const;
  Cost Gather(const Node& node, int root) const;
  // The peak of one read through BlockRequest::read_part of a block of
  // partial input `in` (beyond the part itself, which the op allocates).
  int64_t PartReadPeak(const Node& in, int root) const;
  // A store task of a sharded target fills one inner chunk at a time: the
  // cost of computing one region of `region_bytes` of its input there.
  int64_t InputRegionPeak(const Node& in, int root, int64_t region_bytes) const;

  std::span<const PlannedOp> ops_;
  const std::unordered_map<const Node*, int>& index_;
  int64_t reserved_;
  // While projecting a sibling group: leaves held already, which cost a
  // member nothing more. Null otherwise.
  mutable const std::unordered_map<const Node*, int64_t>* held_leaves_ = nullptr;
};

// The projection of one task of op `op_index` of `plan`.
int64_t ProjectTaskMemory(const Plan& plan, int op_index);

}  // namespace strata

#endif  // STRATA_PLAN_MEMORY_MODEL_H_
