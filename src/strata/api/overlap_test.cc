// pad, map_overlap and apply_gufunc against numpy: every pad mode (widths
// larger than the axis included), map_overlap's boundaries with depths
// smaller and larger than a block (and the axis), asymmetric depths, trim
// off, several arrays, empty and 0-d arrays, and gufunc signatures with
// broadcast loop dimensions, chunked core dimensions and several outputs;
// the errors each names (op, block, executor).
#include <gtest/gtest.h>

#include <atomic>
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

TEST(PadTest, AgainstNumpy) {
  NumpyOracle np;
  // Periodic wrap. numpy's mode='wrap' agrees while the widths are at most
  // the axis; past that it pads one side from the other side's padding
  // (np.pad(np.arange(5), (7, 3), 'wrap') starts 1 2 0 ...), where Strata
  // keeps wrapping around the array (3 4 0 ...).
  np.Prelude(R"PY(
def _wrap(a, widths):
    w = np.broadcast_to(np.asarray(widths), (a.ndim, 2))
    for ax in range(a.ndim):
        n = a.shape[ax]
        a = np.take(a, np.arange(-w[ax][0], n + w[ax][1]) % n, axis=ax)
    return a
)PY");
  struct Case {
    std::string what;
    Array got;
    int id;
  };
  std::vector<Case> cases;
  const std::vector<std::pair<PadMode, const char*>> modes = {{PadMode::kConstant, "constant"},
                                                              {PadMode::kEdge, "edge"},
                                                              {PadMode::kReflect, "reflect"},
                                                              {PadMode::kSymmetric, "symmetric"},
                                                              {PadMode::kWrap, "wrap"}};
  uint32_t seed = 1;
  for (const Shape& shape : std::vector<Shape>{{1}, {5}, {4, 6}, {3, 2, 4}}) {
    const NDArray h = RandomHost(DTypeId::kFloat64, shape, seed++);
    for (const Shape& chunks : Chunkings(shape, seed++, 1)) {
      for (auto [mode, name] : modes) {
        for (auto widths : std::vector<std::vector<std::pair<Index, Index>>>{
                 {{1, 2}}, {{0, 0}}, {{7, 3}}, {{2, 0}, {0, 5}, {1, 1}}}) {
          if (widths.size() > 1 && widths.size() != shape.size()) continue;
          std::string w = "(";
          for (auto [b, a] : widths) w += "(" + std::to_string(b) + "," + std::to_string(a) + "),";
          w += ")";
          if (widths.size() == 1)
            w = "(" + std::to_string(widths[0].first) + "," + std::to_string(widths[0].second) +
                ")";
          Array got = pad(Lazy(h, chunks), widths, mode, Scalar(-9.5));
          std::string extra = mode == PadMode::kConstant ? ", constant_values=-9.5" : "";
          const std::string expr = mode == PadMode::kWrap
                                       ? "_wrap(a, " + w + ")"
                                       : "np.pad(a, " + w + ", mode='" + name + "'" + extra + ")";
          cases.push_back({std::string(name) + " " + w + " " + ShapeToString(shape) + " chunks " +
                               ShapeToString(chunks),
                           got, np.Add(expr, {&h})});
        }
      }
    }
  }
  // Integers and bools keep their dtype; the constant is cast.
  const NDArray hi = RandomHost(DTypeId::kInt16, {5, 3}, 9);
  cases.push_back({"int16 constant", pad(Lazy(hi, {2, 2}), {{1, 1}}, PadMode::kConstant, Scalar(7)),
                   np.Add("np.pad(a, 1, constant_values=7)", {&hi})});
  np.Run();
  for (Case& c : cases) {
    ASSERT_TRUE(c.got.ok()) << c.what << ": " << c.got.status().ToString();
    ExpectArrayNear(Compute(c.got), np.First(c.id), 0, 0, c.what + " = " + np.expr(c.id));
  }
  Array x = random::random({0, 3}, {1, 3}, 1, SmallSpec());
  EXPECT_FALSE(pad(x, {{1, 1}}, PadMode::kEdge).ok());
  EXPECT_TRUE(pad(x, {{1, 1}}, PadMode::kConstant).ok());
  EXPECT_FALSE(pad(x, {{-1, 1}}).ok());
  EXPECT_FALSE(pad(x, {{1, 1}, {1, 1}, {1, 1}}).ok());
  // A padded block reads only its neighbours: edge pads read the edge blocks.
  Array big = pad(random::random({100}, {10}, 1, SmallSpec()), {{3, 3}}, PadMode::kReflect);
  ASSERT_TRUE(big.ok());
  for (Index j = 0; j < big.chunks().grid_shape()[0]; ++j) {
    EXPECT_LE(big.node()->maps[0].axes[0].InputsFor(j).size(), 1u);
  }
}

// A 3 x 3 mean over the extended block (elements without a full
// neighbourhood in it are copied).
Result<NDArray> Mean3x3(std::span<const ConstArrayView> blocks, const BlockInfo&,
                        MemoryPool& pool) {
  const ConstArrayView& e = blocks[0];
  NDArray in = *NDArray::CopyOf(pool, e);
  STRATA_ASSIGN_OR_RETURN(NDArray out, NDArray::CopyOf(pool, e));
  const Index n = e.shape()[0], m = e.shape()[1];
  const double* a = in.data_as<double>();
  double* o = out.data_as<double>();
  for (Index i = 1; i + 1 < n; ++i) {
    for (Index j = 1; j + 1 < m; ++j) {
      double s = 0;
      for (Index di = -1; di <= 1; ++di) {
        for (Index dj = -1; dj <= 1; ++dj) s += a[(i + di) * m + j + dj];
      }
      o[i * m + j] = s / 9;
    }
  }
  return out;
}

constexpr const char* kOverlapPrelude = R"PY(
def _mean3(a, mode, c=0.0):
    if mode == 'none':
        out = a.copy()
        p = a
        n, m = a.shape
        for i in range(1, n - 1):
            for j in range(1, m - 1):
                out[i, j] = p[i-1:i+2, j-1:j+2].sum() / 9
        return out
    p = np.pad(a, 1, mode=mode, constant_values=c) if mode == 'constant' else np.pad(a, 1, mode=mode)
    n, m = a.shape
    out = np.empty_like(a)
    for i in range(n):
        for j in range(m):
            out[i, j] = p[i:i+3, j:j+3].sum() / 9
    return out
)PY";

TEST(MapOverlapTest, AgainstNumpy) {
  NumpyOracle np;
  np.Prelude(kOverlapPrelude);
  struct Case {
    std::string what;
    Array got;
    int id;
  };
  std::vector<Case> cases;
  const std::vector<std::pair<Boundary, const char*>> boundaries = {
      {Boundary::kNone, "none"},
      {Boundary::kConstant, "constant"},
      {Boundary::kNearest, "edge"},
      {Boundary::kReflect, "symmetric"},
      {Boundary::kPeriodic, "wrap"}};
  const NDArray h = RandomHost(DTypeId::kFloat64, {9, 8}, 3);
  for (const Shape& chunks : std::vector<Shape>{{9, 8}, {3, 4}, {2, 3}, {4, 1}}) {
    for (auto [b, name] : boundaries) {
      OverlapOptions o;
      o.depth = {1};
      o.boundary = {b};
      o.constant_value = Scalar(0.5);
      // kNone: no halo past the array's edges, so the edge elements are
      // copied (as _mean3's 'none' does) and the rest sees its neighbours.
      Array got = map_overlap(Mean3x3, Lazy(h, chunks), DTypeId::kFloat64, o);
      cases.push_back({std::string(name) + " chunks " + ShapeToString(chunks), got,
                       np.Add(std::string("_mean3(a, '") + name + "', 0.5)", {&h})});
    }
  }
  // A depth larger than a block: the halo comes from several blocks.
  OverlapOptions deep;
  deep.depth = {3, 1};
  deep.boundary = {Boundary::kPeriodic};
  Array deep_got = map_overlap(Mean3x3, Lazy(h, {2, 2}), DTypeId::kFloat64, deep);
  cases.push_back({"depth 3 periodic", deep_got, np.Add("_mean3(a, 'wrap')", {&h})});
  np.Run();
  for (Case& c : cases) {
    ASSERT_TRUE(c.got.ok()) << c.what << ": " << c.got.status().ToString();
    ExpectArrayNear(Compute(c.got), np.First(c.id), 1e-12, 1e-12, c.what);
    EXPECT_EQ(c.got.shape(), Shape({9, 8}));
  }
  // trim = false: the function trims its block itself (Dask's trim=False),
  // here keeping the element after each block's last (or 0 at the end).
  OverlapOptions keep;
  keep.depth = {0, 1};
  keep.depth_after = {1, 0};
  keep.boundary = {Boundary::kNone};
  keep.trim = false;
  Array next = map_overlap(
      [](std::span<const ConstArrayView> b, const BlockInfo& info,
         MemoryPool& pool) -> Result<NDArray> {
        // The extended block: no halo before along axis 0, one after (none
        // past the end); one before along axis 1 (none before the start).
        const ConstArrayView& e = b[0];
        Box shifted(Shape(2), info.box.shape);
        shifted.origin[0] = 1;
        shifted.origin[1] = e.shape()[1] - info.box.shape[1];
        shifted.shape[0] = std::min(info.box.shape[0], e.shape()[0] - 1);
        STRATA_ASSIGN_OR_RETURN(NDArray out,
                                NDArray::Zeros(pool, DTypeId::kFloat64, info.box.shape));
        CopyArray(e.Slice(shifted), out.view().Slice(Box(Shape(2), shifted.shape)));
        return out;
      },
      Lazy(h, {3, 4}), DTypeId::kFloat64, keep);
  ASSERT_TRUE(next.ok()) << next.status().ToString();
  EXPECT_EQ(next.chunks().AxisChunkSizes(0), (std::vector<Index>{3, 3, 3}));
  NumpyOracle more;  // a second Python process: `np` has run
  const int next_id = more.Add("np.concatenate([a[1:], np.zeros((1, 8))])", {&h});
  // Several arrays of one shape, unified chunks: x + y over a 1-deep halo
  // (a periodic sum of neighbours along axis 0).
  const NDArray h2 = RandomHost(DTypeId::kFloat64, {9, 8}, 4);
  OverlapOptions two;
  two.depth = {1, 0};
  two.boundary = {Boundary::kPeriodic};
  Array summed = map_overlap(
      [](std::span<const ConstArrayView> b, const BlockInfo&, MemoryPool& pool) -> Result<NDArray> {
        STRATA_ASSIGN_OR_RETURN(NDArray out, NDArray::CopyOf(pool, b[0]));
        NDArray y = *NDArray::CopyOf(pool, b[1]);
        const Index n = out.shape()[0], m = out.shape()[1];
        NDArray x = *NDArray::CopyOf(pool, b[0]);
        for (Index i = 1; i + 1 < n; ++i) {
          for (Index j = 0; j < m; ++j) {
            out.data_as<double>()[i * m + j] =
                x.data_as<double>()[(i - 1) * m + j] + y.data_as<double>()[(i + 1) * m + j];
          }
        }
        return out;
      },
      std::vector<Array>{Lazy(h, {2, 8}), Lazy(h2, {4, 3})}, DTypeId::kFloat64, two);
  ASSERT_TRUE(summed.ok()) << summed.status().ToString();
  const int summed_id = more.Add("np.roll(a, 1, axis=0) + np.roll(b, -1, axis=0)", {&h, &h2});
  more.Run();
  ExpectArrayNear(Compute(next), more.First(next_id), 0, 0, "trim=false");
  ExpectArrayNear(Compute(summed), more.First(summed_id), 1e-12, 1e-12, "two arrays");
  // A function returning the wrong shape is named with its block.
  OverlapOptions o;
  o.depth = {1};
  o.name = "map_overlap-tiny";
  Array wrong = map_overlap(
      [](std::span<const ConstArrayView> b, const BlockInfo&, MemoryPool& pool) {
        return NDArray::Zeros(pool, DTypeId::kFloat64, {1, 1});
      },
      Lazy(h, {3, 4}), DTypeId::kFloat64, o);
  Result<NDArray> r = compute(wrong);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("map_overlap-tiny: the function returned a float64 block "
                                      "of shape (1, 1) for block "),
            std::string::npos)
      << r.status().message();
  EXPECT_NE(r.status().message().find("the block with its halo"), std::string::npos);
  // An error of the function is named with the op and the block.
  Array failing = map_overlap(
      [](std::span<const ConstArrayView>, const BlockInfo&, MemoryPool&) -> Result<NDArray> {
        return InvalidArgumentError("no luck");
      },
      Lazy(h, {3, 4}), DTypeId::kFloat64, o);
  r = compute(failing);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("map_overlap-tiny: block "), std::string::npos)
      << r.status().message();
  EXPECT_NE(r.status().message().find("no luck"), std::string::npos) << r.status().message();
  auto invalid = [](const Array& x, const std::string& text) {
    ASSERT_FALSE(x.ok());
    EXPECT_EQ(x.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(x.status().message().find(text), std::string::npos) << x.status().message();
  };
  o.depth = {-1};
  invalid(map_overlap(Mean3x3, Lazy(h, {3, 4}), DTypeId::kFloat64, o),
          "map_overlap-tiny: depth -1 along axis 0 is negative");
  o.depth = {1, 1, 1};
  invalid(map_overlap(Mean3x3, Lazy(h, {3, 4}), DTypeId::kFloat64, o),
          "map_overlap-tiny: depth: 3 values given for an array of rank 2");
  o.depth = {1};
  invalid(map_overlap(Mean3x3, std::vector<Array>{Lazy(h, {3, 4}), Lazy(h, {3, 4}).T()},
                      DTypeId::kFloat64, o),
          "array 1 has shape (8, 9) but array 0 has shape (9, 8)");
  invalid(map_overlap(Mean3x3, std::vector<Array>{}, DTypeId::kFloat64, o), "no arrays given");
  o.calling_process_only = "calls a Python function";
  Spec procs = SmallSpec();
  procs.executor = ExecutorKind::kProcesses;
  invalid(map_overlap(Mean3x3, random::random({9, 8}, {3, 4}, 1, procs), DTypeId::kFloat64, o),
          "map_overlap-tiny: the function calls a Python function, so it cannot run on the "
          "processes executor");
}

// Empty arrays never call the function; 0-d arrays and arrays of one block
// get it once; a halo deeper than the whole axis wraps around it again.
TEST(MapOverlapTest, EdgeShapes) {
  int calls = 0;
  auto copy = [&calls](std::span<const ConstArrayView> b, const BlockInfo&, MemoryPool& pool) {
    ++calls;
    return NDArray::CopyOf(pool, b[0]);
  };
  OverlapOptions o;
  o.depth = {2};
  o.boundary = {Boundary::kNearest};
  Array empty = map_overlap(copy, random::random({0, 5}, {1, 2}, 1, SmallSpec()),
                            DTypeId::kFloat64, o);
  ASSERT_TRUE(empty.ok()) << empty.status().ToString();
  EXPECT_EQ(empty.shape(), Shape({0, 5}));
  EXPECT_EQ(Compute(empty).num_elements(), 0);
  EXPECT_EQ(calls, 0);
  const NDArray s = RandomHost(DTypeId::kFloat64, {}, 5);
  Array scalar = map_overlap(copy, Lazy(s, {}), DTypeId::kFloat64, o);
  ASSERT_TRUE(scalar.ok()) << scalar.status().ToString();
  ExpectArrayNear(Compute(scalar), s, 0, 0, "0-d");
  EXPECT_EQ(calls, 1);
  // One block of 3, a periodic halo of 7 each side: the function sees
  // 17 elements (the axis wrapped around), and returns the middle 3.
  const NDArray line = RandomHost(DTypeId::kFloat64, {3}, 6);
  OverlapOptions deep;
  deep.depth = {7};
  deep.boundary = {Boundary::kPeriodic};
  Index seen = 0;
  Array wrapped = map_overlap(
      [&seen](std::span<const ConstArrayView> b, const BlockInfo&, MemoryPool& pool) {
        seen = b[0].shape()[0];
        return NDArray::CopyOf(pool, b[0]);
      },
      Lazy(line, {3}), DTypeId::kFloat64, deep);
  ExpectArrayNear(Compute(wrapped), line, 0, 0, "deep periodic halo");
  EXPECT_EQ(seen, 17);
}

TEST(GufuncTest, AgainstNumpy) {
  NumpyOracle np;
  struct Case {
    std::string what;
    Array got;
    int id;
  };
  std::vector<Case> cases;
  const NDArray a = RandomHost(DTypeId::kFloat64, {4, 5, 6}, 1);
  const NDArray v = RandomHost(DTypeId::kFloat64, {6}, 2);
  const NDArray m = RandomHost(DTypeId::kFloat64, {4, 1, 6}, 3);
  // "(t)->()": the mean of each row.
  auto mean = [](std::span<const ConstArrayView> in, const BlockInfo& info,
                 MemoryPool& pool) -> Result<NDArray> {
    STRATA_ASSIGN_OR_RETURN(NDArray out,
                            NDArray::Allocate(pool, DTypeId::kFloat64, info.box.shape));
    NDArray x = *NDArray::CopyOf(pool, in[0]);
    const Index t = x.shape().back();
    for (Index i = 0; i < out.num_elements(); ++i) {
      double s = 0;
      for (Index k = 0; k < t; ++k) s += x.data_as<double>()[i * t + k];
      out.data_as<double>()[i] = s / t;
    }
    return out;
  };
  // "(i),(i)->()": dot products, with broadcasting of the loop dimensions.
  auto dot = [](std::span<const ConstArrayView> in, const BlockInfo& info,
                MemoryPool& pool) -> Result<NDArray> {
    STRATA_ASSIGN_OR_RETURN(NDArray out,
                            NDArray::Allocate(pool, DTypeId::kFloat64, info.box.shape));
    NDArray x = *NDArray::CopyOf(pool, in[0]);
    NDArray y = *NDArray::CopyOf(pool, in[1]);
    const Index n = x.shape().back();
    for (Index i = 0; i < out.num_elements(); ++i) {
      double s = 0;
      for (Index k = 0; k < n; ++k)
        s += x.data_as<double>()[i * n + k] * y.data_as<double>()[i * n + k];
      out.data_as<double>()[i] = s;
    }
    return out;
  };
  for (const Shape& chunks : Chunkings({4, 5, 6}, 4, 2)) {
    cases.push_back({"mean " + ShapeToString(chunks),
                     apply_gufunc(mean, "(t)->()", {Lazy(a, chunks)}, DTypeId::kFloat64),
                     np.Add("a.mean(axis=-1)", {&a})});
    cases.push_back(
        {"dot " + ShapeToString(chunks),
         apply_gufunc(dot, "(i),(i)->()", {Lazy(a, chunks), Lazy(v, {4})}, DTypeId::kFloat64),
         np.Add("(a * b).sum(axis=-1)", {&a, &v})});
    cases.push_back({"dot broadcast " + ShapeToString(chunks),
                     apply_gufunc(dot, "(i), (i) -> ()", {Lazy(m, {2, 1, 3}), Lazy(a, chunks)},
                                  DTypeId::kFloat64),
                     np.Add("(a * b).sum(axis=-1)", {&m, &a})});
  }
  // A new output dimension.
  auto twice = [](std::span<const ConstArrayView> in, const BlockInfo& info,
                  MemoryPool& pool) -> Result<NDArray> {
    STRATA_ASSIGN_OR_RETURN(NDArray out,
                            NDArray::Allocate(pool, DTypeId::kFloat64, info.box.shape));
    NDArray x = *NDArray::CopyOf(pool, in[0]);
    for (Index i = 0; i < x.num_elements(); ++i) {
      out.data_as<double>()[2 * i] = x.data_as<double>()[i];
      out.data_as<double>()[2 * i + 1] = -x.data_as<double>()[i];
    }
    return out;
  };
  cases.push_back(
      {"new output dim",
       apply_gufunc(twice, "()->(k)", {Lazy(a, {2, 2, 2})}, DTypeId::kFloat64, {{"k", 2}}),
       np.Add("np.stack([a, -a], axis=-1)", {&a})});
  np.Run();
  for (Case& c : cases) {
    ASSERT_TRUE(c.got.ok()) << c.what << ": " << c.got.status().ToString();
    ExpectArrayNear(Compute(c.got), np.First(c.id), 1e-12, 1e-12, c.what);
  }
  auto invalid = [](const Array& x, const std::string& text) {
    ASSERT_FALSE(x.ok());
    EXPECT_NE(x.status().message().find(text), std::string::npos) << x.status().message();
  };
  Array x = Lazy(a, {2, 2, 2});
  invalid(apply_gufunc(mean, "(t)", {x}, DTypeId::kFloat64), "no '->'");
  invalid(apply_gufunc(mean, "(t->()", {x}, DTypeId::kFloat64), "malformed");
  invalid(apply_gufunc(mean, "(t),(t)->()", {x}, DTypeId::kFloat64), "2 inputs, 1 arrays");
  invalid(apply_gufunc(dot, "(i),(i)->()", {x, Lazy(RandomHost(DTypeId::kFloat64, {5}, 1), {5})},
                       DTypeId::kFloat64),
          "core dimension 'i' has sizes 6 and 5");
  invalid(apply_gufunc(mean, "(t)->(k)", {x}, DTypeId::kFloat64), "output dimension 'k'");
  invalid(apply_gufunc(mean, "(a,b,c,d)->()", {x}, DTypeId::kFloat64), "fewer axes");
  // A function returning a block of the wrong shape (its input, core axis
  // and all, where "(t)->()" wants the loop dimensions only) is named with
  // its block. (It must not write past the block it allocates: `twice` with
  // this signature would write 2 * 24 values into a (2, 2) block, a bug of
  // the function the library cannot catch.)
  auto unreduced = [](std::span<const ConstArrayView> in, const BlockInfo&, MemoryPool& pool) {
    return NDArray::CopyOf(pool, in[0]);
  };
  Result<NDArray> bad = compute(apply_gufunc(unreduced, "(t)->()", {x}, DTypeId::kFloat64));
  ASSERT_FALSE(bad.ok());
  // (Which block fails first depends on the threads: (2, 2) or (2, 1).)
  for (const char* part : {"apply_gufunc: the function returned a float64 block of shape (2, ",
                           ", 6) for block ", ", expected float64 of shape (2, "}) {
    EXPECT_NE(bad.status().message().find(part), std::string::npos) << bad.status().message();
  }
}

// Several outputs of different dtypes and core shapes, from one call per
// block; refusals of allow_rechunk = false and of outputs miscounted.
TEST(GufuncTest, SeveralOutputs) {
  const NDArray a = RandomHost(DTypeId::kFloat64, {5, 7, 6}, 11);
  std::atomic<int> calls{0};
  // "(t)->(),(t),()": the row's max (float64), the row's ranks in reverse
  // (int32), and whether the row's first element is its max (bool).
  GufuncFunction stats = [&calls](std::span<const ConstArrayView> in, const BlockInfo& loop,
                                  MemoryPool& pool) -> Result<std::vector<NDArray>> {
    ++calls;
    NDArray x = *NDArray::CopyOf(pool, in[0]);
    const Index t = x.shape().back();
    Shape with_t = loop.box.shape;
    with_t.push_back(t);
    STRATA_ASSIGN_OR_RETURN(NDArray mx, NDArray::Allocate(pool, DTypeId::kFloat64, loop.box.shape));
    STRATA_ASSIGN_OR_RETURN(NDArray rev, NDArray::Allocate(pool, DTypeId::kInt32, with_t));
    STRATA_ASSIGN_OR_RETURN(NDArray first, NDArray::Allocate(pool, DTypeId::kBool, loop.box.shape));
    for (Index i = 0; i < mx.num_elements(); ++i) {
      const double* row = x.data_as<double>() + i * t;
      double m = row[0];
      for (Index k = 0; k < t; ++k) {
        m = std::max(m, row[k]);
        rev.data_as<int32_t>()[i * t + k] = static_cast<int32_t>(t - 1 - k);
      }
      mx.data_as<double>()[i] = m;
      first.data_as<bool>()[i] = row[0] == m;
    }
    std::vector<NDArray> out;
    out.push_back(std::move(mx));
    out.push_back(std::move(rev));
    out.push_back(std::move(first));
    return out;
  };
  GufuncOptions options;
  options.name = "apply_gufunc-stats";
  for (const Shape& chunks : Chunkings({5, 7, 6}, 12, 2)) {
    calls = 0;
    // The calls are counted: a straggler's backup (on a loaded machine)
    // would call the function a second time for its block.
    Spec spec = SmallSpec();
    spec.backup_tasks = false;
    std::vector<Array> got =
        apply_gufunc(stats, "(t)->(),(t),()", {asarray(Copy(a), chunks, spec)},
                     {DTypeId::kFloat64, DTypeId::kInt32, DTypeId::kBool}, options);
    ASSERT_EQ(got.size(), 3u);
    for (const Array& g : got) ASSERT_TRUE(g.ok()) << g.status().ToString();
    EXPECT_EQ(got[1].dtype(), DType(DTypeId::kInt32));
    Result<std::vector<NDArray>> r = compute(got);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    // One call per loop block, whatever the number of outputs.
    const Index loop_blocks = (5 + chunks[0] - 1) / chunks[0] * ((7 + chunks[1] - 1) / chunks[1]);
    EXPECT_EQ(calls.load(), loop_blocks) << ShapeToString(chunks);
    NumpyOracle check;
    const int mx = check.Add("a.max(axis=-1)", {&a});
    const int rev = check.Add("np.broadcast_to(np.arange(5, -1, -1, dtype=np.int32), a.shape)",
                              {&a});
    const int first = check.Add("a[..., 0] == a.max(axis=-1)", {&a});
    check.Run();
    ExpectArrayNear((*r)[0], check.First(mx), 0, 0, "max " + ShapeToString(chunks));
    ExpectArrayNear((*r)[1], check.First(rev), 0, 0, "reversed ranks");
    ExpectArrayNear((*r)[2], check.First(first), 0, 0, "first is max");
  }
  auto invalid = [](const Array& x, StatusCode code, const std::string& text) {
    ASSERT_FALSE(x.ok());
    EXPECT_EQ(x.status().code(), code);
    EXPECT_NE(x.status().message().find(text), std::string::npos) << x.status().message();
  };
  // Core dimensions in several chunks, refused without allow_rechunk.
  GufuncOptions strict = options;
  strict.allow_rechunk = false;
  invalid(apply_gufunc(stats, "(t)->(),(t),()", {Lazy(a, {2, 2, 4})},
                       {DTypeId::kFloat64, DTypeId::kInt32, DTypeId::kBool}, strict)[0],
          StatusCode::kInvalidArgument,
          "apply_gufunc-stats: core dimension 't' of input 0 is in 2 chunks; rechunk it into one "
          "chunk along axis 2 or allow rechunking");
  EXPECT_TRUE(apply_gufunc(stats, "(t)->(),(t),()", {Lazy(a, {2, 2, 6})},
                           {DTypeId::kFloat64, DTypeId::kInt32, DTypeId::kBool}, strict)[0]
                  .ok());
  invalid(apply_gufunc(stats, "(t)->(),(t),()", {Lazy(a, {2, 2, 6})},
                       {DTypeId::kFloat64, DTypeId::kInt32}, options)[0],
          StatusCode::kInvalidArgument, "has 3 outputs, 2 dtypes given");
  // A function returning a block too few, or a block of the wrong dtype.
  GufuncFunction short_fn = [](std::span<const ConstArrayView> in, const BlockInfo& loop,
                               MemoryPool& pool) -> Result<std::vector<NDArray>> {
    std::vector<NDArray> out;
    STRATA_ASSIGN_OR_RETURN(NDArray b, NDArray::Zeros(pool, DTypeId::kFloat32, loop.box.shape));
    out.push_back(std::move(b));
    return out;
  };
  std::vector<Array> got =
      apply_gufunc(short_fn, "(t)->(),()", {Lazy(a, {2, 7, 6})},
                   {DTypeId::kFloat64, DTypeId::kFloat32}, options);
  Result<std::vector<NDArray>> r = compute(got);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find(
                "apply_gufunc-stats: the function returned 1 blocks for block "),
            std::string::npos)
      << r.status().message();
  EXPECT_NE(r.status().message().find("the signature has 2 outputs"), std::string::npos);
  Spec procs = SmallSpec();
  procs.executor = ExecutorKind::kMpi;
  GufuncOptions python = options;
  python.calling_process_only = "calls a Python function";
  invalid(apply_gufunc(stats, "(t)->(),(t),()", {random::random({5, 6}, {2, 6}, 1, procs)},
                       {DTypeId::kFloat64, DTypeId::kInt32, DTypeId::kBool}, python)[2],
          StatusCode::kInvalidArgument,
          "apply_gufunc-stats: the function calls a Python function, so it cannot run on the mpi "
          "executor");
}

}  // namespace
}  // namespace strata
