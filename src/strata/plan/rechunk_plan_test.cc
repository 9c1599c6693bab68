// The rechunk planner's arithmetic against the cases of rechunker's and
// Cubed's own planner tests (rechunker tests/test_algorithm.py, Cubed
// cubed/tests/test_rechunk.py): the same inputs must give the same chunk
// shapes, stages and copy operations.
#include "strata/plan/rechunk_plan.h"

#include <gtest/gtest.h>

#include <cmath>
#include <set>

namespace strata {

void PrintTo(const RechunkStage& s, std::ostream* os) {
  *os << "(" << ShapeToString(s.read) << ", " << ShapeToString(s.intermediate) << ", "
      << ShapeToString(s.write) << ")";
}
void PrintTo(const RechunkCopy& c, std::ostream* os) {
  *os << "(" << ShapeToString(c.copy) << " -> " << ShapeToString(c.store) << ")";
}

namespace {

using Stages = std::vector<RechunkStage>;

// rechunker test_consolidate_chunks: shape (8, 8), chunks (1, 2).
TEST(ConsolidateChunksTest, RechunkerCases) {
  struct Case {
    int64_t itemsize, max_mem;
    Shape expected;
  };
  for (const Case& c : std::vector<Case>{{4, 8, {1, 2}},
                                         {4, 16, {1, 4}},
                                         {4, 17, {1, 4}},
                                         {4, 64, {2, 8}},
                                         {4, 256, {8, 8}},
                                         {4, 512, {8, 8}},
                                         {8, 256, {4, 8}}}) {
    Result<Shape> got = ConsolidateChunks({8, 8}, {1, 2}, c.itemsize, c.max_mem);
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    EXPECT_EQ(*got, c.expected) << c.itemsize << " " << c.max_mem;
  }
}

// rechunker test_consolidate_chunks_w_limits (None: the axis stays).
TEST(ConsolidateChunksTest, RechunkerCasesWithLimits) {
  struct Case {
    int64_t max_mem;
    ChunkLimits limits;
    Shape expected;
  };
  const std::optional<Index> none;
  for (const Case& c : std::vector<Case>{{16, {none, kUpToExtent}, {1, 4}},
                                         {16, {kUpToExtent, none}, {2, 2}},
                                         {32, {none, kUpToExtent}, {1, 8}},
                                         {32, {none, 4}, {1, 4}},
                                         {32, {8, 4}, {2, 4}},
                                         {32, {8, none}, {4, 2}},
                                         {128, {10, none}, {8, 2}}}) {
    Result<Shape> got = ConsolidateChunks({8, 8}, {1, 2}, 4, c.max_mem, c.limits);
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    EXPECT_EQ(*got, c.expected) << c.max_mem;
  }
}

TEST(ConsolidateChunksTest, ErrorsForAChunkOverMaxMemAndLimitsBelowTheChunk) {
  Result<Shape> over = ConsolidateChunks({8, 8}, {1, 2}, 4, 7);
  EXPECT_EQ(over.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(over.status().message().find("exceeds the rechunk's max_mem"), std::string_view::npos);
  for (const ChunkLimits& limits : {ChunkLimits{1, 1}, ChunkLimits{-2, 2}}) {
    Result<Shape> bad = ConsolidateChunks({8, 8}, {1, 2}, 4, 8, limits);
    EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(bad.status().message().find("chunk limit"), std::string_view::npos);
  }
}

// rechunker test_consolidate_chunks_4D: a realistic example.
TEST(ConsolidateChunksTest, Realistic4D) {
  const Shape shape{1000, 50, 1800, 3600};
  EXPECT_EQ(*ConsolidateChunks(shape, {1, 5, 1800, 3600}, 4, 1'000'000'000),
            (Shape{1, 35, 1800, 3600}));
  EXPECT_EQ(*ConsolidateChunks(shape, {1, 5, 1800, 3600}, 4, 3'000'000'000),
            (Shape{2, 50, 1800, 3600}));
}

// rechunker test_calculate_stage_chunks and Cubed test_calculate_stage_chunks.
TEST(InterpolateStageChunksTest, RechunkerAndCubedCases) {
  using V = std::vector<Shape>;
  EXPECT_EQ(InterpolateStageChunks({100, 1}, {1, 100}, 1), V{});
  EXPECT_EQ(InterpolateStageChunks({100, 1}, {1, 100}, 2), (V{{10, 10}}));
  EXPECT_EQ(InterpolateStageChunks({100, 1}, {1, 100}, 3), (V{{21, 4}, {4, 21}}));
  EXPECT_EQ(InterpolateStageChunks({1'000'000, 1}, {1, 1'000'000}, 2), (V{{1000, 1000}}));
  EXPECT_EQ(InterpolateStageChunks({1'000'000, 1}, {1, 1'000'000}, 3),
            (V{{10000, 100}, {100, 10000}}));
  EXPECT_EQ(InterpolateStageChunks({1'000'000, 1}, {1, 1'000'000}, 4),
            (V{{31622, 31}, {1000, 1000}, {31, 31622}}));
  EXPECT_EQ(InterpolateStageChunks({10, 10}, {1, 100}, 2), (V{{3, 31}}));
  // ERA5's read chunks to its target.
  EXPECT_EQ(InterpolateStageChunks({93, 721, 1440}, {350640, 10, 10}, 3),
            (V{{1447, 173, 274}, {22528, 41, 52}}));
}

// rechunker test_calculate_single_stage_io_ops.
TEST(SingleStageIoOpsTest, RechunkerCases) {
  struct Case {
    Shape shape, in, out;
    int64_t expected;
  };
  for (const Case& c : std::vector<Case>{{{6}, {1}, {6}, 6},
                                         {{10}, {1}, {6}, 10},
                                         {{6}, {2}, {3}, 4},
                                         {{24}, {2}, {3}, 16},
                                         {{10}, {4}, {5}, 4},
                                         {{100}, {4}, {5}, 40},
                                         {{100, 100}, {1, 100}, {100, 1}, 10000},
                                         {{100, 100}, {1, 10}, {10, 1}, 10000},
                                         {{100, 100}, {20, 20}, {25, 25}, 64},
                                         {{50, 50}, {20, 20}, {25, 25}, 16},
                                         {{100}, {43}, {100}, 3},
                                         {{100}, {43}, {51}, 4},
                                         {{100}, {43}, {40}, 5},
                                         {{100}, {43}, {10}, 12},
                                         {{100}, {43}, {1}, 100}}) {
    EXPECT_EQ(SingleStageIoOps(c.shape, c.in, c.out), c.expected)
        << ShapeToString(c.shape) << " " << ShapeToString(c.in) << " " << ShapeToString(c.out);
  }
  // Against counting the distinct (source block, target block) pairs.
  for (Index size = 1; size <= 60; size += 7) {
    for (Index in = 1; in <= size; in += 3) {
      for (Index out = 1; out <= size; out += 5) {
        std::set<std::pair<Index, Index>> pairs;
        for (Index i = 0; i < size; ++i) pairs.insert({i / in, i / out});
        EXPECT_EQ(SingleStageIoOps({size}, {in}, {out}), static_cast<int64_t>(pairs.size()));
      }
    }
  }
  EXPECT_EQ(ExchangePieces({10000, 10000}, {10000, 1000}, {1000, 10000}), 100);
}

// rechunker test_rechunking_plan_1D and _2d: one stage, min_mem = itemsize.
TEST(PlanMultistageTest, RechunkerSingleStageCases) {
  struct Case {
    Shape shape, source, target;
    int64_t max_mem;
    RechunkStage expected;
  };
  for (const Case& c : std::vector<Case>{
           {{8}, {1}, {1}, 4, {{1}, {1}, {1}}},
           {{8}, {1}, {1}, 8, {{2}, {2}, {2}}},
           {{8}, {1}, {2}, 8, {{2}, {2}, {2}}},
           {{8}, {1}, {2}, 16, {{4}, {4}, {4}}},
           {{8}, {1}, {2}, 17, {{4}, {4}, {4}}},
           {{16}, {3}, {7}, 32, {{7}, {7}, {7}}},
           {{8, 8}, {1, 8}, {8, 1}, 32, {{1, 8}, {1, 1}, {8, 1}}},
           {{8, 8}, {1, 8}, {8, 1}, 64, {{2, 8}, {2, 2}, {8, 2}}},
           {{8, 8}, {1, 8}, {8, 1}, 256, {{8, 8}, {8, 8}, {8, 8}}},
           {{8, 8}, {1, 8}, {8, 1}, 512, {{8, 8}, {8, 8}, {8, 8}}}}) {
    Result<MultistagePlan> p = PlanMultistage(c.shape, c.source, c.target, 4, 4, c.max_mem);
    ASSERT_TRUE(p.ok()) << p.status().ToString();
    EXPECT_EQ(p->stages, Stages{c.expected}) << ShapeToString(c.shape) << " " << c.max_mem;
  }
}

// rechunker test_multistage_rechunking_plan, _warns and _invalid_min_mem.
TEST(PlanMultistageTest, RechunkerMultistageCases) {
  Result<MultistagePlan> one = PlanMultistage({100, 100}, {100, 1}, {1, 100}, 1, 1, 100);
  ASSERT_TRUE(one.ok()) << one.status().ToString();
  EXPECT_EQ(one->stages, (Stages{{{100, 1}, {1, 1}, {1, 100}}}));
  Result<MultistagePlan> two = PlanMultistage({100, 100}, {100, 1}, {1, 100}, 1, 10, 100);
  ASSERT_TRUE(two.ok()) << two.status().ToString();
  EXPECT_EQ(two->stages, (Stages{{{100, 1}, {10, 1}, {10, 10}}, {{10, 10}, {1, 10}, {1, 100}}}));
  // min_mem unreachable: the search stops when IO operations rise, and says so.
  Result<MultistagePlan> capped = PlanMultistage({100, 100}, {100, 1}, {1, 100}, 1, 90, 100);
  ASSERT_TRUE(capped.ok()) << capped.status().ToString();
  EXPECT_NE(capped->reason.find("would raise IO operations"), std::string::npos) << capped->reason;
  Result<MultistagePlan> bad = PlanMultistage({100, 100}, {100, 1}, {1, 100}, 1, 101, 100);
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("below min_mem"), std::string_view::npos);
}

// Cubed test_multistage_rechunking_plan and test_rechunk_era5_chunk_sizes:
// ERA5, 350640 x 721 x 1440 float32, (31, 721, 1440) -> (350640, 10, 10),
// allowed_mem 2.5GB (max_mem 500 MB, min_mem 25 MB).
TEST(PlanMultistageTest, CubedEra5StagesAndCopyOperations) {
  const Shape shape{350640, 721, 1440};
  Result<MultistagePlan> p =
      PlanMultistage(shape, {31, 721, 1440}, {350640, 10, 10}, 4, 25'000'000, 500'000'000);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ(p->stages, (Stages{{{93, 721, 1440}, {93, 173, 396}, {1447, 173, 396}},
                               {{1447, 173, 396}, {1447, 41, 109}, {22528, 41, 109}},
                               {{22528, 41, 109}, {22528, 10, 30}, {350640, 10, 30}}}));
  EXPECT_EQ(CopyOperations(*p, {350640, 10, 10}),
            (std::vector<RechunkCopy>{{{93, 721, 1440}, {93, 173, 396}},
                                      {{1447, 173, 396}, {1447, 41, 109}},
                                      {{22528, 41, 109}, {22528, 10, 30}},
                                      {{350640, 10, 30}, {350640, 10, 10}}}));
  // min_mem 0: one stage (Cubed: two copy operations).
  Result<MultistagePlan> single =
      PlanMultistage(shape, {31, 721, 1440}, {350640, 10, 10}, 4, 0, 500'000'000);
  ASSERT_TRUE(single.ok()) << single.status().ToString();
  EXPECT_EQ(single->stages.size(), 1u);
  EXPECT_EQ(CopyOperations(*single, {350640, 10, 10}).size(), 2u);
}

// Cubed test_rechunk_hypothesis_generated_bug: (1001, 1001), (38, 376) ->
// (5, 146), allowed_mem 800 kB (max_mem 160 kB, min_mem 8 kB).
TEST(PlanMultistageTest, CubedHypothesisBug) {
  Result<MultistagePlan> p = PlanMultistage({1001, 1001}, {38, 376}, {5, 146}, 8, 8000, 160000);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ(CopyOperations(*p, {5, 146}),
            (std::vector<RechunkCopy>{{{38, 376}, {15, 376}}, {{15, 1001}, {5, 146}}}));
}

// Cubed test_split_chunksizes.
TEST(SplitChunkSizesTest, CubedCases) {
  using V = std::vector<Index>;
  EXPECT_EQ(SplitChunkSizes(10, 2, 4), (V{2, 2, 2, 2, 2}));
  EXPECT_EQ(SplitChunkSizes(10, 2, 3), (V{2, 1, 1, 2, 2, 1, 1}));
  EXPECT_EQ(SplitChunkSizes(20, 5, 7), (V{5, 2, 3, 4, 1, 5}));
  V bug = SplitChunkSizes(1001, 38, 15);
  bug.resize(8);
  EXPECT_EQ(bug, (V{15, 15, 8, 7, 15, 15, 1, 14}));
  EXPECT_TRUE(SplitGrid({20, 8}, {5, 4}, {5, 2}).is_regular());
  ChunkGrid irregular = SplitGrid({20, 8}, {5, 4}, {7, 4});
  EXPECT_FALSE(irregular.is_regular());
  EXPECT_EQ(irregular.AxisChunkSizes(0), (V{5, 2, 3, 4, 1, 5}));
}

// rechunker issue 115: the intermediate chunks of a plan, rechunked again to
// the same target, need no further consolidation.
TEST(PlanMultistageTest, IntermediateToTargetNeedsNoMoreStages) {
  const Shape shape{175320, 721, 1440};
  Result<MultistagePlan> first =
      PlanMultistage(shape, {24, 721, 1440}, {21915, 103, 10}, 4, 4, 12'000'000'000);
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  ASSERT_EQ(first->stages.size(), 1u);
  Result<MultistagePlan> second = PlanMultistage(shape, first->stages[0].intermediate,
                                                 {21915, 103, 10}, 4, 4, 12'000'000'000);
  ASSERT_TRUE(second.ok()) << second.status().ToString();
  const RechunkStage& s = second->stages[0];
  EXPECT_EQ(s.read, s.intermediate);
  EXPECT_EQ(s.intermediate, s.write);
}


// Reading in place: what each target's parts decode, per source byte.
TEST(PartialReadAmplificationTest, RowsOfAColumnChunkDecodeEachBlockAboutOnce) {
  // Issue 14's W4: (20000, 500) -> (500, 20000) float64; each piece is 500
  // whole rows of a source chunk, 2 MB: in units that tile the pieces, each
  // byte is decoded once.
  EXPECT_DOUBLE_EQ(
      PartialReadAmplification({20000, 20000}, {20000, 500}, {500, 20000}, 8, 500'000), 1.0);
  // In blosc's blocks of 1 MiB, the block two pieces share is decoded by
  // both: 1.52 bytes per byte.
  EXPECT_NEAR(
      PartialReadAmplification({20000, 20000}, {20000, 500}, {500, 20000}, 8, 1 << 20), 1.52, 0.01);
  // The seed case: 1000 rows of 1000 columns, 8 MB pieces.
  EXPECT_DOUBLE_EQ(
      PartialReadAmplification({10000, 10000}, {10000, 1000}, {1000, 10000}, 8, 1'000'000), 1.0);
  EXPECT_NEAR(
      PartialReadAmplification({10000, 10000}, {10000, 1000}, {1000, 10000}, 8, 1 << 20), 1.13, 0.01);
}

TEST(PartialReadAmplificationTest, ColumnsOfARowChunkDecodeItAllForEachPiece) {
  // The transpose of W4: each piece is 500 columns of every row of a
  // (500, 20000) chunk, so it touches every block: 40 pieces, 40 decodes.
  EXPECT_DOUBLE_EQ(
      PartialReadAmplification({20000, 20000}, {500, 20000}, {20000, 500}, 8, 1 << 20), 40.0);
  // Read as raw elements, each byte about once (the estimate counts a unit
  // more per run).
  EXPECT_NEAR(PartialReadAmplification({20000, 20000}, {500, 20000}, {20000, 500}, 8, 8), 1.0,
              0.01);
}

TEST(PartialReadAmplificationTest, RaggedEdgesAndLimits) {
  // A chunk larger than the array: the pieces of the first chunk cover the
  // array, never more than the chunk.
  const double edge = PartialReadAmplification({30, 7}, {64, 8}, {10, 7}, 4, 256);
  EXPECT_GT(edge, 0.0);
  EXPECT_LE(edge, 1.0);
  // More than a million pieces in one chunk: not counted.
  EXPECT_EQ(PartialReadAmplification({2000, 2000}, {2000, 2000}, {1, 1}, 8, 4096), HUGE_VAL);
  EXPECT_EQ(PartialReadAmplification({}, {}, {}, 8, 4096), HUGE_VAL);
}

}  // namespace
}  // namespace strata
