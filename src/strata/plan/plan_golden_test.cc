// Golden plans: the text `strata plan` prints for Cubed's ERA5 rechunk and
// for the other cases of Cubed's rechunk planner tests that a Strata plan
// can express, compared with testdata/*.txt. Array names are numbered by
// first appearance, so that the files do not depend on how many arrays the
// test process made before. The key figures (tasks, stage chunks, tiers) are
// also asserted here, so that a golden regenerated with
// STRATA_UPDATE_GOLDEN=1 cannot hide a regression.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cctype>

#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>

#include "strata/plan/plan_test_util.h"
#include "strata/plan/planner.h"

namespace strata {
namespace {

using testing_util::PlanSpec;
using testing_util::RechunkNode;
using testing_util::SourceNode;
using testing_util::StoreNode;

std::shared_ptr<const Node> Source(const Shape& shape, const Shape& chunks, DType dtype) {
  return SourceNode(shape, chunks, dtype);
}
std::shared_ptr<const Node> Rechunk(const std::shared_ptr<const Node>& x, const Shape& chunks,
                                    int64_t min_mem = -1) {
  return RechunkNode(x, chunks, min_mem);
}
std::shared_ptr<const Node> Store(const std::shared_ptr<const Node>& x) { return StoreNode(x); }
ResolvedSpec SpecOf(int64_t allowed, TierChoice tier, int64_t reserved = kDefaultReservedMem) {
  return PlanSpec(allowed, tier, reserved);
}
std::shared_ptr<const Plan> PlanOf(const std::shared_ptr<const Node>& out,
                                   const ResolvedSpec& spec) {
  return testing_util::PlanOf({out}, spec);
}

// Array names ("array-" and three or more digits) numbered by first
// appearance.
std::string Normalize(const std::string& text) {
  std::map<std::string, std::string> seen;
  std::string out;
  size_t at = 0;
  while (true) {
    const size_t found = text.find("array-", at);
    if (found == std::string::npos) break;
    size_t end = found + 6;
    while (end < text.size() && std::isdigit(static_cast<unsigned char>(text[end]))) ++end;
    out += text.substr(at, found - at);
    if (end - found - 6 < 3) {
      out += text.substr(found, end - found);
    } else {
      auto [entry, fresh] = seen.try_emplace(text.substr(found, end - found), "");
      if (fresh) entry->second = fmt::format("array-{:03d}", seen.size());
      out += entry->second;
    }
    at = end;
  }
  return out + text.substr(at);
}

void ExpectGolden(const Plan& plan, const std::string& name) {
  const char* root = std::getenv("STRATA_SOURCE_DIR");
  ASSERT_NE(root, nullptr) << "STRATA_SOURCE_DIR is not set";
  const std::string path = std::string(root) + "/src/strata/plan/testdata/" + name + ".txt";
  const std::string got = Normalize(plan.ToText());
  if (const char* update = std::getenv("STRATA_UPDATE_GOLDEN"); update && *update == '1') {
    std::ofstream(path) << got;
    return;
  }
  std::ifstream in(path);
  ASSERT_TRUE(in.good()) << "no golden " << path << " (STRATA_UPDATE_GOLDEN=1 writes it)";
  std::stringstream want;
  want << in.rdbuf();
  EXPECT_EQ(got, want.str()) << "plan text differs from " << path;
}

int64_t TasksOf(const Plan& plan, NodeKind kind) {
  int64_t n = 0;
  for (const PlannedOp& op : plan.ops()) {
    if (op.node->kind == kind) n += op.num_tasks();
  }
  return n;
}

// The exchanges of a plan, in order: their task chunks.
std::vector<Shape> ExchangeChunks(const Plan& plan) {
  std::vector<Shape> out;
  for (const PlannedOp& op : plan.ops()) {
    if (op.node->kind == NodeKind::kExchange) out.push_back(op.node->grid.chunk_shape());
  }
  return out;
}

const Shape kEra5{350640, 721, 1440};

// Cubed's ERA5 stages (its test_rechunk_era5_chunk_sizes): the copy chunks of
// the first three copy operations.
void ExpectCubedEra5Stages(const Plan& plan) {
  const std::vector<Shape> stages = ExchangeChunks(plan);
  ASSERT_GE(stages.size(), 3u) << plan.ToText();
  EXPECT_EQ(stages[0], (Shape{93, 721, 1440}));
  EXPECT_EQ(stages[1], (Shape{1447, 173, 396}));
  EXPECT_EQ(stages[2], (Shape{22528, 41, 109}));
}

// Cubed's ERA5 case, as `strata plan --shape 350640,721,1440 --source-chunks
// 31,721,1440 --dtype float32 --chunks 350640,10,10 --allowed-mem 2.5GB
// --tier disk` plans it: Cubed's three stages and four copy operations, the
// source read in place, no more tasks than Cubed's 16,167.
TEST(GoldenPlanTest, Era5OnDisk) {
  auto out = Store(Rechunk(Source(kEra5, {31, 721, 1440}, DTypeId::kFloat32), {350640, 10, 10}));
  auto plan = PlanOf(out, SpecOf(2'500'000'000, TierChoice::kDisk));
  ASSERT_TRUE(plan);
  EXPECT_LE(plan->total_tasks(), 16167);
  EXPECT_EQ(TasksOf(*plan, NodeKind::kZarrSource), 0) << "the source is read in place";
  ExpectCubedEra5Stages(*plan);
  for (const PlannedOp& op : plan->ops()) {
    if (op.materialized && !op.consumers.empty()) {
      EXPECT_EQ(op.tier, Tier::kDisk);
    }
    EXPECT_LE(op.projected_mem, 2'500'000'000);
  }
  ExpectGolden(*plan, "era5_disk");
}

// Cubed test_rechunk_era5 with min_mem 0: one stage (two copy operations).
TEST(GoldenPlanTest, Era5OneStageWithMinMemZero) {
  auto out =
      Store(Rechunk(Source(kEra5, {31, 721, 1440}, DTypeId::kFloat32), {350640, 10, 10}, 0));
  auto plan = PlanOf(out, SpecOf(2'500'000'000, TierChoice::kDisk));
  ASSERT_TRUE(plan);
  EXPECT_EQ(ExchangeChunks(*plan).size(), 2u);
  ExpectGolden(*plan, "era5_disk_min_mem_0");
}

// Cubed test_rechunk_era5_chunk_sizes on cloud storage: its larger copy
// budget needs 3.5GB for the same stages.
TEST(GoldenPlanTest, Era5OnTheObjectTier) {
  auto out = Store(Rechunk(Source(kEra5, {31, 721, 1440}, DTypeId::kFloat32), {350640, 10, 10}));
  auto plan = PlanOf(out, SpecOf(3'500'000'000, TierChoice::kObject));
  ASSERT_TRUE(plan);
  ExpectCubedEra5Stages(*plan);
  for (const PlannedOp& op : plan->ops()) {
    if (op.materialized && !op.consumers.empty()) {
      EXPECT_EQ(op.tier, Tier::kObject);
    }
  }
  ExpectGolden(*plan, "era5_object");
}

// Cubed test_rechunk_hypothesis_generated_bug: (1001, 1001) float64,
// (38, 376) -> (5, 146), allowed_mem 800 kB (no reserved_mem, as in Cubed).
TEST(GoldenPlanTest, CubedHypothesisBug) {
  auto out = Store(Rechunk(Source({1001, 1001}, {38, 376}, DTypeId::kFloat64), {5, 146}));
  auto plan = PlanOf(out, SpecOf(800'000, TierChoice::kDisk, /*reserved=*/0));
  ASSERT_TRUE(plan);
  const std::vector<Shape> stages = ExchangeChunks(*plan);
  ASSERT_EQ(stages.size(), 2u);
  EXPECT_EQ(stages[0], (Shape{38, 376}));
  ExpectGolden(*plan, "cubed_hypothesis_bug");
}

// Cubed #502's seed case: in RAM, one exchange, the source published once.
TEST(GoldenPlanTest, SeedCaseInRam) {
  auto out = Store(Rechunk(Source({10000, 10000}, {10000, 1000}, DTypeId::kFloat64), {1000, 10000}));
  auto plan = PlanOf(out, SpecOf(400'000'000, TierChoice::kAuto));
  ASSERT_TRUE(plan);
  EXPECT_EQ(ExchangeChunks(*plan).size(), 1u);
  EXPECT_EQ(TasksOf(*plan, NodeKind::kZarrSource), 10);
  for (const PlannedOp& op : plan->ops()) {
    if (op.tier != Tier::kNone) {
      EXPECT_EQ(op.tier, Tier::kMemory);
    }
  }
  ExpectGolden(*plan, "seed_in_ram");
}

// The seed case with total_system_mem 600MB: no RAM is left for
// intermediates, and the planner weighs spilling against the stages.
TEST(GoldenPlanTest, SeedCaseWithoutRam) {
  auto out = Store(Rechunk(Source({10000, 10000}, {10000, 1000}, DTypeId::kFloat64), {1000, 10000}));
  ResolvedSpec spec = SpecOf(400'000'000, TierChoice::kAuto);
  spec.total_system_mem = 600'000'000;
  auto plan = PlanOf(out, spec);
  ASSERT_TRUE(plan);
  EXPECT_EQ(plan->ram_tier_capacity(), 0);
  for (const PlannedOp& op : plan->ops()) EXPECT_NE(op.tier, Tier::kMemory);
  ExpectGolden(*plan, "seed_without_ram");
}

// Cubed test_rechunk_and_store (cubed #859): storing the rechunk adds no
// task to it.
TEST(GoldenPlanTest, CubedRechunkAndStore) {
  auto rechunked =
      Rechunk(Source({394488, 778, 706}, {24, 778, 706}, DTypeId::kFloat32), {43800, 5, 5});
  const ResolvedSpec spec = SpecOf(5'000'000'000, TierChoice::kDisk);
  auto stored = PlanOf(Store(rechunked), spec);
  ASSERT_TRUE(stored);
  // The last stage is computed inside the store's tasks.
  int fused_exchanges = 0;
  for (const PlannedOp& op : stored->ops()) {
    if (op.node->kind == NodeKind::kExchange && op.fused_into >= 0) {
      ++fused_exchanges;
      EXPECT_EQ(stored->ops()[op.fused_into].node->kind, NodeKind::kStore);
    }
  }
  EXPECT_EQ(fused_exchanges, 1);
  ExpectGolden(*stored, "cubed_rechunk_and_store");
}

}  // namespace
}  // namespace strata
