// api/manipulation_extras.h against numpy: broadcast_arrays/shapes,
// moveaxis, matrix_transpose, repeat, roll, tile, unstack, vecdot over
// ragged and random chunkings, empty and 0-d arrays; roll and tile read only
// neighbouring blocks.
#include "strata/api/manipulation_extras.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "strata/api/numpy_oracle_test_util.h"
#include "strata/api/api_test_util.h"
#include "strata/strata.h"

namespace strata {
namespace {

using testing_util::Chunkings;
using testing_util::Compute;
using testing_util::Copy;
using testing_util::ExpectArrayNear;
using testing_util::Lazy;
using testing_util::NumpyOracle;
using testing_util::RandomHost;
using testing_util::SmallSpec;

std::string Tuple(const std::vector<Index>& v) {
  std::string s = "(";
  for (Index i : v) s += std::to_string(i) + ",";
  return s + ")";
}

struct Case {
  std::string what;
  Array got;
  int id;
};

void CheckAll(NumpyOracle& np, std::vector<Case>& cases) {
  np.Run();
  for (Case& c : cases) {
    ASSERT_TRUE(c.got.ok()) << c.what << ": " << c.got.status().ToString();
    ExpectArrayNear(Compute(c.got), np.First(c.id), 1e-12, 1e-12, c.what + " = " + np.expr(c.id));
  }
}

TEST(ManipulationExtrasTest, RollTileRepeatAgainstNumpy) {
  NumpyOracle np;
  std::vector<Case> cases;
  uint32_t seed = 1;
  for (const Shape& shape : std::vector<Shape>{{0}, {7}, {5, 6}, {3, 4, 2}, {}}) {
    const NDArray h = RandomHost(DTypeId::kFloat64, shape, seed++);
    for (const Shape& chunks : Chunkings(shape, seed++, 1)) {
      Array x = Lazy(h, chunks);
      const std::string cs = " chunks " + ShapeToString(chunks);
      // roll
      for (Index shift : {0, 1, -3, 11}) {
        cases.push_back({"roll flat" + cs, roll(x, shift),
                         np.Add("np.roll(a, " + std::to_string(shift) + ")", {&h})});
        if (!shape.empty()) {
          cases.push_back({"roll axis -1" + cs, roll(x, shift, -1),
                           np.Add("np.roll(a, " + std::to_string(shift) + ", axis=-1)", {&h})});
        }
      }
      if (shape.size() >= 2) {
        cases.push_back({"roll two axes" + cs, roll(x, {2, -1}, {0, 1}),
                         np.Add("np.roll(a, (2, -1), axis=(0, 1))", {&h})});
        cases.push_back({"roll a repeated axis" + cs, roll(x, {2, 3}, {1, 1}),
                         np.Add("np.roll(a, (2, 3), axis=(1, 1))", {&h})});
      }
      // tile
      for (const std::vector<Index>& reps :
           std::vector<std::vector<Index>>{{2}, {1, 3}, {2, 1, 2}, {0}, {3, 1, 1, 2}}) {
        cases.push_back({"tile " + Tuple(reps) + cs, tile(x, reps),
                         np.Add("np.tile(a, " + Tuple(reps) + ")", {&h})});
      }
      // repeat
      for (Index r : {0, 1, 3}) {
        cases.push_back({"repeat flat " + std::to_string(r) + cs, repeat(x, r),
                         np.Add("np.repeat(a, " + std::to_string(r) + ")", {&h})});
        if (!shape.empty()) {
          cases.push_back({"repeat axis 0" + cs, repeat(x, r, 0),
                           np.Add("np.repeat(a, " + std::to_string(r) + ", axis=0)", {&h})});
        }
      }
      if (!shape.empty()) {
        std::vector<Index> counts(shape[0]);
        for (Index i = 0; i < shape[0]; ++i) counts[i] = (i * 7 + seed) % 4;
        cases.push_back({"repeat counts" + cs, repeat(x, counts, 0),
                         np.Add("np.repeat(a, " + Tuple(counts) + ", axis=0)", {&h})});
        NDArray hc = *NDArray::Allocate(*MemoryPool::Default(), DTypeId::kInt32, {shape[0]});
        for (Index i = 0; i < shape[0]; ++i)
          hc.data_as<int32_t>()[i] = static_cast<int32_t>(counts[i]);
        cases.push_back({"repeat counts array" + cs, repeat(x, Lazy(hc, {2}), 0),
                         np.Add("np.repeat(a, " + Tuple(counts) + ", axis=0)", {&h})});
      }
    }
  }
  CheckAll(np, cases);
  Array x = random::random({4}, {2}, 1, SmallSpec());
  EXPECT_NE(repeat(x, -1).status().message().find("negative"), std::string::npos);
  EXPECT_NE(repeat(x, std::vector<Index>{1, 2}, 0).status().message().find("2 counts"),
            std::string::npos);
  EXPECT_FALSE(tile(x, {-1}).ok());
  EXPECT_FALSE(roll(x, {1, 2}, {0, 0, 0}).ok());
}

TEST(ManipulationExtrasTest, RollReadsOnlyNeighbouringBlocks) {
  // Along the rolled axis each output block reads at most the input blocks
  // its shifted range crosses (two here), never the whole axis.
  Array x = random::random({100, 8}, {10, 8}, 1, SmallSpec());
  Array y = roll(x, 3, 0);
  ASSERT_TRUE(y.ok());
  const InputMap& map = y.node()->maps[0];
  for (Index j = 0; j < 10; ++j) EXPECT_LE(map.axes[0].InputsFor(j).size(), 2u) << j;
  EXPECT_EQ(y.chunks(), x.chunks());
  Array t = tile(x, {3, 1});
  for (Index j = 0; j < 30; ++j) EXPECT_EQ(t.node()->maps[0].axes[0].InputsFor(j).size(), 1u);
}

TEST(ManipulationExtrasTest, ShapesAxesAndVecdotAgainstNumpy) {
  NumpyOracle np;
  std::vector<Case> cases;
  const NDArray a = RandomHost(DTypeId::kFloat64, {3, 1, 5}, 1);
  const NDArray b = RandomHost(DTypeId::kFloat64, {4, 1}, 2);
  const NDArray c = RandomHost(DTypeId::kInt32, {5}, 3);
  std::vector<Array> br = broadcast_arrays({Lazy(a, {2, 1, 3}), Lazy(b, {3, 1}), Lazy(c, {2})});
  ASSERT_EQ(br.size(), 3u);
  for (int i = 0; i < 3; ++i) {
    cases.push_back(
        {"broadcast_arrays " + std::to_string(i), br[i],
         np.Add("np.broadcast_arrays(a, b, c)[" + std::to_string(i) + "]", {&a, &b, &c})});
    EXPECT_EQ(br[i].chunks(), br[0].chunks());
  }
  Result<Shape> bs = broadcast_shapes({{3, 1, 5}, {4, 1}, {5}});
  ASSERT_TRUE(bs.ok());
  EXPECT_EQ(*bs, Shape({3, 4, 5}));
  EXPECT_FALSE(broadcast_shapes({{3}, {4}}).ok());

  const NDArray m = RandomHost(DTypeId::kFloat64, {2, 3, 4, 5}, 4);
  Array x = Lazy(m, {1, 2, 3, 2});
  cases.push_back({"moveaxis", moveaxis(x, 0, -1), np.Add("np.moveaxis(a, 0, -1)", {&m})});
  cases.push_back({"moveaxis two", moveaxis(x, {0, 1}, {-1, -3}),
                   np.Add("np.moveaxis(a, (0, 1), (-1, -3))", {&m})});
  cases.push_back(
      {"matrix_transpose", matrix_transpose(x), np.Add("np.swapaxes(a, -1, -2)", {&m})});
  std::vector<Array> us = unstack(x, 1);
  ASSERT_EQ(us.size(), 3u);
  for (int i = 0; i < 3; ++i) {
    cases.push_back({"unstack", us[i], np.Add("a[:, " + std::to_string(i) + "]", {&m})});
  }
  // vecdot: real, integer (keeps int32), complex (conjugates the first).
  const NDArray v1 = RandomHost(DTypeId::kFloat64, {3, 4, 5}, 5);
  const NDArray v2 = RandomHost(DTypeId::kFloat64, {4, 5}, 6);
  cases.push_back({"vecdot", vecdot(Lazy(v1, {2, 3, 2}), Lazy(v2, {2, 3})),
                   np.Add("np.sum(a * b, axis=-1)", {&v1, &v2})});
  cases.push_back({"vecdot axis 1", vecdot(Lazy(v1, {2, 3, 2}), Lazy(v2, {2, 3}), -2),
                   np.Add("np.sum(a * b, axis=-2)", {&v1, &v2})});
  const NDArray i1 = RandomHost(DTypeId::kInt32, {6, 7}, 7);
  Array iv = vecdot(Lazy(i1, {4, 3}), Lazy(i1, {2, 7}));
  EXPECT_EQ(iv.dtype(), DType(DTypeId::kInt32));
  cases.push_back({"vecdot int32", iv, np.Add("np.sum(a * a, axis=-1).astype(np.int32)", {&i1})});
  const NDArray z1 = RandomHost(DTypeId::kComplex128, {4, 3}, 8);
  const NDArray z2 = RandomHost(DTypeId::kComplex128, {4, 3}, 9);
  cases.push_back({"vecdot complex", vecdot(Lazy(z1, {3, 2}), Lazy(z2, {2, 3})),
                   np.Add("np.sum(np.conj(a) * b, axis=-1)", {&z1, &z2})});
  CheckAll(np, cases);
  EXPECT_FALSE(vecdot(Lazy(v1, {}), Lazy(RandomHost(DTypeId::kFloat64, {4}, 1), {})).ok());
  EXPECT_FALSE(matrix_transpose(Lazy(c, {})).ok());
  EXPECT_FALSE(moveaxis(x, {0, 0}, {1, 2}).ok());
  EXPECT_FALSE(moveaxis(x, {0}, {1, 2}).ok());
}

}  // namespace
}  // namespace strata
