// The planner's passes: their order and names, switching the optimizer off,
// the lowering of logical rechunks, one capacity ledger behind every tier,
// and the invariants checked after each pass.
#include "strata/plan/planner.h"

#include <gtest/gtest.h>

#include <cstring>

#include "strata/plan/capacity_ledger.h"
#include "strata/plan/memory_model.h"
#include "strata/plan/passes_internal.h"
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

TEST(PlannerTest, PassesRunInOrderAndTheOptimizerCanBeSwitchedOff) {
  auto a = SourceNode({100, 100}, {10, 100}, DTypeId::kFloat64);
  auto out = StoreNode(ElementwiseNode({a, a}));
  auto plan = PlanOf({out}, PlanSpec(64 * kMB));
  ASSERT_TRUE(plan);
  EXPECT_EQ(plan->passes_run(),
            (std::vector<std::string>{"collect", "lower_rechunk", "fuse", "fuse_siblings",
                                      "place_tiers", "project_memory", "check"}));
  PlanOptions no_fuse;
  no_fuse.disabled_passes.insert("fuse");
  auto unfused = PlanOf({out}, PlanSpec(64 * kMB), no_fuse);
  ASSERT_TRUE(unfused);
  EXPECT_EQ(std::count(unfused->passes_run().begin(), unfused->passes_run().end(), "fuse"), 0);
  EXPECT_GT(unfused->total_tasks(), plan->total_tasks());
}

TEST(PlannerTest, UnknownPassIsAnError) {
  PlanOptions options;
  options.disabled_passes.insert("fusion");
  Result<std::shared_ptr<const Plan>> p =
      BuildPlan({VirtualNode({4}, {2})}, PlanSpec(64 * kMB), options);
  EXPECT_EQ(p.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(p.status().message().find("unknown optimizer pass 'fusion'"), std::string_view::npos);
}

TEST(PlannerTest, LogicalRechunkIsLoweredAndFoundAtItsOp) {
  auto x = SourceNode({100, 100}, {10, 100}, DTypeId::kFloat64);
  auto r = RechunkNode(x, {100, 10});
  auto plan = PlanOf({r}, PlanSpec(64 * kMB));
  ASSERT_TRUE(plan);
  for (const PlannedOp& op : plan->ops()) EXPECT_NE(op.node->kind, NodeKind::kRechunk);
  const PlannedOp* op = plan->Find(r.get());
  ASSERT_NE(op, nullptr);
  EXPECT_EQ(op->node->kind, NodeKind::kExchange);
  EXPECT_TRUE(op->is_output);
  EXPECT_EQ(plan->outputs(), std::vector<int>{op->index});
  // A virtual input is regenerated: nothing moves.
  auto v = RechunkNode(VirtualNode({100, 100}, {10, 100}), {100, 10});
  auto regenerated = PlanOf({v}, PlanSpec(64 * kMB));
  ASSERT_TRUE(regenerated);
  EXPECT_EQ(regenerated->Find(v.get())->node->kind, NodeKind::kVirtual);
  EXPECT_EQ(regenerated->Find(v.get())->node->grid.chunk_shape(), (Shape{100, 10}));
}

// The issue this pass order fixes: on a rechunk that goes multistage, no
// intermediate may be placed in the (spilling) memory tier.
TEST(PlannerTest, TiersAgreeWithTheRechunkStrategy) {
  auto x = SourceNode({10000, 10000}, {10000, 1000}, DTypeId::kFloat64);
  auto stored = StoreNode(RechunkNode(x, {1000, 10000}));
  // No RAM left: the stages on disk, nothing in memory.
  auto staged = PlanOf({stored}, PlanSpec(400 * kMB, TierChoice::kAuto, kDefaultReservedMem,
                                          600 * kMB));
  ASSERT_TRUE(staged);
  bool multistage = false;
  for (const std::string& d : staged->decisions()) {
    multistage = multistage || d.find("multistage on disk") != std::string::npos;
  }
  for (const PlannedOp& op : staged->ops()) {
    // Multistage: the stages on disk. One exchange: its source published to
    // disk, as no RAM is left. Either way nothing in memory.
    EXPECT_NE(op.tier, Tier::kMemory) << staged->ToText();
    if (!multistage && op.node.get() == x.get()) {
      EXPECT_EQ(op.tier, Tier::kDisk) << staged->ToText();
    }
  }
  // Plenty of RAM: one exchange, its published source in memory.
  auto in_ram = PlanOf({stored}, PlanSpec(400 * kMB));
  ASSERT_TRUE(in_ram);
  const PlannedOp* source = in_ram->Find(x.get());
  ASSERT_TRUE(source->materialized);
  EXPECT_EQ(source->tier, Tier::kMemory);
  EXPECT_NE(source->tier_reason.find("fits in RAM"), std::string::npos);
}

// A blosc source whose blocks let each target decode only what it needs is
// read in place: no source op, no intermediate, whatever RAM is left; where
// the blocks are as large as the chunks (each target would decode every
// chunk again), or a tier is forced, it is published as before.
TEST(PlannerTest, BloscSourceWithSmallBlocksIsReadInPlace) {
  // The seed case's geometry. Only chunk 0.0 is "stored": the 16-byte header
  // of a blosc frame of 80 MB in blocks of `blocksize` (what the planner
  // reads).
  auto with_blocks = [](int64_t blocksize) {
    auto x = SourceNode({10000, 10000}, {10000, 1000}, DTypeId::kFloat64);
    std::vector<std::byte> header(16);
    const uint32_t fields[] = {80'000'000, static_cast<uint32_t>(blocksize), 80'000'016};
    header[0] = std::byte{2};  // blosc 1.x frame format
    header[1] = std::byte{1};
    header[2] = std::byte{1};  // byte shuffle
    header[3] = std::byte{8};
    std::memcpy(header.data() + 4, fields, sizeof(fields));
    EXPECT_TRUE(x->zarr->store()->Set(x->zarr->ChunkStoreKey(std::vector<Index>{0, 0}), header).ok());
    return x;
  };
  for (int64_t total : {int64_t{16'000'000'000}, 600 * kMB}) {
    auto x = with_blocks(1 << 20);
    auto stored = StoreNode(RechunkNode(x, {1000, 10000}));
    auto plan = PlanOf({stored}, PlanSpec(400 * kMB, TierChoice::kAuto, kDefaultReservedMem, total));
    ASSERT_TRUE(plan);
    const std::string text = plan->ToText();
    EXPECT_NE(text.find("read in place"), std::string::npos) << text;
    EXPECT_NE(text.find("1.13 bytes decoded per byte"), std::string::npos) << text;
    for (const PlannedOp& op : plan->ops()) {
      EXPECT_EQ(op.tier, Tier::kNone) << text;
      if (op.node.get() == x.get()) {
        EXPECT_FALSE(op.materialized) << text;
      }
    }
  }
  // Blocks of a whole chunk: each of the ten targets would decode it all.
  auto whole = PlanOf({StoreNode(RechunkNode(with_blocks(80'000'000), {1000, 10000}))},
                      PlanSpec(400 * kMB));
  ASSERT_TRUE(whole);
  EXPECT_EQ(whole->ToText().find("read in place"), std::string::npos) << whole->ToText();
  EXPECT_NE(whole->ToText().find("fits in"), std::string::npos) << whole->ToText();
  // A budget that holds the output block and its encoding beside the parts
  // being decoded (a few 1 MB blosc blocks), not beside a source chunk
  // decoded whole: read in place, the task projected within it.
  auto parts = PlanOf({StoreNode(RechunkNode(with_blocks(1 << 20), {1000, 10000}))},
                      PlanSpec(200 * kMB));
  ASSERT_TRUE(parts);
  EXPECT_NE(parts->ToText().find("read in place"), std::string::npos) << parts->ToText();
  int64_t most = 0;
  for (int i = 0; i < static_cast<int>(parts->ops().size()); ++i) {
    most = std::max(most, ProjectTaskMemory(*parts, i));
  }
  EXPECT_LE(most, 200 * kMB) << parts->ToText();
  EXPECT_GT(most, 176 * kMB) << "the output block, its encoding and reserved_mem at least";
  // One that holds the output block and its encoding but not the parts'
  // scratch: the source is published, and every task fits.
  auto tight = PlanOf({StoreNode(RechunkNode(with_blocks(1 << 20), {1000, 10000}))},
                      PlanSpec(180 * kMB));
  ASSERT_TRUE(tight);
  EXPECT_EQ(tight->ToText().find("read in place"), std::string::npos) << tight->ToText();
  for (int i = 0; i < static_cast<int>(tight->ops().size()); ++i) {
    EXPECT_LE(ProjectTaskMemory(*tight, i), 180 * kMB) << tight->ToText();
  }
  // A forced tier is obeyed.
  auto forced = PlanOf({StoreNode(RechunkNode(with_blocks(1 << 20), {1000, 10000}))},
                       PlanSpec(400 * kMB, TierChoice::kMemory));
  ASSERT_TRUE(forced);
  EXPECT_EQ(forced->ToText().find("read in place"), std::string::npos) << forced->ToText();
}

TEST(CapacityLedgerTest, CapacityIsWhatWorkersAndResultsLeave) {
  ResolvedSpec spec = PlanSpec(400 * kMB, TierChoice::kAuto, kDefaultReservedMem, 2000 * kMB);
  CapacityLedger ledger = CapacityLedger::For(spec, /*result_bytes=*/100 * kMB, 0);
  EXPECT_EQ(ledger.capacity(), 2000 * kMB - 2 * 400 * kMB - 100 * kMB);
  EXPECT_EQ(ledger.Claim(1000 * kMB), 1000 * kMB);
  EXPECT_EQ(ledger.Claim(500 * kMB), 100 * kMB) << "only what is left";
  EXPECT_EQ(ledger.left(), 0);
  EXPECT_NE(ledger.Formula().find("2 workers x allowed_mem"), std::string::npos);
  spec.tier = TierChoice::kSpill;
  EXPECT_EQ(CapacityLedger::For(spec, 0, 300 * kMB).capacity(), 150 * kMB);
  spec.total_system_mem = 500 * kMB;
  EXPECT_EQ(CapacityLedger::For(spec, 0, 0).capacity(), 0) << "never negative";
}

// The processes executor's coordinator is a process beside the workers: its
// reserved_mem is not in any worker's allowed_mem, so the RAM tier gives it up.
TEST(CapacityLedgerTest, TheProcessesCoordinatorKeepsItsReservedMem) {
  ResolvedSpec spec = PlanSpec(100 * kMB, TierChoice::kAuto, 16 * kMB, 300 * kMB);
  EXPECT_EQ(CapacityLedger::For(spec, 0, 0).capacity(), 100 * kMB);
  spec.executor = ExecutorKind::kProcesses;
  CapacityLedger ledger = CapacityLedger::For(spec, 0, 0);
  EXPECT_EQ(ledger.capacity(), 300 * kMB - 2 * 100 * kMB - 16 * kMB);
  EXPECT_NE(ledger.Formula().find("coordinator's reserved_mem 16.0 MB"), std::string::npos)
      << ledger.Formula();
}

// CheckInvariants finds what a broken pass would leave.
TEST(PlanInvariantsTest, AnOpReadingALaterOpIsCaught) {
  internal_plan::PlanDraft d;
  d.spec = PlanSpec(64 * kMB);
  auto x = VirtualNode({4}, {2});
  auto y = ElementwiseNode({x});
  d.requested = {y};
  ASSERT_TRUE(internal_plan::Collect(d).ok());
  ASSERT_TRUE(internal_plan::CheckInvariants(d, "collect").ok());
  std::swap(d.ops[0], d.ops[1]);  // y before its input
  d.ops[0].index = 0;
  d.ops[1].index = 1;
  d.index[y.get()] = 0;
  d.index[x.get()] = 1;
  Status s = internal_plan::CheckInvariants(d, "fuse");
  EXPECT_EQ(s.code(), StatusCode::kInternal);
  EXPECT_NE(s.message().find("plan check after fuse"), std::string_view::npos) << s.ToString();
}

TEST(PlanInvariantsTest, ARechunkLeftUnloweredIsCaught) {
  internal_plan::PlanDraft d;
  d.spec = PlanSpec(64 * kMB);
  d.requested = {RechunkNode(SourceNode({4}, {2}, DTypeId::kFloat64), {4})};
  ASSERT_TRUE(internal_plan::Collect(d).ok());
  Status s = internal_plan::CheckInvariants(d, "lower_rechunk");
  EXPECT_NE(s.message().find("was not lowered"), std::string_view::npos) << s.ToString();
}


// fuse_siblings: u*u, v*v and u*v each read u or v; one task per block
// computes all three, reading each source block once.
TEST(FuseSiblingsTest, ConsumersOfOneSourceShareTasks) {
  auto u = SourceNode({40, 100}, {10, 100}, DTypeId::kFloat64);
  auto v = SourceNode({40, 100}, {10, 100}, DTypeId::kFloat64);
  auto uu = ElementwiseNode({u, u}, "multiply");
  auto vv = ElementwiseNode({v, v}, "multiply");
  auto uv = ElementwiseNode({u, v}, "multiply");
  auto plan = PlanOf({uu, vv, uv}, PlanSpec(64 * kMB));
  ASSERT_TRUE(plan);
  EXPECT_NE(std::find(plan->passes_run().begin(), plan->passes_run().end(), "fuse_siblings"),
            plan->passes_run().end());
  const PlannedOp* leader = plan->Find(uv.get());
  ASSERT_NE(leader, nullptr);
  EXPECT_TRUE(leader->runs_tasks());
  ASSERT_EQ(leader->siblings.size(), 2u) << plan->ToText();
  for (const std::shared_ptr<const Node>& n : {uu, vv}) {
    const PlannedOp* s = plan->Find(n.get());
    EXPECT_EQ(s->computed_with, leader->index);
    EXPECT_FALSE(s->runs_tasks());
    EXPECT_EQ(s->num_tasks(), 0);
    EXPECT_TRUE(s->is_output);
  }
  EXPECT_EQ(plan->total_tasks(), 4) << "one task per block for all three";
  EXPECT_EQ(leader->source_arrays, 2);
  EXPECT_EQ(leader->input_blocks_per_task, 2) << "u and v once each";
  // The projection counts both sources' blocks (each chunk 8 KB, decoded
  // with one copy of its encoded bytes) and all three outputs.
  const int64_t block = 10 * 100 * 8;
  EXPECT_GE(leader->projected_mem, kDefaultReservedMem + 2 * block + 3 * block);
  EXPECT_LE(leader->projected_mem, kDefaultReservedMem + 2 * 2 * block + 3 * block + block);
  const std::string text = plan->ToText();
  EXPECT_NE(text.find("fused siblings"), std::string::npos) << text;
  EXPECT_NE(text.find("reading " + u->name + ", " + v->name + " once (2 input blocks per task, "
                      "were 6)"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("its tasks also compute siblings"), std::string::npos) << text;
  EXPECT_NE(text.find("computed in the tasks of sibling " + uv->name), std::string::npos) << text;
  EXPECT_NE(plan->ToJson().find("\"computed_with\""), std::string::npos);

  // Switched off, each op runs its own tasks again.
  PlanOptions off;
  off.disabled_passes.insert("fuse_siblings");
  auto apart = PlanOf({uu, vv, uv}, PlanSpec(64 * kMB), off);
  ASSERT_TRUE(apart);
  EXPECT_EQ(apart->total_tasks(), 12);
  for (const PlannedOp& op : apart->ops()) EXPECT_TRUE(op.siblings.empty());
}

TEST(FuseSiblingsTest, GroupStaysWithinAllowedMem) {
  // Blocks of 8 MB: one op's task takes 25 MB (two inputs, its output,
  // reserved), two siblings 33 MB, three 41 MB: over allowed_mem 40 MB.
  auto u = SourceNode({4000, 1000}, {1000, 1000}, DTypeId::kFloat64, /*compressed=*/false);
  auto v = SourceNode({4000, 1000}, {1000, 1000}, DTypeId::kFloat64, /*compressed=*/false);
  auto uu = ElementwiseNode({u, u}, "multiply");
  auto uv = ElementwiseNode({u, v}, "multiply");
  auto vv = ElementwiseNode({v, v}, "multiply");
  auto plan = PlanOf({uu, uv, vv}, PlanSpec(40 * kMB, TierChoice::kAuto, kMB));
  ASSERT_TRUE(plan);
  int leaders = 0;
  for (const PlannedOp& op : plan->ops()) {
    if (!op.siblings.empty()) ++leaders;
    if (op.runs_tasks()) {
      EXPECT_LE(op.projected_mem, 40 * kMB) << plan->ToText();
    }
  }
  EXPECT_EQ(leaders, 1) << plan->ToText();
  const std::string text = plan->ToText();
  EXPECT_NE(text.find("not fused with sibling"), std::string::npos) << text;
  EXPECT_NE(text.find("> allowed_mem"), std::string::npos) << text;
}

TEST(FuseSiblingsTest, OpsThatReadEachOtherOrOtherBlocksStayApart) {
  auto u = SourceNode({40, 100}, {10, 100}, DTypeId::kFloat64);
  auto a = ElementwiseNode({u}, "negative");
  auto b = ElementwiseNode({a, u}, "add");  // reads a: a deeper op
  auto other_grid = SourceNode({40, 100}, {20, 100}, DTypeId::kFloat64);
  auto c = ElementwiseNode({other_grid}, "negative");
  auto plan = PlanOf({a, b, c}, PlanSpec(64 * kMB));
  ASSERT_TRUE(plan);
  for (const PlannedOp& op : plan->ops()) {
    EXPECT_TRUE(op.siblings.empty()) << plan->ToText();
    EXPECT_EQ(op.computed_with, -1);
  }
}

}  // namespace
}  // namespace strata
