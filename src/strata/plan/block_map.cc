#include "strata/plan/block_map.h"

#include <algorithm>
#include <numeric>

namespace strata {

bool BlockList::Contains(Index k) const {
  if (!stored_) return k >= first_ && k < first_ + count_;
  return std::find(values_.begin(), values_.end(), k) != values_.end();
}

std::shared_ptr<const AxisMap::Csr> AxisMap::Invert(const Csr& forward, Index num_input_blocks) {
  auto inverse = std::make_shared<Csr>();
  std::vector<Index> counts(num_input_blocks + 1, 0);
  const Index rows = static_cast<Index>(forward.offsets.size()) - 1;
  for (Index v : forward.values) ++counts[v + 1];
  std::partial_sum(counts.begin(), counts.end(), counts.begin());
  inverse->offsets = counts;
  inverse->values.resize(forward.values.size());
  std::vector<Index> fill(counts.begin(), counts.end() - 1);
  for (Index r = 0; r < rows; ++r) {
    for (Index v : forward.Row(r)) inverse->values[fill[v]++] = r;
  }
  return inverse;
}

void AxisMap::ComputeBounds(Index num_output_blocks) {
  num_output_blocks_ = num_output_blocks;
  if (kind_ == Kind::kFixed) {
    min_inputs_ = max_inputs_ = static_cast<Index>(InputsFor(0).size());
    return;
  }
  if (num_output_blocks == 0) {
    min_inputs_ = max_inputs_ = 0;
    return;
  }
  Index lo = INT64_MAX, hi = 0;
  auto visit = [&](Index j) {
    const Index n = static_cast<Index>(InputsFor(j).size());
    lo = std::min(lo, n);
    hi = std::max(hi, n);
  };
  switch (form_) {
    case Form::kIdentity:
      lo = hi = 1;
      break;
    case Form::kRegular: {
      // The pattern of overlaps repeats every lcm(out, in) elements; the
      // last (ragged) block is visited on its own.
      const Index period = std::lcm(out_chunk_, in_chunk_) / out_chunk_;
      constexpr Index kMaxVisited = 1 << 20;
      if (period <= kMaxVisited) {
        for (Index j = 0; j < std::min(period, num_output_blocks); ++j) visit(j);
        visit(num_output_blocks - 1);
      } else {
        // A bound: a window of out_chunk elements meets at most this many.
        hi = (out_chunk_ + in_chunk_ - 2) / in_chunk_ + 1;
        lo = 1;
        visit(num_output_blocks - 1);
      }
      break;
    }
    case Form::kTable:
    case Form::kRange:
      for (Index j = 0; j < num_output_blocks; ++j) visit(j);
      break;
  }
  min_inputs_ = lo;
  max_inputs_ = hi;
}

AxisMap AxisMap::Identity(int out_axis, Index n) {
  AxisMap m;
  m.kind_ = Kind::kMapped;
  m.form_ = Form::kIdentity;
  m.out_axis_ = out_axis;
  m.num_input_blocks_ = n;
  m.ComputeBounds(n);
  return m;
}

AxisMap AxisMap::Grouped(int out_axis, Index group, Index num_input_blocks) {
  STRATA_CHECK(group >= 1 && num_input_blocks >= 0);
  if (group == 1) return Identity(out_axis, num_input_blocks);
  // Regular output chunks of `group` elements over input chunks of one,
  // where an element is an input block.
  AxisMap m;
  m.kind_ = Kind::kMapped;
  m.form_ = Form::kRegular;
  m.out_axis_ = out_axis;
  m.num_input_blocks_ = num_input_blocks;
  m.out_chunk_ = group;
  m.in_chunk_ = 1;
  m.extent_ = num_input_blocks;
  m.ComputeBounds((num_input_blocks + group - 1) / group);
  return m;
}

AxisMap AxisMap::Table(int out_axis, const std::vector<std::vector<Index>>& table,
                       Index num_input_blocks) {
  auto csr = std::make_shared<Csr>();
  csr->offsets.reserve(table.size() + 1);
  csr->offsets.push_back(0);
  for (const auto& row : table) {
    for (Index v : row) {
      STRATA_CHECK(v >= 0 && v < num_input_blocks) << "input block " << v << " out of range";
      csr->values.push_back(v);
    }
    csr->offsets.push_back(static_cast<Index>(csr->values.size()));
  }
  AxisMap m;
  m.kind_ = Kind::kMapped;
  m.form_ = Form::kTable;
  m.out_axis_ = out_axis;
  m.num_input_blocks_ = num_input_blocks;
  m.inverse_ = Invert(*csr, num_input_blocks);
  m.forward_ = std::move(csr);
  m.ComputeBounds(static_cast<Index>(table.size()));
  return m;
}

AxisMap AxisMap::Fixed(std::vector<Index> blocks, Index num_input_blocks) {
  auto csr = std::make_shared<Csr>();
  csr->offsets = {0, static_cast<Index>(blocks.size())};
  csr->values = std::move(blocks);
  AxisMap m;
  m.kind_ = Kind::kFixed;
  m.form_ = Form::kTable;
  m.num_input_blocks_ = num_input_blocks;
  m.forward_ = std::move(csr);
  m.ComputeBounds(1);
  return m;
}

AxisMap AxisMap::All(Index num_input_blocks) {
  AxisMap m;
  m.kind_ = Kind::kFixed;
  m.form_ = Form::kRange;
  m.num_input_blocks_ = num_input_blocks;
  m.ComputeBounds(1);
  return m;
}

AxisMap AxisMap::Overlap(int out_axis, const ChunkGrid& out_grid, const ChunkGrid& in_grid,
                         int in_axis) {
  const Index n_out = out_grid.grid_shape()[out_axis];
  if (out_grid.is_regular() && in_grid.is_regular()) {
    const Index out_chunk = out_grid.chunk_shape()[out_axis];
    const Index in_chunk = in_grid.chunk_shape()[in_axis];
    if (out_chunk == in_chunk) return Identity(out_axis, n_out);
    AxisMap m;
    m.kind_ = Kind::kMapped;
    m.form_ = Form::kRegular;
    m.out_axis_ = out_axis;
    m.num_input_blocks_ = in_grid.grid_shape()[in_axis];
    m.out_chunk_ = std::max<Index>(1, out_chunk);
    m.in_chunk_ = std::max<Index>(1, in_chunk);
    m.extent_ = out_grid.shape()[out_axis];
    m.ComputeBounds(n_out);
    return m;
  }
  std::vector<std::vector<Index>> table(n_out);
  for (Index j = 0; j < n_out; ++j) {
    Index begin = out_grid.block_origin(out_axis, j);
    Index end = begin + out_grid.block_size(out_axis, j);
    auto [first, last] = in_grid.BlocksIntersecting(in_axis, begin, end);
    for (Index k = first; k < last; ++k) table[j].push_back(k);
  }
  return Table(out_axis, table, in_grid.grid_shape()[in_axis]);
}

BlockList AxisMap::InputsFor(Index j) const {
  switch (form_) {
    case Form::kIdentity:
      return BlockList::Range(j, 1);
    case Form::kRegular: {
      const Index begin = j * out_chunk_;
      const Index end = std::min(begin + out_chunk_, extent_);
      if (end <= begin) return BlockList();
      const Index first = begin / in_chunk_;
      return BlockList::Range(first, (end - 1) / in_chunk_ - first + 1);
    }
    case Form::kRange:
      return BlockList::Range(0, num_input_blocks_);
    case Form::kTable:
      break;
  }
  return BlockList::Of(forward_->Row(kind_ == Kind::kFixed ? 0 : j));
}

BlockList AxisMap::ConsumersOf(Index k) const {
  STRATA_DCHECK(kind_ == Kind::kMapped);
  switch (form_) {
    case Form::kIdentity:
      return BlockList::Range(k, 1);
    case Form::kRegular: {
      const Index begin = k * in_chunk_;
      const Index end = std::min(begin + in_chunk_, extent_);
      if (end <= begin) return BlockList();
      const Index first = begin / out_chunk_;
      return BlockList::Range(first, (end - 1) / out_chunk_ - first + 1);
    }
    case Form::kRange:
    case Form::kTable:
      break;
  }
  return BlockList::Of(inverse_->Row(k));
}

bool AxisMap::IsRead(Index k) const { return InputsFor(0).Contains(k); }

AxisMap AxisMap::WithOutAxis(int out_axis) const {
  STRATA_DCHECK(kind_ == Kind::kMapped);
  AxisMap m = *this;
  m.out_axis_ = out_axis;
  return m;
}

bool AxisMap::SameAs(const AxisMap& other) const {
  if (kind_ != other.kind_ || num_input_blocks_ != other.num_input_blocks_) return false;
  auto same_lists = [](const BlockList& x, const BlockList& y) {
    if (x.size() != y.size()) return false;
    for (size_t i = 0; i < x.size(); ++i) {
      if (x[i] != y[i]) return false;
    }
    return true;
  };
  if (kind_ == Kind::kFixed) return same_lists(InputsFor(0), other.InputsFor(0));
  if (out_axis_ != other.out_axis_ || num_output_blocks_ != other.num_output_blocks_) {
    return false;
  }
  if (form_ == Form::kIdentity && other.form_ == Form::kIdentity) return true;
  if (form_ == Form::kRegular && other.form_ == Form::kRegular) {
    return out_chunk_ == other.out_chunk_ && in_chunk_ == other.in_chunk_ &&
           extent_ == other.extent_;
  }
  for (Index j = 0; j < num_output_blocks_; ++j) {
    if (!same_lists(InputsFor(j), other.InputsFor(j))) return false;
  }
  return true;
}

bool SameMap(const InputMap& a, const InputMap& b) {
  if (a.axes.size() != b.axes.size()) return false;
  for (size_t i = 0; i < a.axes.size(); ++i) {
    if (!a.axes[i].SameAs(b.axes[i])) return false;
  }
  return true;
}

InputMap InputMap::IdentityMap(std::span<const Index> grid_shape) {
  InputMap m;
  for (size_t i = 0; i < grid_shape.size(); ++i) {
    m.axes.push_back(AxisMap::Identity(static_cast<int>(i), grid_shape[i]));
  }
  return m;
}

namespace {

// Odometer over per-axis lists.
void ForEachProduct(const std::vector<BlockList>& lists,
                    const std::function<void(std::span<const Index>)>& fn) {
  const size_t rank = lists.size();
  for (const auto& l : lists) {
    if (l.empty()) return;
  }
  std::vector<size_t> pos(rank, 0);
  Shape current(rank);
  for (size_t i = 0; i < rank; ++i) current[i] = lists[i][0];
  while (true) {
    fn(current);
    size_t i = rank;
    while (i > 0) {
      --i;
      if (++pos[i] < lists[i].size()) {
        current[i] = lists[i][pos[i]];
        break;
      }
      pos[i] = 0;
      current[i] = lists[i][0];
      if (i == 0) return;
    }
    if (rank == 0) return;
  }
}

BlockList ListFor(const AxisMap& a, std::span<const Index> out_block) {
  return a.InputsFor(a.kind() == AxisMap::Kind::kFixed ? 0 : out_block[a.out_axis()]);
}

}  // namespace

void ForEachInputBlock(const InputMap& map, std::span<const Index> out_block,
                       const std::function<void(std::span<const Index>)>& fn) {
  std::vector<BlockList> lists;
  lists.reserve(map.axes.size());
  for (const AxisMap& a : map.axes) lists.push_back(ListFor(a, out_block));
  ForEachProduct(lists, fn);
}

Index CountInputBlocks(const InputMap& map, std::span<const Index> out_block) {
  Index n = 1;
  for (const AxisMap& a : map.axes) n *= static_cast<Index>(ListFor(a, out_block).size());
  return n;
}

Shape InputPartShape(const InputMap& map, const ChunkGrid& in_grid, std::span<const Index> part) {
  Shape shape(in_grid.rank());
  for (int i = 0; i < in_grid.rank(); ++i) {
    const AxisMap& a = map.axes[i];
    shape[i] = a.kind() == AxisMap::Kind::kFixed ? in_grid.chunk_shape()[i] : part[a.out_axis()];
  }
  return shape;
}

namespace {

// Per output axis, the output blocks that read `in_block`; false when none
// does. `storage` holds the lists that are intersections of two.
bool ConsumerLists(const InputMap& map, std::span<const Index> in_block,
                   std::span<const Index> out_grid_shape,
                   std::vector<std::vector<Index>>& storage, std::vector<BlockList>& lists) {
  const size_t out_rank = out_grid_shape.size();
  storage.assign(out_rank, {});
  std::vector<bool> constrained(out_rank, false);
  lists.assign(out_rank, {});
  for (size_t i = 0; i < map.axes.size(); ++i) {
    const AxisMap& a = map.axes[i];
    if (a.kind() == AxisMap::Kind::kFixed) {
      if (!a.IsRead(in_block[i])) return false;
      continue;
    }
    BlockList consumers = a.ConsumersOf(in_block[i]);
    const int o = a.out_axis();
    if (!constrained[o]) {
      lists[o] = consumers;
      constrained[o] = true;
    } else {
      // Two input axes driven by one output axis: both must agree.
      std::vector<Index> both;
      std::set_intersection(lists[o].begin(), lists[o].end(), consumers.begin(),
                            consumers.end(), std::back_inserter(both));
      storage[o] = std::move(both);
      lists[o] = BlockList::Of(storage[o]);
    }
  }
  for (size_t o = 0; o < out_rank; ++o) {
    if (!constrained[o]) lists[o] = BlockList::Range(0, out_grid_shape[o]);
  }
  return true;
}

}  // namespace

void ForEachConsumer(const InputMap& map, std::span<const Index> in_block,
                     std::span<const Index> out_grid_shape,
                     const std::function<void(std::span<const Index>)>& fn) {
  std::vector<std::vector<Index>> storage;
  std::vector<BlockList> lists;
  if (!ConsumerLists(map, in_block, out_grid_shape, storage, lists)) return;
  ForEachProduct(lists, fn);
}

Index CountConsumers(const InputMap& map, std::span<const Index> in_block,
                     std::span<const Index> out_grid_shape) {
  std::vector<std::vector<Index>> storage;
  std::vector<BlockList> lists;
  if (!ConsumerLists(map, in_block, out_grid_shape, storage, lists)) return 0;
  Index n = 1;
  for (const auto& l : lists) n *= static_cast<Index>(l.size());
  return n;
}

InputMap Compose(const InputMap& outer, const InputMap& inner,
                 std::span<const Index> out_grid_shape) {
  // For each producer-input axis, follow inner (to an intermediate axis) and
  // then outer (to a consumer output axis), uniting the block lists.
  InputMap out;
  for (const AxisMap& a : inner.axes) {
    if (a.kind() == AxisMap::Kind::kFixed) {
      out.axes.push_back(a);
      continue;
    }
    const int mid_axis = a.out_axis();
    const AxisMap& b = outer.axes[mid_axis];
    // Identities compose without tables (elementwise chains, the common
    // case, stay arithmetic however many blocks they have).
    if (b.kind() == AxisMap::Kind::kMapped && b.is_identity()) {
      out.axes.push_back(a.WithOutAxis(b.out_axis()));
      continue;
    }
    if (a.is_identity()) {
      out.axes.push_back(b);
      continue;
    }
    const Index n_in = a.num_input_blocks();
    // Groups of groups are groups: j reads mids [j * gb, (j + 1) * gb), each
    // of which reads inputs [m * ga, (m + 1) * ga), so j reads inputs
    // [j * gb * ga, (j + 1) * gb * ga) (reduction rounds fused together).
    if (const std::optional<Index> ga = a.group(), gb = b.group();
        ga && gb && b.num_input_blocks() == a.num_output_blocks()) {
      out.axes.push_back(AxisMap::Grouped(b.out_axis(), *ga * *gb, n_in));
      continue;
    }
    auto unite = [&](BlockList mids) {
      std::vector<Index> blocks;
      for (Index m : mids) {
        for (Index k : a.InputsFor(m)) blocks.push_back(k);
      }
      std::sort(blocks.begin(), blocks.end());
      blocks.erase(std::unique(blocks.begin(), blocks.end()), blocks.end());
      return blocks;
    };
    if (b.kind() == AxisMap::Kind::kFixed) {
      out.axes.push_back(AxisMap::Fixed(unite(b.InputsFor(0)), n_in));
      continue;
    }
    const Index n_out = out_grid_shape[b.out_axis()];
    std::vector<std::vector<Index>> table(n_out);
    for (Index j = 0; j < n_out; ++j) table[j] = unite(b.InputsFor(j));
    out.axes.push_back(AxisMap::Table(b.out_axis(), table, n_in));
  }
  return out;
}

}  // namespace strata
