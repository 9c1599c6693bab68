// Node: one array of a lazy computation and the op that produces it.
//
// Users never see nodes; the API's Array handle wraps one. A node knows its
// shape, dtype and chunk grid, its input nodes, one key function (InputMap) per
// input, and a BlockFunction that computes one output block from the input
// blocks the key function lists. Kinds:
//   kZarrSource    chunks of an existing Zarr array (read by consumer tasks)
//   kMemorySource  an NDArray already in memory (consumers read views)
//   kVirtual       computed from nothing per block (zeros, arange, random):
//                  never stored, recomputed inside each consumer task
//   kBlockwise     computed from input blocks (elementwise, reductions, ...)
//   kRechunk       a rechunk as the API builds it: the target grid and
//                  nothing decided; the planner lowers it (plan/lower_rechunk.cc)
//                  into exchanges, or regenerates a virtual input
//   kExchange      a lowered rechunk stage: each output block gathers the
//                  pieces of the input blocks it overlaps; nothing is fused
//                  into it (it is where data moves)
//   kStore         writes its one input's blocks to a Zarr array
//
// Thread-safety: immutable once built; shared as std::shared_ptr<const Node>.
#ifndef STRATA_PLAN_NODE_H_
#define STRATA_PLAN_NODE_H_

#include <atomic>
#include <functional>
#include <limits>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "strata/base/status.h"
#include "strata/core/chunk_grid.h"
#include "strata/core/memory_pool.h"
#include "strata/core/ndarray.h"
#include "strata/plan/block_map.h"
#include "strata/plan/spec.h"
#include "strata/storage/zarr/metadata.h"
#include "strata/storage/zarr/zarr_target.h"

namespace strata {

class ZarrArray;

// One input block as a BlockFunction sees it.
struct InputBlock {
  Shape block;          // coordinates in the input's grid
  Box box;              // its region of the input array
  ConstArrayView view;  // its elements; shape == box.shape
};

// Everything a BlockFunction needs to compute one output block.
struct BlockRequest {
  std::span<const Index> block;  // output block coordinates
  Box box;                       // its region of the output array
  // inputs[i]: the blocks of node input i that the key function lists, in
  // ForEachInputBlock order.
  std::vector<std::vector<InputBlock>> inputs;
  // Allocate every buffer here: it is the task's pool, so memory is measured.
  MemoryPool* pool = nullptr;
  // Set only for nodes with `streams_input` whose input 0 is a fused
  // elementwise chain: then inputs[0][0].view is empty and this computes any
  // region of that input block (in block coordinates) into `out`, without
  // materialising the whole block.
  std::function<Status(const Box& region, const ArrayView& out)> compute_region;
  // Set for nodes with `partial_inputs`: reads `region` (array coordinates,
  // inside the box of input block `block` of node input `input`) into `out`
  // (from the pool above), from where the block lives: a Zarr chunk's stored
  // bytes holding the region, a tier's region, a fused chain computed for it.
  std::function<Status(size_t input, const InputBlock& block, const Box& region,
                       const ArrayView& out)>
      read_part;
};

// Combines one reduction state (a block of the state array) into a fresh
// one whose reduced axes have extent 1, allocating from `pool`: the running
// state a fold starts from, as the reduction's Combine starts.
using FoldFunction = std::function<Result<NDArray>(const ConstArrayView& state, MemoryPool& pool)>;
// Merges one more state into `acc` (a FoldFunction's result), in place: the
// same bytes as combining them all at once.
using MergeFunction = std::function<void(const ConstArrayView& state, const ArrayView& acc)>;

// Folds the values of one piece of a partial reduction's input block
// (`piece` in block coordinates, `origin` its place in the array) into the
// block's state `state`: pieces come in order along Node::stream_part_strip's
// axis, and `first` says the piece is in the first strip (its part of the
// state is fresh).
using StripFoldFunction = std::function<void(const ConstArrayView& values,
                                             std::span<const Index> origin, const Box& piece,
                                             bool first, const ArrayView& state)>;

// Computes an elementwise op on views already broadcast to `out`'s shape.
using RegionFunction =
    std::function<Status(std::span<const ConstArrayView> inputs, const ArrayView& out)>;
// Fills any box (in array coordinates) of a virtual array.
using FillFunction = std::function<Status(const Box& box, const ArrayView& out)>;

// Returns the output block (shape == request.box.shape, dtype == the node's).
using BlockFunction = std::function<Result<NDArray>(const BlockRequest&)>;

enum class NodeKind {
  kZarrSource,
  kMemorySource,
  kVirtual,
  kBlockwise,
  kRechunk,
  kExchange,
  kStore
};

std::string_view NodeKindName(NodeKind kind);

struct Node {
  int64_t id = 0;
  std::string name;     // "array-007"
  std::string op_name;  // "add", "sum-partial", "rechunk", "from_zarr"
  NodeKind kind = NodeKind::kBlockwise;
  Shape shape;
  DType dtype;
  ChunkGrid grid;
  std::vector<std::shared_ptr<const Node>> inputs;
  std::vector<InputMap> maps;  // one per input
  BlockFunction fn;            // kVirtual, kBlockwise, kExchange
  // Elementwise nodes (identity or broadcast maps only): the same op on any
  // region, so a streaming consumer can compute them strip by strip.
  RegionFunction region_fn;
  // Virtual nodes: the values of any region.
  FillFunction virtual_fill;
  // A consumer that can take input 0 strip by strip (partial reductions),
  // and the most elements one strip of its input holds.
  bool streams_input = false;
  int64_t stream_strip_elements = 0;
  // The strip of a nominal input block (along its outermost axis longer
  // than 1, whole on the others) the consumer folds in with fold_strip when
  // the input's leaves are Zarr chunks that read such a strip in runs: the
  // runtime then computes the input strip by strip, every leaf read a strip
  // at a time, and never calls fn (TaskRunner::FoldStrips). Empty: none.
  Shape stream_part_strip;
  // The pieces of such a strip its chain is computed and folded in (about
  // Tuning::stream_strip_bytes, along the first kept axis longer than 1):
  // the leaves' strips are read whole, the chain's values are cache-sized.
  Shape stream_part_piece;
  StripFoldFunction fold_strip;
  // A reduction's combine round: its blocks are the fold of its input
  // blocks. When those are computed in the same task (partials, or combine
  // rounds fused into it), the runtime folds the fused tree's leaves one at
  // a time instead of holding them all (TaskRunner::FoldGroup).
  FoldFunction fold_states;
  MergeFunction merge_state;
  // kRechunk: the smallest stored chunk worth a stage (-1: the planner's
  // default, max_mem / 20).
  int64_t rechunk_min_mem = -1;
  // Never computed inside its consumer's tasks: several consumer tasks read
  // each of its blocks, and fusing would repeat the reads of its inputs (a
  // pointwise selection's sorted points, read back in the caller's order).
  bool keep_materialized = false;
  // Scratch memory a task of this op needs beyond its inputs and output.
  int64_t extra_mem = 0;
  // One flag per input (empty: none). A flagged input's blocks are not
  // obtained for a task: its InputBlocks have empty views and the op reads
  // the parts it needs through BlockRequest::read_part (diff's one row of
  // the next block), so a task never decodes or holds such a block whole
  // where it can read a part (an unsharded Zarr source, a tier, a streamable
  // chain). The op allocates what it reads into from the task's pool and
  // counts it in extra_mem.
  std::vector<bool> partial_inputs;
  bool partial_input(size_t i) const { return i < partial_inputs.size() && partial_inputs[i]; }
  // Non-empty: this op's function can run only in the calling process (it
  // calls back into the caller's Python interpreter, say), so the planner
  // refuses it on the processes and mpi executors, giving this reason.
  std::string calling_process_only;
  // kZarrSource: the array read.
  std::shared_ptr<ZarrArray> zarr;
  // kStore: the array written.
  std::shared_ptr<ZarrTarget> target;
  // kMemorySource: the data.
  std::shared_ptr<const NDArray> data;
  std::shared_ptr<const Spec> spec;

  // Bytes of the largest block.
  int64_t max_block_bytes() const { return grid.max_block_elements() * dtype.size(); }
  int64_t nbytes() const {  // saturating, as Array::nbytes
    int64_t n;
    return __builtin_mul_overflow(NumElements(shape), int64_t{dtype.size()}, &n)
               ? std::numeric_limits<int64_t>::max()
               : n;
  }
  int64_t num_blocks() const { return grid.num_blocks(); }
};

// A fresh, process-unique node id and its name ("array-007").
int64_t NextNodeId();
std::string NodeName(int64_t id);

// Builds a node, filling id and (unless given) name; CHECKs that maps match
// inputs.
std::shared_ptr<const Node> MakeNode(Node node);

// A logical rechunk of `input` to `grid` (same shape); `min_mem` as
// Node::rechunk_min_mem.
std::shared_ptr<const Node> MakeRechunk(const std::shared_ptr<const Node>& input, ChunkGrid grid,
                                        int64_t min_mem = -1);

}  // namespace strata

#endif  // STRATA_PLAN_NODE_H_
