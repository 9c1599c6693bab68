// The memory model on its own: the copy budget of each tier, rechunker's
// max_mem and min_mem, and the projection of the task shapes the planner
// produces, each against the formula of shared/DESIGN.md worked by hand.
#include "strata/plan/memory_model.h"

#include <gtest/gtest.h>

#include "strata/plan/plan_test_util.h"

namespace strata {
namespace {

using testing_util::ElementwiseNode;
using testing_util::PlanOf;
using testing_util::PlanSpec;
using testing_util::RechunkNode;
using testing_util::SourceNode;
using testing_util::StoreNode;
using testing_util::VirtualNode;

constexpr int64_t kMB = 1'000'000;

TEST(MemoryModelTest, TierCopiesAddTheObjectStoresStaging) {
  const CopyCosts ends{1, 1};
  EXPECT_EQ(TierCopies(Tier::kDisk, ends).read, 1);
  EXPECT_EQ(TierCopies(Tier::kDisk, ends).write, 1);
  EXPECT_EQ(TierCopies(Tier::kMemory, {0, 1}).read, 0);
  EXPECT_EQ(TierCopies(Tier::kObject, ends).read, 2);
  EXPECT_EQ(TierCopies(Tier::kObject, ends).write, 2);
}

TEST(MemoryModelTest, RechunkMaxMemSplitsTheTaskBudgetAsCubedDoes) {
  // Cubed: (allowed - reserved) / (1 + read + 1 + 1 + write).
  ResolvedSpec spec = PlanSpec(2'500'000'000, TierChoice::kDisk, /*reserved=*/0);
  EXPECT_EQ(RechunkMaxMem(spec, {1, 1}), 500 * kMB);
  spec.allowed_mem = 3'500'000'000;
  EXPECT_EQ(RechunkMaxMem(spec, TierCopies(Tier::kObject, {1, 1})), 500 * kMB);
  spec.reserved_mem = 100 * kMB;
  spec.allowed_mem = 400 * kMB;
  EXPECT_EQ(RechunkMaxMem(spec, {0, 0}), 100 * kMB);
  EXPECT_EQ(DefaultRechunkMinMem(500 * kMB, int64_t{1} << 40), 25 * kMB);
  EXPECT_EQ(DefaultRechunkMinMem(500 * kMB, 1000), 1000) << "never more than the array";
}

// Publishing a compressed source: the decoded chunk and one encoded copy.
// Its exchange then holds only its output block (slices come from RAM).
TEST(MemoryModelTest, ExchangeThroughRamHoldsOnlyItsOutput) {
  const int64_t reserved = 1 * kMB;
  auto plan = PlanOf({RechunkNode(SourceNode({100, 100}, {10, 100}, DTypeId::kFloat64), {100, 10})},
                     PlanSpec(64 * kMB, TierChoice::kMemory, reserved));
  ASSERT_TRUE(plan);
  bool saw_source = false, saw_exchange = false;
  for (const PlannedOp& op : plan->ops()) {
    if (op.node->kind == NodeKind::kZarrSource) {
      saw_source = true;
      ASSERT_TRUE(op.materialized);
      EXPECT_EQ(op.projected_mem, reserved + 2 * 8000);
      EXPECT_EQ(ProjectTaskMemory(*plan, op.index), op.projected_mem);
    }
    if (op.node->kind == NodeKind::kExchange) {
      saw_exchange = true;
      EXPECT_EQ(op.projected_mem, reserved + 8000);
    }
  }
  EXPECT_TRUE(saw_source && saw_exchange) << plan->ToText();
}

// A multistage first stage reads the source in place: its output block plus
// one source chunk staged (decoded and encoded) at a time.
TEST(MemoryModelTest, StageReadingTheSourceInPlaceStagesOneChunk) {
  const int64_t reserved = 1 * kMB;
  auto plan =
      PlanOf({RechunkNode(SourceNode({100, 100}, {10, 100}, DTypeId::kFloat64, false), {100, 10})},
             PlanSpec(64 * kMB, TierChoice::kDisk, reserved));
  ASSERT_TRUE(plan);
  const PlannedOp* first = nullptr;
  for (const PlannedOp& op : plan->ops()) {
    if (op.node->kind == NodeKind::kExchange && !first) first = &op;
    if (op.node->kind == NodeKind::kZarrSource) {
      EXPECT_FALSE(op.materialized) << "read in place";
    }
  }
  ASSERT_NE(first, nullptr) << plan->ToText();
  // Uncompressed: the chunk is decoded straight into its buffer (no copy).
  EXPECT_EQ(first->projected_mem, reserved + first->node->max_block_bytes() + 8000);
}

// A fused elementwise chain: both inputs' blocks gathered and held, then the
// output beside them.
TEST(MemoryModelTest, FusedChainHoldsItsInputsAndOutput) {
  const int64_t reserved = 1 * kMB;
  auto a = SourceNode({100, 100}, {10, 100}, DTypeId::kFloat64, false);
  auto b = SourceNode({100, 100}, {10, 100}, DTypeId::kFloat64, false);
  auto sum = ElementwiseNode({a, b}, "add", /*extra_mem=*/500);
  auto plan = PlanOf({StoreNode(sum)}, PlanSpec(64 * kMB, TierChoice::kAuto, reserved));
  ASSERT_TRUE(plan);
  const PlannedOp* store = plan->Find(plan->ops().back().node.get());
  ASSERT_EQ(store->node->kind, NodeKind::kStore);
  ASSERT_EQ(store->fused_names.size(), 1u) << plan->ToText();
  // a, b (8000 each, no copies), extra 500, the sum 8000; the target's
  // blosc encoding one chunk beside it.
  EXPECT_EQ(store->projected_mem, reserved + 8000 + 8000 + 500 + 8000 + 8000);
}

// Reading the object tier stages at most one stored object per request.
TEST(MemoryModelTest, ObjectTierReadsStageOneStoredChunk) {
  const int64_t reserved = 1 * kMB;
  auto plan =
      PlanOf({RechunkNode(SourceNode({1000, 1000}, {1000, 10}, DTypeId::kFloat64, false), {10, 1000})},
             PlanSpec(2 * kMB, TierChoice::kObject, reserved));
  ASSERT_TRUE(plan);
  int reading = 0;
  for (const PlannedOp& op : plan->ops()) {
    if (op.node->kind != NodeKind::kExchange || op.dependencies.empty()) continue;
    const PlannedOp& in = plan->ops()[op.dependencies[0].producer];
    ASSERT_EQ(in.tier, Tier::kObject);
    const int64_t stored =
        (in.stored_grid ? in.stored_grid->max_block_elements() : in.node->grid.max_block_elements()) *
        8;
    // And, storing its own block as several objects, one of them staged.
    const int64_t put = op.tier == Tier::kObject && op.stored_grid
                            ? op.stored_grid->max_block_elements() * 8
                            : 0;
    EXPECT_EQ(op.projected_mem, reserved + op.node->max_block_bytes() + stored + put)
        << plan->ToText();
    ++reading;
  }
  EXPECT_GE(reading, 2) << plan->ToText();
}

// A virtual array is computed inside each reader's task: no tier, its block
// in the reader's projection.
TEST(MemoryModelTest, VirtualInputsAreComputedInTheReader) {
  const int64_t reserved = 1 * kMB;
  auto v = VirtualNode({100, 100}, {10, 100});
  auto twice = ElementwiseNode({v, v}, "add");
  auto plan = PlanOf({twice}, PlanSpec(64 * kMB, TierChoice::kAuto, reserved));
  ASSERT_TRUE(plan);
  const PlannedOp* op = plan->Find(twice.get());
  ASSERT_NE(op, nullptr);
  EXPECT_EQ(op->tier, Tier::kNone);
  EXPECT_EQ(op->projected_mem, reserved + 8000 + 8000 + 8000);
}

}  // namespace
}  // namespace strata
