#include "strata/plan/block_map.h"

#include <algorithm>
#include <numeric>

namespace strata {

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

AxisMap AxisMap::Identity(int out_axis, Index n) {
  auto csr = std::make_shared<Csr>();
  csr->offsets.resize(n + 1);
  std::iota(csr->offsets.begin(), csr->offsets.end(), Index{0});
  csr->values.resize(n);
  std::iota(csr->values.begin(), csr->values.end(), Index{0});
  AxisMap m;
  m.kind_ = Kind::kMapped;
  m.out_axis_ = out_axis;
  m.num_input_blocks_ = n;
  m.forward_ = csr;
  m.inverse_ = csr;  // the identity is its own inverse
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
  m.out_axis_ = out_axis;
  m.num_input_blocks_ = num_input_blocks;
  m.inverse_ = Invert(*csr, num_input_blocks);
  m.forward_ = std::move(csr);
  return m;
}

AxisMap AxisMap::Fixed(std::vector<Index> blocks, Index num_input_blocks) {
  auto csr = std::make_shared<Csr>();
  csr->offsets = {0, static_cast<Index>(blocks.size())};
  csr->values = std::move(blocks);
  AxisMap m;
  m.kind_ = Kind::kFixed;
  m.num_input_blocks_ = num_input_blocks;
  m.forward_ = std::move(csr);
  return m;
}

AxisMap AxisMap::All(Index num_input_blocks) {
  std::vector<Index> all(num_input_blocks);
  std::iota(all.begin(), all.end(), Index{0});
  return Fixed(std::move(all), num_input_blocks);
}

AxisMap AxisMap::Overlap(int out_axis, const ChunkGrid& out_grid, const ChunkGrid& in_grid,
                         int in_axis) {
  const Index n_out = out_grid.grid_shape()[out_axis];
  std::vector<std::vector<Index>> table(n_out);
  for (Index j = 0; j < n_out; ++j) {
    Index begin = out_grid.block_origin(out_axis, j);
    Index end = begin + out_grid.block_size(out_axis, j);
    auto [first, last] = in_grid.BlocksIntersecting(in_axis, begin, end);
    for (Index k = first; k < last; ++k) table[j].push_back(k);
  }
  return Table(out_axis, table, in_grid.grid_shape()[in_axis]);
}

std::span<const Index> AxisMap::InputsFor(Index j) const {
  return forward_->Row(kind_ == Kind::kFixed ? 0 : j);
}

std::span<const Index> AxisMap::ConsumersOf(Index k) const {
  STRATA_DCHECK(kind_ == Kind::kMapped);
  return inverse_->Row(k);
}

bool AxisMap::IsRead(Index k) const {
  const auto& v = forward_->values;
  return std::find(v.begin(), v.end(), k) != v.end();
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
void ForEachProduct(const std::vector<std::span<const Index>>& lists,
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

}  // namespace

void ForEachInputBlock(const InputMap& map, std::span<const Index> out_block,
                       const std::function<void(std::span<const Index>)>& fn) {
  std::vector<std::span<const Index>> lists;
  lists.reserve(map.axes.size());
  for (const AxisMap& a : map.axes) {
    lists.push_back(a.InputsFor(a.kind() == AxisMap::Kind::kFixed ? 0 : out_block[a.out_axis()]));
  }
  ForEachProduct(lists, fn);
}

Index CountInputBlocks(const InputMap& map, std::span<const Index> out_block) {
  Index n = 1;
  for (const AxisMap& a : map.axes) {
    n *= static_cast<Index>(
        a.InputsFor(a.kind() == AxisMap::Kind::kFixed ? 0 : out_block[a.out_axis()]).size());
  }
  return n;
}

namespace {

// Per output axis, the output blocks that read `in_block` (nullopt-like empty
// vector plus flag for "every block").
bool ConsumerLists(const InputMap& map, std::span<const Index> in_block,
                   std::span<const Index> out_grid_shape,
                   std::vector<std::vector<Index>>& storage,
                   std::vector<std::span<const Index>>& lists) {
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
    std::span<const Index> consumers = a.ConsumersOf(in_block[i]);
    int o = a.out_axis();
    if (!constrained[o]) {
      storage[o].assign(consumers.begin(), consumers.end());
      constrained[o] = true;
    } else {
      // Two input axes driven by one output axis: both must agree.
      std::vector<Index> both;
      std::set_intersection(storage[o].begin(), storage[o].end(), consumers.begin(),
                            consumers.end(), std::back_inserter(both));
      storage[o] = std::move(both);
    }
  }
  for (size_t o = 0; o < out_rank; ++o) {
    if (!constrained[o]) {
      storage[o].resize(out_grid_shape[o]);
      std::iota(storage[o].begin(), storage[o].end(), Index{0});
    }
    lists[o] = storage[o];
  }
  return true;
}

}  // namespace

void ForEachConsumer(const InputMap& map, std::span<const Index> in_block,
                     std::span<const Index> out_grid_shape,
                     const std::function<void(std::span<const Index>)>& fn) {
  std::vector<std::vector<Index>> storage;
  std::vector<std::span<const Index>> lists;
  if (!ConsumerLists(map, in_block, out_grid_shape, storage, lists)) return;
  ForEachProduct(lists, fn);
}

Index CountConsumers(const InputMap& map, std::span<const Index> in_block,
                     std::span<const Index> out_grid_shape) {
  std::vector<std::vector<Index>> storage;
  std::vector<std::span<const Index>> lists;
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
    const Index n_in = a.num_input_blocks();
    auto unite = [&](std::span<const Index> mids) {
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
