#include "strata/core/chunk_grid.h"

#include <gtest/gtest.h>

namespace strata {
namespace {

TEST(ChunkGridTest, RaggedLastChunk) {
  ChunkGrid g = *ChunkGrid::Regular({10, 7}, {4, 7});
  EXPECT_EQ(g.grid_shape(), Shape({3, 1}));
  EXPECT_EQ(g.num_blocks(), 3);
  EXPECT_EQ(g.BlockBox(Shape{2, 0}), Box({8, 0}, {2, 7}));
  EXPECT_EQ(g.BlockShape(Shape{1, 0}), Shape({4, 7}));
  EXPECT_EQ(g.BlockContaining(0, 7), 1);
  EXPECT_EQ(g.BlockContaining(0, 8), 2);
  EXPECT_EQ(g.BlocksIntersecting(0, 3, 9), std::make_pair(Index{0}, Index{3}));
  EXPECT_EQ(g.BlocksIntersecting(0, 4, 8), std::make_pair(Index{1}, Index{2}));
}

TEST(ChunkGridTest, ZeroSizeDimension) {
  ChunkGrid g = *ChunkGrid::Regular({0, 5}, {3, 5});
  EXPECT_EQ(g.grid_shape(), Shape({0, 1}));
  EXPECT_EQ(g.num_blocks(), 0);
}

TEST(ChunkGridTest, RankZero) {
  ChunkGrid g = *ChunkGrid::Regular({}, {});
  EXPECT_EQ(g.num_blocks(), 1);
  EXPECT_EQ(g.BlockBox(Shape{}), Box());
}

TEST(ChunkGridTest, Rectilinear) {
  ChunkGrid g = *ChunkGrid::Rectilinear({{3, 3, 2}, {5}});
  EXPECT_FALSE(g.is_regular());
  EXPECT_EQ(g.shape(), Shape({8, 5}));
  EXPECT_EQ(g.chunk_shape(), Shape({3, 5}));
  EXPECT_EQ(g.grid_shape(), Shape({3, 1}));
  EXPECT_EQ(g.BlockBox(Shape{2, 0}), Box({6, 0}, {2, 5}));
  EXPECT_EQ(g.BlockContaining(0, 5), 1);
  EXPECT_EQ(g.BlockContaining(0, 6), 2);
  EXPECT_EQ(g.BlockContaining(0, 0), 0);
  EXPECT_EQ(g.BlockContaining(0, 7), 2);
  EXPECT_EQ(g.ToString(), "((3, 3, 2), (5,))");
  // Equal to the regular grid with the same blocks.
  EXPECT_EQ(g, *ChunkGrid::Regular({8, 5}, {3, 5}));
  EXPECT_FALSE(g == *ChunkGrid::Regular({8, 5}, {4, 5}));
}

TEST(ChunkGridTest, RejectsBadChunks) {
  Result<ChunkGrid> r = ChunkGrid::Regular({10}, {0});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("at least 1"), std::string_view::npos);
  EXPECT_FALSE(ChunkGrid::Regular({10, 10}, {5}).ok());
  EXPECT_FALSE(ChunkGrid::Regular({-1}, {5}).ok());
  EXPECT_FALSE(ChunkGrid::Rectilinear({{3, 0}}).ok());
}

TEST(ChunkGridTest, ExtentsNearTwoToTheSixtyThreeDoNotWrap) {
  // ceil(extent / chunk) was (extent + chunk - 1) / chunk: negative here.
  ChunkGrid g = *ChunkGrid::Regular({INT64_MAX}, {10});
  EXPECT_EQ(g.grid_shape(), Shape({INT64_MAX / 10 + 1}));
  EXPECT_EQ(g.BlockShape(Shape{INT64_MAX / 10}), Shape({INT64_MAX % 10}));
  Result<ChunkGrid> many = ChunkGrid::Regular({INT64_MAX, 4}, {10, 1});
  EXPECT_EQ(many.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(many.status().message().find("shape (9223372036854775807, 4) has more elements"),
            std::string_view::npos)
      << many.status().ToString();
  Result<ChunkGrid> sum = ChunkGrid::Rectilinear({{INT64_MAX - 5, 10}});
  EXPECT_EQ(sum.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(sum.status().message().find("rectilinear chunk sizes along axis 0"),
            std::string_view::npos)
      << sum.status().ToString();
}

TEST(ChunkGridTest, BlockBoxesTileTheArray) {
  for (Shape shape : {Shape{17, 5, 9}, Shape{1, 1, 1}, Shape{30, 2, 7}}) {
    ChunkGrid g = *ChunkGrid::Regular(shape, {4, 3, 2});
    Index covered = 0;
    Shape block(3, 0);
    if (g.num_blocks() == 0) continue;
    do {
      Box b = g.BlockBox(block);
      EXPECT_TRUE(Box::FromShape(shape).Contains(b));
      covered += b.num_elements();
    } while (NextIndex(block, g.grid_shape()));
    EXPECT_EQ(covered, NumElements(shape));
  }
}

}  // namespace
}  // namespace strata
