// Key functions: which input blocks an output block reads, and the inverse.
//
// Every op Strata builds (elementwise with broadcasting, reductions, matmul,
// rechunk, slicing, take, concat, transposes, group-by) is *separable*: along
// each axis of an input, the input blocks it reads depend on one output axis
// only. So a key function is one AxisMap per input axis, and
//   - the input blocks of output block b are a Cartesian product of per-axis
//     lists (ForEachInputBlock),
//   - the consumers of input block k are a Cartesian product too
//     (ForEachConsumer),
// which lets the scheduler find a task's inputs and a chunk's readers on demand
// for plans of millions of tasks, with no edge lists. Identity maps and
// overlaps of regular grids are arithmetic: a map over 10^9 blocks along an
// axis costs as little as one over ten.
//
// Thread-safety: immutable after construction; share freely.
#ifndef STRATA_PLAN_BLOCK_MAP_H_
#define STRATA_PLAN_BLOCK_MAP_H_

#include <cstddef>
#include <functional>
#include <iterator>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "strata/core/box.h"
#include "strata/core/chunk_grid.h"

namespace strata {

// Block indices along one axis: a contiguous range (identity and regular
// overlap maps compute it, storing nothing) or a view of a stored list.
// A stored view is kept alive by the AxisMap it came from.
class BlockList {
 public:
  BlockList() = default;
  static BlockList Range(Index first, Index count) {
    BlockList l;
    l.first_ = first;
    l.count_ = count;
    return l;
  }
  static BlockList Of(std::span<const Index> values) {
    BlockList l;
    l.values_ = values;
    l.count_ = static_cast<Index>(values.size());
    l.stored_ = true;
    return l;
  }
  size_t size() const { return static_cast<size_t>(count_); }
  bool empty() const { return count_ == 0; }
  Index operator[](size_t i) const { return stored_ ? values_[i] : first_ + static_cast<Index>(i); }
  Index front() const { return (*this)[0]; }
  Index back() const { return (*this)[size() - 1]; }
  bool Contains(Index k) const;

  class iterator {
   public:
    using value_type = Index;
    using difference_type = std::ptrdiff_t;
    using iterator_category = std::input_iterator_tag;
    using pointer = const Index*;
    using reference = Index;
    iterator() = default;
    iterator(const BlockList* list, size_t i) : list_(list), i_(i) {}
    Index operator*() const { return (*list_)[i_]; }
    iterator& operator++() {
      ++i_;
      return *this;
    }
    iterator operator++(int) {
      iterator t = *this;
      ++i_;
      return t;
    }
    friend bool operator==(const iterator& a, const iterator& b) { return a.i_ == b.i_; }

   private:
    const BlockList* list_ = nullptr;
    size_t i_ = 0;
  };
  iterator begin() const { return iterator(this, 0); }
  iterator end() const { return iterator(this, size()); }

 private:
  Index first_ = 0;
  Index count_ = 0;
  std::span<const Index> values_;
  bool stored_ = false;
};

class AxisMap {
 public:
  enum class Kind : uint8_t {
    kMapped,  // the input blocks depend on the output block along out_axis()
    kFixed,   // the same input blocks for every output block
  };

  // Input block j for output block j along `out_axis` (n blocks on both sides).
  static AxisMap Identity(int out_axis, Index n);
  // table[j] lists the input blocks output block j (along out_axis) reads;
  // the input has `num_input_blocks` blocks along this axis.
  static AxisMap Table(int out_axis, const std::vector<std::vector<Index>>& table,
                       Index num_input_blocks);
  // Output block j reads input blocks [j * group, min((j + 1) * group,
  // num_input_blocks)): a tree reduction's round. Arithmetic, stores nothing
  // (a table of it held ~40 bytes per input block).
  static AxisMap Grouped(int out_axis, Index group, Index num_input_blocks);
  // The same `blocks` for every output block (a broadcast axis: {0}).
  static AxisMap Fixed(std::vector<Index> blocks, Index num_input_blocks);
  // Every one of `num_input_blocks` blocks (a contraction over this axis).
  static AxisMap All(Index num_input_blocks);
  // The blocks of `in_grid` along `in_axis` that intersect each block of
  // `out_grid` along `out_axis` (same extent): rechunk. Between regular
  // grids this is arithmetic and stores nothing.
  static AxisMap Overlap(int out_axis, const ChunkGrid& out_grid, const ChunkGrid& in_grid,
                         int in_axis);

  Kind kind() const { return kind_; }
  int out_axis() const { return out_axis_; }
  Index num_input_blocks() const { return num_input_blocks_; }
  // The fewest and the most input blocks one output block reads.
  Index min_inputs() const { return min_inputs_; }
  Index max_inputs() const { return max_inputs_; }
  // True for Identity (and compositions of identities).
  bool is_identity() const { return form_ == Form::kIdentity; }
  // kMapped: the number of output blocks along out_axis.
  Index num_output_blocks() const { return num_output_blocks_; }
  // The group size when output block j reads input blocks [j * g, (j + 1) * g)
  // (Grouped, or a regular overlap over chunks of one element); nullopt
  // otherwise.
  std::optional<Index> group() const {
    if (form_ == Form::kRegular && in_chunk_ == 1 && extent_ == num_input_blocks_) {
      return out_chunk_;
    }
    return std::nullopt;
  }

  // Input blocks read for output block `j` along out_axis (any j for kFixed).
  BlockList InputsFor(Index j) const;
  // kMapped: output blocks along out_axis that read input block `k`.
  BlockList ConsumersOf(Index k) const;
  // kFixed: whether input block `k` is read (by every output block).
  bool IsRead(Index k) const;
  // The same map driven by output axis `out_axis` instead (kMapped only).
  AxisMap WithOutAxis(int out_axis) const;
  // True when both list the same input blocks for every output block (the
  // same key function, however each is stored).
  bool SameAs(const AxisMap& other) const;

 private:
  // Compressed rows: row r is values[offsets[r] .. offsets[r + 1]).
  struct Csr {
    std::vector<Index> offsets;
    std::vector<Index> values;
    std::span<const Index> Row(Index r) const {
      return {values.data() + offsets[r], static_cast<size_t>(offsets[r + 1] - offsets[r])};
    }
  };
  // How the lists are found.
  enum class Form : uint8_t {
    kIdentity,  // j -> {j}
    kRegular,   // regular out chunks of out_chunk_ over in chunks of in_chunk_
    kRange,     // kFixed: blocks [0, num_input_blocks)
    kTable,     // stored rows
  };
  static std::shared_ptr<const Csr> Invert(const Csr& forward, Index num_input_blocks);
  void ComputeBounds(Index num_output_blocks);

  Kind kind_ = Kind::kMapped;
  Form form_ = Form::kTable;
  int out_axis_ = -1;
  Index num_input_blocks_ = 0;
  Index num_output_blocks_ = 0;  // kMapped
  Index out_chunk_ = 1, in_chunk_ = 1, extent_ = 0;  // kRegular
  Index min_inputs_ = 0, max_inputs_ = 0;
  std::shared_ptr<const Csr> forward_;  // kTable (kFixed: one row)
  std::shared_ptr<const Csr> inverse_;  // kTable, kMapped only
};

// The key function of one op input: one AxisMap per input axis.
struct InputMap {
  std::vector<AxisMap> axes;

  // Elementwise over equal grids: identity on every axis.
  static InputMap IdentityMap(std::span<const Index> grid_shape);
};

// True when `a` and `b` list the same input blocks for every output block.
bool SameMap(const InputMap& a, const InputMap& b);

// Calls fn(input_block) for every input block output block `out_block`
// reads, in C order over the per-axis lists.
void ForEachInputBlock(const InputMap& map, std::span<const Index> out_block,
                       const std::function<void(std::span<const Index>)>& fn);
Index CountInputBlocks(const InputMap& map, std::span<const Index> out_block);

// The most a region of shape `part` of an elementwise op's output block
// reads of an input block through `map` (identity or fixed axes, as a
// streamed chain's): `part` on mapped axes, the input's nominal block on
// fixed ones.
Shape InputPartShape(const InputMap& map, const ChunkGrid& in_grid, std::span<const Index> part);

// Calls fn(out_block) for every output block (of a grid with `out_grid_shape`
// blocks) that reads input block `in_block`.
void ForEachConsumer(const InputMap& map, std::span<const Index> in_block,
                     std::span<const Index> out_grid_shape,
                     const std::function<void(std::span<const Index>)>& fn);
Index CountConsumers(const InputMap& map, std::span<const Index> in_block,
                     std::span<const Index> out_grid_shape);

// The key function of a fused pair: `outer` maps the consumer's output blocks
// to blocks of an intermediate array, `inner` maps that array's blocks to the
// producer's input blocks; the result maps consumer output blocks straight to
// producer inputs.
// `out_grid_shape` is the consumer's output grid.
InputMap Compose(const InputMap& outer, const InputMap& inner,
                 std::span<const Index> out_grid_shape);

}  // namespace strata

#endif  // STRATA_PLAN_BLOCK_MAP_H_
