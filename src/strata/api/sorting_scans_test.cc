// Sorting, scans, searching and set functions against numpy: sort/argsort
// (ascending, descending, NaN), take_along_axis, cumulative_sum/prod,
// nancumsum/nancumprod, diff, searchsorted, isin, unique_*; over ragged,
// single-element and random chunkings, empty and 0-d arrays; the budget
// refusals; scans never rechunk the scanned axis.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "strata/api/numpy_oracle_test_util.h"
#include "strata/api/api_test_util.h"
#include "strata/base/temp_dir.h"
#include "strata/storage/open_store.h"
#include "strata/storage/zarr/zarr_array.h"
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

struct Case {
  std::string what;
  Array got;
  int id;
  double tol = 0;
};

void CheckAll(NumpyOracle& np, std::vector<Case>& cases) {
  np.Run();
  for (Case& c : cases) {
    ASSERT_TRUE(c.got.ok()) << c.what << ": " << c.got.status().ToString();
    ExpectArrayNear(Compute(c.got), np.First(c.id), c.tol, c.tol, c.what + " = " + np.expr(c.id));
  }
}

TEST(SortingTest, AgainstNumpy) {
  NumpyOracle np;
  std::vector<Case> cases;
  uint32_t seed = 1;
  for (DType t : {DType(DTypeId::kFloat64), DType(DTypeId::kInt16), DType(DTypeId::kBool),
                  DType(DTypeId::kFloat32)}) {
    for (const Shape& shape : std::vector<Shape>{{0}, {9}, {5, 6}, {3, 4, 5}}) {
      const NDArray h = RandomHost(t, shape, seed++, 0.2);  // NaN, +-inf, -0.0 among floats
      for (const Shape& chunks : Chunkings(shape, seed++, 1)) {
        for (int axis : {0, -1}) {
          const std::string ax = std::to_string(axis);
          const std::string w = std::string(t.name()) + " " + ShapeToString(shape) + " chunks " +
                                ShapeToString(chunks) + " axis " + ax;
          Array x = Lazy(h, chunks);
          cases.push_back({"sort " + w, sort(x, axis),
                           np.Add("np.sort(a, axis=" + ax + ", kind='stable')", {&h})});
          cases.push_back({"argsort " + w, argsort(x, axis),
                           np.Add("np.argsort(a, axis=" + ax + ", kind='stable')", {&h})});
          // The standard's stable descending order (array_api_strict's).
          cases.push_back({"sort descending " + w, sort(x, axis, true),
                           np.Add("np.flip(np.sort(np.flip(a, " + ax + "), axis=" + ax +
                                      ", kind='stable'), " + ax + ")",
                                  {&h})});
          cases.push_back({"argsort descending " + w, argsort(x, axis, true),
                           np.Add("a.shape[" + ax + "] - 1 - np.flip(np.argsort(np.flip(a, " + ax +
                                      "), axis=" + ax + ", kind='stable'), " + ax + ")",
                                  {&h})});
          if (shape.size() >= 1 && NumElements(shape) > 0) {
            Array idx = argsort(x, axis);
            cases.push_back({"take_along_axis " + w, take_along_axis(x, idx, axis),
                             np.Add("np.take_along_axis(a, np.argsort(a, axis=" + ax +
                                        ", kind='stable'), " + ax + ")",
                                    {&h})});
          }
        }
      }
    }
  }
  // take_along_axis with broadcasting indices (numpy's max-along-axis idiom).
  const NDArray m = RandomHost(DTypeId::kFloat64, {4, 6}, 77);
  Array xm = Lazy(m, {3, 4});
  Array am = expand_dims(argmax(xm, 1), 1);
  cases.push_back({"take_along_axis keepdims", take_along_axis(xm, am, 1),
                   np.Add("np.take_along_axis(a, np.expand_dims(np.argmax(a, 1), 1), 1)", {&m})});
  CheckAll(np, cases);
}

TEST(SortingTest, RefusesAnAxisThatDoesNotFitNamingIt) {
  Spec spec = SmallSpec();
  spec.allowed_mem = "4MB";
  spec.reserved_mem = "1MB";
  Array x = random::random({4, 400000}, {4, 50000}, 1, spec);  // 3.2 MB per row
  Array s = sort(x, 1);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.status().message().find("sort: axis 1 of extent 400000 must be in one chunk"),
            std::string::npos)
      << s.status().message();
  EXPECT_NE(s.status().message().find("allowed_mem"), std::string::npos) << s.status().message();
  // Along axis 0 it fits: the other axis's chunks are shrunk to fit.
  Array t = sort(x, 0);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(t.chunksize()[0], 4);
  Result<std::shared_ptr<const Plan>> p = plan({t});
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_FALSE(sort(astype(x, DTypeId::kComplex64), 0).ok());
  EXPECT_FALSE(sort(random::random({}, {}, 1, spec)).ok());
}

TEST(ScansTest, AgainstNumpy) {
  NumpyOracle np;
  np.Prelude(R"PY(
def _initial(a, ax):
    c = np.cumsum(a, axis=ax)
    z = np.zeros(a.shape[:ax] + (1,) + a.shape[ax + 1:], dtype=c.dtype)
    return np.concatenate([z, c], axis=ax)
)PY");
  std::vector<Case> cases;
  uint32_t seed = 30;
  for (DType t : {DType(DTypeId::kFloat64), DType(DTypeId::kInt32), DType(DTypeId::kUInt8),
                  DType(DTypeId::kBool), DType(DTypeId::kFloat32), DType(DTypeId::kComplex128)}) {
    for (const Shape& shape : std::vector<Shape>{{}, {0}, {13}, {6, 5}, {4, 3, 5}}) {
      const NDArray h = RandomHost(t, shape, seed++, 0.2, /*nan_only=*/true);
      const double tol = t.id() == DTypeId::kFloat32 ? 1e-4 : 1e-10;
      for (const Shape& chunks : Chunkings(shape, seed++, 1)) {
        Array x = Lazy(h, chunks);
        const std::string w =
            std::string(t.name()) + " " + ShapeToString(shape) + " chunks " + ShapeToString(chunks);
        cases.push_back({"cumsum flat " + w, cumulative_sum(x), np.Add("np.cumsum(a)", {&h}), tol});
        if (shape.empty()) continue;
        for (int axis = 0; axis < static_cast<int>(shape.size()); ++axis) {
          const std::string ax = std::to_string(axis);
          cases.push_back({"cumsum " + w + " axis " + ax, cumulative_sum(x, axis),
                           np.Add("np.cumsum(a, axis=" + ax + ")", {&h}), tol});
          cases.push_back({"cumprod " + w + " axis " + ax, cumulative_prod(x, axis),
                           np.Add("np.cumprod(a, axis=" + ax + ")", {&h}), tol});
          cases.push_back({"cumsum initial " + w + " axis " + ax,
                           cumulative_sum(x, axis, std::nullopt, true),
                           np.Add("_initial(a, " + ax + ")", {&h}), tol});
          if (!t.is_complex()) {
            cases.push_back({"nancumsum " + w + " axis " + ax, nancumsum(x, axis),
                             np.Add("np.nancumsum(a, axis=" + ax + ")", {&h}), tol});
            cases.push_back({"nancumprod " + w + " axis " + ax, nancumprod(x, axis),
                             np.Add("np.nancumprod(a, axis=" + ax + ")", {&h}), tol});
          }
          for (int n : {1, 2}) {
            cases.push_back(
                {"diff " + std::to_string(n) + " " + w + " axis " + ax, diff(x, axis, n),
                 np.Add("np.diff(a, n=" + std::to_string(n) + ", axis=" + ax + ")", {&h}), tol});
          }
        }
      }
    }
  }
  // A cumulative sum with an explicit dtype, and diff with prepend/append.
  const NDArray f = RandomHost(DTypeId::kInt16, {7, 4}, 5);
  cases.push_back({"cumsum dtype", cumulative_sum(Lazy(f, {2, 3}), 0, DType(DTypeId::kFloat32)),
                   np.Add("np.cumsum(a, axis=0, dtype=np.float32)", {&f})});
  const NDArray pre = RandomHost(DTypeId::kInt16, {7, 2}, 6);
  cases.push_back({"diff prepend append",
                   diff(Lazy(f, {3, 3}), 1, 1, Lazy(pre, {7, 1}), Lazy(pre, {2, 2})),
                   np.Add("np.diff(a, axis=1, prepend=b, append=b)", {&f, &pre})});
  CheckAll(np, cases);
  EXPECT_FALSE(diff(Lazy(f, {}), 0, -1).ok());
  EXPECT_FALSE(diff(random::random({}, {}, 1, SmallSpec())).ok());
}

TEST(ScansTest, TreeCarryReadsFewBlocksAndNeverRechunks) {
  // 64 blocks along time: every task of every op reads at most split_every
  // (<= 16) blocks per axis, and no op is an exchange (no rechunk).
  Array x = random::random({64 * 3, 10}, {3, 10}, 1, SmallSpec());
  Array c = cumulative_sum(x, 0);
  Result<std::shared_ptr<const Plan>> p = plan({c});
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  for (const PlannedOp& op : (*p)->ops()) {
    EXPECT_NE(op.node->kind, NodeKind::kExchange) << op.node->op_name;
    for (const InputMap& m : op.node->maps) {
      for (Index j = 0; j < op.node->grid.grid_shape()[0]; ++j) {
        if (m.axes[0].kind() == AxisMap::Kind::kMapped) {
          EXPECT_LE(m.axes[0].InputsFor(j).size(), 16u);
        }
      }
    }
  }
  NDArray got = Compute(c);
  NDArray whole = Compute(x);
  for (Index j = 0; j < 10; ++j) {
    double s = 0;
    for (Index i = 0; i < 192; ++i) {
      s += whole.data_as<double>()[i * 10 + j];
      ASSERT_NEAR(got.data_as<double>()[i * 10 + j], s, 1e-9);
    }
  }
}

TEST(ScansTest, DiffReadsTwoBlocksAndCopiesNeither) {
  // diff along a chunked axis: each task reads its block into the output and
  // one row of the next, with no assembled copy of the block; values against
  // the element-wise difference, over a ragged last block, along the first
  // and the last axis.
  const Shape shape = {2300, 400};  // 1.6 MB blocks
  Array x = random::random(shape, {500, 400}, 3, SmallSpec());
  const NDArray whole = Compute(x);
  for (int axis : {0, 1}) {
    Array xi = axis == 0 ? x : x.rechunk({2300, 70});
    auto rec = std::make_shared<testing_util::RecordingCallback>();
    ComputeOptions options;
    options.callbacks.push_back(rec);
    Result<NDArray> got = compute(diff(xi, axis), options);
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    rec->ExpectWithinBudget();
    const int64_t block = xi.node()->max_block_bytes();
    int diff_tasks = 0;
    for (const TaskEndEvent& e : rec->events) {
      if (e.op_name != "diff") continue;
      ++diff_tasks;
      // reserved_mem (1MB) + two input blocks + the output block.
      EXPECT_LE(e.projected_mem, 3 * block + (int64_t{1} << 20))
          << "block " << ShapeToString(e.block);
    }
    EXPECT_GT(diff_tasks, 1);
    Shape out_shape = shape;
    out_shape[axis] -= 1;
    ASSERT_EQ(got->shape(), out_shape);
    for (Index i = 0; i < out_shape[0]; ++i) {
      for (Index j = 0; j < out_shape[1]; ++j) {
        const Index lo = i * shape[1] + j;
        const Index hi = axis == 0 ? lo + shape[1] : lo + 1;
        const double want = whole.data_as<double>()[hi] - whole.data_as<double>()[lo];
        ASSERT_EQ(got->data_as<double>()[i * out_shape[1] + j], want) << i << " " << j;
      }
    }
  }
}

TEST(ScansTest, DiffAndCumsumOfZarrDecodeIntoTheOutput) {
  // Over a blosc Zarr source chunked along the axis (issue 16's climate
  // layout, small): diff decodes each chunk once, into its output block,
  // plus one row of the next chunk (its blosc blocks, not the chunk), and the
  // final pass of cumulative_sum decodes into its output too; so no task
  // holds two decoded blocks. Values against the computation from memory.
  TempDir dir;
  const Shape shape = {6 * 20 + 1, 100, 250}, chunks = {20, 100, 250};  // 4 MB chunks
  const std::string path = dir.path() + "/x.zarr";
  Result<NDArray> w = compute(to_zarr(random::random(shape, chunks, 9), path));
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  Spec spec = SmallSpec();
  spec.workers = 1;
  spec.backup_tasks = false;  // bytes read are counted
  Array x = from_zarr(path, spec);
  ASSERT_TRUE(x.ok()) << x.status().ToString();
  const int64_t block = x.node()->max_block_bytes();
  const NDArray whole = Compute(x);
  for (bool cumsum : {false, true}) {
    auto rec = std::make_shared<testing_util::RecordingCallback>();
    ComputeOptions options;
    options.callbacks.push_back(rec);
    Array y = cumsum ? cumulative_sum(x, 0) : diff(x, 0);
    Result<NDArray> got = compute(y, options);
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    rec->ExpectWithinBudget();
    for (const TaskEndEvent& e : rec->events) {
      if (e.op_name != "diff" && e.op_name != "cumulative_sum") continue;
      // The output block and the encoded chunk being decoded into it (or
      // the one row and its blosc blocks): never a second decoded block
      // (which made three blocks).
      EXPECT_LT(e.measured_peak, 5 * block / 2) << e.op_name << " " << ShapeToString(e.block);
    }
    if (!cumsum) {
      // Each chunk read once, and the blosc blocks holding the first row of
      // six of them again (every chunk but the first twice, before).
      Result<StoreAndPrefix> at = OpenStoreUrl(path, false);
      ASSERT_TRUE(at.ok());
      Result<std::shared_ptr<ZarrArray>> z = ZarrArray::Open(at->store, at->prefix);
      ASSERT_TRUE(z.ok());
      Result<ZarrArray::StoredChunks> stored = (*z)->CountStoredChunks();
      ASSERT_TRUE(stored.ok());
      EXPECT_LT(rec->summary.zarr_bytes_read, stored->bytes * 3 / 2);
    }
    const Array from_memory = Lazy(whole, chunks);
    NDArray want = Compute(cumsum ? cumulative_sum(from_memory, 0) : diff(from_memory, 0));
    ExpectArrayNear(*got, want, 0, 0, cumsum ? "cumsum" : "diff");
  }
}

TEST(SearchingTest, AgainstNumpy) {
  NumpyOracle np;
  std::vector<Case> cases;
  NDArray sorted_h = RandomHost(DTypeId::kFloat64, {11}, 1, 0.1, true);
  std::sort(sorted_h.data_as<double>(), sorted_h.data_as<double>() + 11,
            [](double a, double b) { return a < b || (std::isnan(b) && !std::isnan(a)); });
  const NDArray q = RandomHost(DTypeId::kFloat64, {4, 5}, 2, 0.1, true);
  const NDArray qi = RandomHost(DTypeId::kInt32, {7}, 3);
  for (const Shape& chunks : Chunkings({4, 5}, 4, 1)) {
    Array x1 = Lazy(sorted_h, {4});
    cases.push_back({"searchsorted left", searchsorted(x1, Lazy(q, chunks)),
                     np.Add("np.searchsorted(a, b)", {&sorted_h, &q})});
    cases.push_back({"searchsorted right", searchsorted(x1, Lazy(q, chunks), SearchSide::kRight),
                     np.Add("np.searchsorted(a, b, side='right')", {&sorted_h, &q})});
  }
  cases.push_back({"searchsorted int in float", searchsorted(Lazy(sorted_h, {3}), Lazy(qi, {3})),
                   np.Add("np.searchsorted(a, b)", {&sorted_h, &qi})});
  const NDArray unsorted = RandomHost(DTypeId::kFloat64, {9}, 5);
  Array order = argsort(Lazy(unsorted, {4}));
  cases.push_back(
      {"searchsorted sorter",
       searchsorted(Lazy(unsorted, {4}), Lazy(q, {2, 2}), SearchSide::kLeft, order),
       np.Add("np.searchsorted(a, b, sorter=np.argsort(a, kind='stable'))", {&unsorted, &q})});
  const NDArray pool = RandomHost(DTypeId::kInt32, {3, 4}, 6);
  const NDArray xs = RandomHost(DTypeId::kInt32, {5, 6}, 7);
  const NDArray xf = RandomHost(DTypeId::kFloat64, {6}, 8, 0.3, true);
  cases.push_back(
      {"isin", isin(Lazy(xs, {2, 4}), Lazy(pool, {2, 2})), np.Add("np.isin(a, b)", {&xs, &pool})});
  cases.push_back({"isin invert", isin(Lazy(xs, {3, 3}), Lazy(pool, {1, 4}), true),
                   np.Add("np.isin(a, b, invert=True)", {&xs, &pool})});
  cases.push_back(
      {"isin with NaN", isin(Lazy(xf, {4}), Lazy(xf, {2})), np.Add("np.isin(a, a)", {&xf})});
  const NDArray empty = RandomHost(DTypeId::kInt32, {0}, 9);
  cases.push_back({"isin empty", isin(Lazy(xs, {3, 3}), Lazy(empty, {1})),
                   np.Add("np.isin(a, b)", {&xs, &empty})});
  CheckAll(np, cases);
  EXPECT_FALSE(searchsorted(Lazy(q, {}), Lazy(q, {})).ok());
}

TEST(SetFunctionsTest, AgainstNumpy) {
  NumpyOracle np;
  struct U {
    std::string what;
    UniqueAll got;
    int id;
  };
  std::vector<U> cases;
  uint32_t seed = 40;
  for (DType t : {DType(DTypeId::kInt16), DType(DTypeId::kFloat64), DType(DTypeId::kBool),
                  DType(DTypeId::kFloat32)}) {
    for (const Shape& shape : std::vector<Shape>{{}, {0}, {17}, {6, 7}, {3, 4, 5}}) {
      const NDArray h = RandomHost(t, shape, seed++, 0.15);
      for (const Shape& chunks : Chunkings(shape, seed++, 1)) {
        cases.push_back({std::string(t.name()) + " " + ShapeToString(shape) + " chunks " +
                             ShapeToString(chunks),
                         unique_all(Lazy(h, chunks)),
                         np.Add("(lambda u: (u[0], u[1], u[2].reshape(a.shape), u[3]))(np.unique("
                                "a, return_index=True, return_inverse=True, return_counts=True, "
                                "equal_nan=False))",
                                {&h})});
      }
    }
  }
  np.Run();
  for (U& c : cases) {
    std::vector<NDArray> want = np.Result(c.id);
    ASSERT_EQ(want.size(), 4u) << c.what << ": " << np.Error(c.id);
    const Array* got[] = {&c.got.values, &c.got.indices, &c.got.inverse_indices, &c.got.counts};
    const char* names[] = {"values", "indices", "inverse_indices", "counts"};
    for (int i = 0; i < 4; ++i) {
      ASSERT_TRUE(got[i]->ok()) << c.what << ": " << got[i]->status().ToString();
      ExpectArrayNear(Compute(*got[i]), want[i], 0, 0, c.what + " " + names[i], i == 0);
    }
  }
  // The other three agree with unique_all.
  const NDArray h = RandomHost(DTypeId::kInt8, {8, 9}, 3);
  Array x = Lazy(h, {3, 4});
  UniqueAll all = unique_all(x);
  ExpectArrayNear(Compute(unique_values(x)), Compute(all.values), 0, 0, "unique_values");
  UniqueCounts uc = unique_counts(x);
  ExpectArrayNear(Compute(uc.counts), Compute(all.counts), 0, 0, "unique_counts");
  UniqueInverse ui = unique_inverse(x);
  ExpectArrayNear(Compute(ui.inverse_indices), Compute(all.inverse_indices), 0, 0,
                  "unique_inverse");
  EXPECT_FALSE(unique_values(astype(x, DTypeId::kComplex64)).ok());
}

}  // namespace
}  // namespace strata
