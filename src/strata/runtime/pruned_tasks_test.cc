// Which tasks a resumed run prunes: through several ops and through sibling
// groups (the Scheduler's side is in scheduler_test.cc).
#include "strata/runtime/pruned_tasks.h"

#include <gtest/gtest.h>

#include <set>

#include "strata/plan/plan_test_util.h"

namespace strata {
namespace {

using testing_util::ElementwiseNode;
using testing_util::PlanOf;
using testing_util::PlanSpec;
using testing_util::SourceNode;
using testing_util::StoreNode;

// u*u, v*v and u*v, each stored: the three products are one sibling group
// (one task per block computes all three). A group's task is pruned only
// when the blocks of all three are done; a group with one member still
// needed runs whole, and its sources are read.
TEST(PrunedTasksTest, ASiblingGroupIsPrunedOnlyWhenEveryMemberIsDone) {
  auto u = SourceNode({40, 100}, {10, 100}, DTypeId::kFloat64);
  auto v = SourceNode({40, 100}, {10, 100}, DTypeId::kFloat64);
  auto uu = ElementwiseNode({u, u}, "multiply");
  auto vv = ElementwiseNode({v, v}, "multiply");
  auto uv = ElementwiseNode({u, v}, "multiply");
  std::vector<std::shared_ptr<const Node>> stores = {StoreNode(uu), StoreNode(vv), StoreNode(uv)};
  PlanOptions options;
  options.disabled_passes.insert("fuse");  // keep the products apart from their stores
  auto plan = PlanOf(stores, PlanSpec(64 << 20), options);
  ASSERT_TRUE(plan);
  const PlannedOp* leader = plan->Find(uv.get());
  ASSERT_NE(leader, nullptr);
  ASSERT_EQ(leader->siblings.size(), 2u) << plan->ToText();
  std::set<int> store_ops;
  for (const auto& s : stores) store_ops.insert(plan->IndexOf(s.get()));
  // Block 0 is done in every target; block 1 in the uu and vv targets only.
  const int uv_store = plan->IndexOf(stores[2].get());
  auto pruned = PrunedTasks::Compute(*plan, [&](const PlannedOp& op, std::span<const Index> b) {
    EXPECT_TRUE(store_ops.count(op.index)) << "asked about " << op.node->name;
    return b[0] == 0 || (b[0] == 1 && op.index != uv_store);
  });
  ASSERT_TRUE(pruned);
  EXPECT_TRUE(pruned->pruned(leader->index, 0));
  EXPECT_FALSE(pruned->pruned(leader->index, 1)) << "u*v's block 1 is still needed";
  EXPECT_FALSE(pruned->pruned(leader->index, 2));
  EXPECT_EQ(pruned->count(leader->index), 1);
  for (const auto& s : stores) {
    const int op = plan->IndexOf(s.get());
    EXPECT_TRUE(pruned->pruned(op, 0));
    EXPECT_EQ(pruned->pruned(op, 1), op != uv_store);
    EXPECT_FALSE(pruned->pruned(op, 3));
  }
  // Members run no tasks of their own: nothing is counted for them.
  for (int s : leader->siblings) EXPECT_EQ(pruned->count(s), 0);
  EXPECT_EQ(pruned->total(), 1 + 3 + 2);
}

// A result of compute() is never pruned, nor what it reads, whatever the
// caller says of its blocks.
TEST(PrunedTasksTest, AResultIsNeverPruned) {
  auto u = SourceNode({40, 100}, {10, 100}, DTypeId::kFloat64);
  auto uu = ElementwiseNode({u, u}, "multiply");
  auto plan = PlanOf({uu}, PlanSpec(64 << 20));
  ASSERT_TRUE(plan);
  EXPECT_FALSE(PrunedTasks::Compute(*plan, [](const PlannedOp&, std::span<const Index>) {
    return true;
  }));
}

// A consumer that reads blocks 1 and 2 (of 4) of an elementwise op, as a
// pointwise selection does: on a fresh run (no target resumed) the
// elementwise op's blocks 0 and 3 are pruned, and nothing else.
TEST(PrunedTasksTest, AFreshRunPrunesTheBlocksNoReaderReads) {
  auto u = SourceNode({40, 100}, {10, 100}, DTypeId::kFloat64);
  auto uu = ElementwiseNode({u, u}, "multiply");
  Node pick;
  pick.op_name = "pick";
  pick.kind = NodeKind::kBlockwise;
  pick.shape = {20, 100};
  pick.dtype = uu->dtype;
  pick.grid = *ChunkGrid::Regular(pick.shape, {10, 100});
  pick.inputs = {uu};
  pick.maps = {InputMap{{AxisMap::Table(0, {{1}, {2}}, 4), AxisMap::Identity(1, 1)}}};
  pick.fn = testing_util::NotRunHere();
  auto picked = MakeNode(std::move(pick));
  PlanOptions options;
  options.disabled_passes.insert("fuse");  // the product materialized, as before a gather
  auto plan = PlanOf({StoreNode(picked)}, PlanSpec(64 << 20), options);
  ASSERT_TRUE(plan);
  const PlannedOp* product = plan->Find(uu.get());
  ASSERT_NE(product, nullptr);
  ASSERT_TRUE(product->runs_tasks()) << plan->ToText();
  auto pruned = PrunedTasks::ForRun(*plan);
  ASSERT_TRUE(pruned);
  EXPECT_TRUE(pruned->pruned(product->index, 0));
  EXPECT_FALSE(pruned->pruned(product->index, 1));
  EXPECT_FALSE(pruned->pruned(product->index, 2));
  EXPECT_TRUE(pruned->pruned(product->index, 3));
  EXPECT_EQ(pruned->total(), 2);
  // Every block read: the per-axis check finds nothing to prune.
  auto whole = PlanOf({StoreNode(ElementwiseNode({uu}, "negative"))}, PlanSpec(64 << 20), options);
  ASSERT_TRUE(whole);
  EXPECT_FALSE(PrunedTasks::ForRun(*whole));
}

}  // namespace
}  // namespace strata
