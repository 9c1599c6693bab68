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

// Bytes of a task holding one block of `chunks` at `item` bytes an element.
std::function<int64_t(const Shape&)> BlockBytes(int64_t item) {
  return [item](const Shape& c) {
    int64_t n = item;
    for (Index v : c) n *= v;
    return n;
  };
}

TEST(FitChunksToBudgetTest, BudgetThatFitsEverythingKeepsTheChunks) {
  const ChunkFit fit = FitChunksToBudget({100, 30}, {}, BlockBytes(8), 24000);
  EXPECT_EQ(fit.chunks, (Shape{100, 30}));
  EXPECT_EQ(fit.task_bytes, 24000);
  EXPECT_TRUE(fit.fits);
}

TEST(FitChunksToBudgetTest, HalvesTheWidestWhenSavingsTie) {
  // 8 x 4 elements of 1 byte: halving 8 or 4 saves 16 either way; the widest
  // goes first, then the two are 4 x 4 and the first goes.
  const ChunkFit fit = FitChunksToBudget({8, 4}, {}, BlockBytes(1), 8);
  EXPECT_EQ(fit.chunks, (Shape{2, 4}));
  EXPECT_EQ(fit.task_bytes, 8);
  EXPECT_TRUE(fit.fits);
}

TEST(FitChunksToBudgetTest, HalvesTheAxisThatSavesMost) {
  // Axis 1 costs 200 bytes a unit, axis 0 one byte: halving axis 1 (8 -> 4)
  // saves 800 where halving the wider axis 0 saves 500.
  auto bytes = [](const Shape& c) { return c[0] + 200 * c[1]; };
  const ChunkFit fit = FitChunksToBudget({1000, 8}, {}, bytes, 1800);
  EXPECT_EQ(fit.chunks, (Shape{1000, 4}));
  EXPECT_EQ(fit.task_bytes, 1800);
  EXPECT_TRUE(fit.fits);
}

TEST(FitChunksToBudgetTest, OddChunksRoundUp) {
  const ChunkFit fit = FitChunksToBudget({7}, {}, BlockBytes(1), 4);
  EXPECT_EQ(fit.chunks, (Shape{4}));
  EXPECT_TRUE(fit.fits);
}

TEST(FitChunksToBudgetTest, BudgetSmallerThanOneElementStopsAtSingleElements) {
  const ChunkFit fit = FitChunksToBudget({16, 5}, {}, BlockBytes(8), 7);
  EXPECT_EQ(fit.chunks, (Shape{1, 1}));
  EXPECT_EQ(fit.task_bytes, 8);
  EXPECT_FALSE(fit.fits);
}

TEST(FitChunksToBudgetTest, MinimumsHoldAxesWhole) {
  // Axis 1 must stay whole (a sort's axis): only axis 0 shrinks.
  const Shape min = {1, 50};
  const ChunkFit fit = FitChunksToBudget({64, 50}, min, BlockBytes(4), 1000);
  EXPECT_EQ(fit.chunks, (Shape{4, 50}));
  EXPECT_EQ(fit.task_bytes, 800);
  EXPECT_TRUE(fit.fits);
  // A minimum that does not fit is kept, and said not to fit.
  const ChunkFit over = FitChunksToBudget({64, 50}, min, BlockBytes(4), 100);
  EXPECT_EQ(over.chunks, (Shape{1, 50}));
  EXPECT_FALSE(over.fits);
}

TEST(FitChunksToBudgetTest, ZeroLengthAxesAreLeftAlone) {
  // A 0-length axis holds no element: any budget fits, nothing is halved.
  const ChunkFit empty = FitChunksToBudget({0, 1000}, {}, BlockBytes(8), 0);
  EXPECT_EQ(empty.chunks, (Shape{0, 1000}));
  EXPECT_TRUE(empty.fits);
  // A fixed cost beside it: the 0-length axis is never halved (0 is below
  // every minimum), the others are.
  auto bytes = [](const Shape& c) { return 10 + c[0] * c[1] + c[1]; };
  const ChunkFit fit = FitChunksToBudget({0, 64}, {}, bytes, 20);
  EXPECT_EQ(fit.chunks, (Shape{0, 8}));
  EXPECT_TRUE(fit.fits);
  // No axis at all: the task is what it is.
  const ChunkFit rank0 = FitChunksToBudget({}, {}, BlockBytes(8), 4);
  EXPECT_TRUE(rank0.chunks.empty());
  EXPECT_EQ(rank0.task_bytes, 8);
  EXPECT_FALSE(rank0.fits);
}

}  // namespace
}  // namespace strata
