#include "strata/plan/block_map.h"

#include <gtest/gtest.h>

#include <vector>

namespace strata {
namespace {

// The table a tree-reduction round of `group` over `n` blocks reads.
std::vector<std::vector<Index>> GroupTable(Index group, Index n) {
  std::vector<std::vector<Index>> table((n + group - 1) / group);
  for (Index k = 0; k < n; ++k) table[k / group].push_back(k);
  return table;
}

std::vector<Index> List(const BlockList& l) { return {l.begin(), l.end()}; }

TEST(AxisMapTest, GroupedListsWhatItsTableLists) {
  for (Index n : {1, 2, 9, 10, 11, 100}) {
    for (Index group : {2, 3, 4, 10, 200}) {
      const AxisMap grouped = AxisMap::Grouped(0, group, n);
      const AxisMap table = AxisMap::Table(0, GroupTable(group, n), n);
      ASSERT_EQ(grouped.num_output_blocks(), table.num_output_blocks()) << n << " " << group;
      for (Index j = 0; j < grouped.num_output_blocks(); ++j) {
        EXPECT_EQ(List(grouped.InputsFor(j)), List(table.InputsFor(j))) << n << " " << group;
      }
      for (Index k = 0; k < n; ++k) {
        EXPECT_EQ(List(grouped.ConsumersOf(k)), List(table.ConsumersOf(k))) << n << " " << group;
      }
      EXPECT_EQ(grouped.min_inputs(), table.min_inputs()) << n << " " << group;
      EXPECT_EQ(grouped.max_inputs(), table.max_inputs()) << n << " " << group;
      EXPECT_TRUE(grouped.SameAs(table)) << n << " " << group;
      EXPECT_EQ(grouped.group(), std::optional<Index>(group)) << n << " " << group;
    }
  }
}

TEST(AxisMapTest, GroupedOfOneIsIdentity) {
  EXPECT_TRUE(AxisMap::Grouped(0, 1, 7).is_identity());
}

TEST(AxisMapTest, GroupsOfGroupsComposeToAGroup) {
  // Two reduction rounds fused: the second (3 per group) over the first's
  // output (4 per group) of 50 blocks, against the same composed from tables.
  const Index n = 50, g1 = 4, g2 = 3;
  const Index mids = (n + g1 - 1) / g1;
  const Index outs = (mids + g2 - 1) / g2;
  const std::vector<Index> out_grid = {outs};
  const InputMap composed = Compose(InputMap{{AxisMap::Grouped(0, g2, mids)}},
                                    InputMap{{AxisMap::Grouped(0, g1, n)}}, out_grid);
  const InputMap from_tables =
      Compose(InputMap{{AxisMap::Table(0, GroupTable(g2, mids), mids)}},
              InputMap{{AxisMap::Table(0, GroupTable(g1, n), n)}}, out_grid);
  ASSERT_EQ(composed.axes.size(), 1u);
  EXPECT_EQ(composed.axes[0].group(), std::optional<Index>(g1 * g2));
  EXPECT_TRUE(SameMap(composed, from_tables));
  EXPECT_EQ(List(composed.axes[0].InputsFor(outs - 1)), (std::vector<Index>{48, 49}));
}

TEST(AxisMapTest, RegularOverlapOfWiderChunksIsNoGroup) {
  // Chunks of 2 elements over chunks of 3: not a grouping of whole blocks.
  const AxisMap m = AxisMap::Overlap(0, *ChunkGrid::Regular({12}, {2}), *ChunkGrid::Regular({12}, {3}), 0);
  EXPECT_EQ(m.group(), std::nullopt);
}

}  // namespace
}  // namespace strata
