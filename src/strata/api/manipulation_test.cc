// Manipulation through the public API: permute_dims/transpose, expand_dims,
// squeeze, broadcast_to, concat, stack, flip and reshape, each against a
// reference written with plain loops over the whole input, over many
// chunkings (whole, ragged, size-1, random) and zero-size arrays; and bad
// input (mismatched shapes, axes out of range) giving InvalidArgument errors
// that name the problem.
#include <gtest/gtest.h>

#include <cstring>
#include <numeric>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "strata/api/api_test_util.h"
#include "strata/core/synthetic.h"
#include "strata/strata.h"

namespace strata {
namespace {

using testing_util::Chunkings;
using testing_util::Compute;
using testing_util::ForEachIndex;
using testing_util::SmallSpec;

// The test input: float64 values unique per element (the synthetic data).
Array Input(const Shape& shape, const Shape& chunks, uint64_t seed) {
  return random::random(shape, chunks, seed, SmallSpec());
}

// The same values as one NDArray.
NDArray InputValues(const Shape& shape, uint64_t seed) {
  NDArray a = *NDArray::Allocate(*MemoryPool::Default(), DTypeId::kFloat64, shape);
  ForEachIndex(shape, [&](const Shape& i) {
    a.data_as<double>()[LinearIndex(i, shape)] =
        SyntheticUniform(seed, static_cast<uint64_t>(LinearIndex(i, shape)));
  });
  return a;
}

// An array of `shape` whose element at `o` is `in` at source(o).
template <typename F>
NDArray Gathered(const NDArray& in, const Shape& shape, F source) {
  NDArray out = *NDArray::Allocate(*MemoryPool::Default(), in.dtype(), shape);
  ForEachIndex(shape, [&](const Shape& o) {
    out.data_as<double>()[LinearIndex(o, shape)] =
        in.data_as<double>()[LinearIndex(source(o), in.shape())];
  });
  return out;
}

// The same elements in C order under another shape (expand_dims, squeeze and
// reshape all keep the C-order sequence).
NDArray Reshaped(const NDArray& in, const Shape& shape) {
  NDArray out = *NDArray::CopyOf(*MemoryPool::Default(), in.view());
  out.Reshape(shape);
  return out;
}

void ExpectEqualArrays(const NDArray& got, const NDArray& want, const std::string& what) {
  ASSERT_EQ(got.dtype(), want.dtype()) << what;
  ASSERT_EQ(got.shape(), want.shape()) << what;
  EXPECT_TRUE(ArraysEqual(got.view(), want.view())) << what;
}

void ExpectInvalid(const Array& a, std::string_view text) {
  ASSERT_FALSE(a.ok()) << "expected an error containing: " << text;
  EXPECT_EQ(a.status().code(), StatusCode::kInvalidArgument) << a.status().ToString();
  EXPECT_NE(a.status().message().find(text), std::string_view::npos) << a.status().ToString();
  // compute() reports the same error.
  Result<NDArray> r = compute(a);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
}

std::string Describe(const std::string& op, const Shape& shape, const Shape& chunks) {
  return op + " of " + ShapeToString(shape) + " chunks " + ShapeToString(chunks);
}

TEST(ManipulationTest, PermuteDimsAndTranspose) {
  struct Case {
    Shape shape;
    std::vector<int> axes;
  };
  const std::vector<Case> cases = {
      {{5, 3}, {1, 0}},       {{4, 1, 6}, {2, 0, 1}},   {{4, 1, 6}, {1, 2, 0}},
      {{3, 4, 5}, {0, 2, 1}}, {{3, 4, 5}, {-1, 0, -2}}, {{7}, {0}},
      {{0, 3}, {1, 0}},       {{2, 0, 4}, {2, 1, 0}},   {{2, 3, 2, 3}, {3, 1, 0, 2}},
  };
  uint32_t seed = 0;
  for (const Case& c : cases) {
    const int rank = static_cast<int>(c.shape.size());
    std::vector<int> perm(rank);
    for (int i = 0; i < rank; ++i) perm[i] = c.axes[i] < 0 ? c.axes[i] + rank : c.axes[i];
    Shape out_shape(rank);
    for (int i = 0; i < rank; ++i) out_shape[i] = c.shape[perm[i]];
    NDArray in = InputValues(c.shape, 1);
    NDArray want = Gathered(in, out_shape, [&](const Shape& o) {
      Shape i(rank);
      for (int k = 0; k < rank; ++k) i[perm[k]] = o[k];
      return i;
    });
    std::vector<int> reversed(rank);
    std::iota(reversed.rbegin(), reversed.rend(), 0);
    Shape t_shape(c.shape.rbegin(), c.shape.rend());
    NDArray want_t =
        Gathered(in, t_shape, [&](const Shape& o) { return Shape(o.rbegin(), o.rend()); });
    for (const Shape& chunks : Chunkings(c.shape, ++seed)) {
      Array x = Input(c.shape, chunks, 1);
      Array p = permute_dims(x, c.axes);
      ASSERT_TRUE(p.ok()) << p.status().ToString();
      // Each output axis keeps the chunks of the input axis it came from.
      for (int i = 0; i < rank; ++i) {
        EXPECT_EQ(p.chunks().AxisChunkSizes(i), x.chunks().AxisChunkSizes(perm[i]));
      }
      ExpectEqualArrays(Compute(p), want, Describe("permute_dims", c.shape, chunks));
      ExpectEqualArrays(Compute(transpose(x)), want_t, Describe("transpose", c.shape, chunks));
      ExpectEqualArrays(Compute(x.T()), want_t, Describe(".T", c.shape, chunks));
      // Through an elementwise producer (fused into the permute's tasks).
      NDArray via = Compute(permute_dims(x + 0.0, c.axes));
      ExpectEqualArrays(via, want, Describe("permute_dims of x + 0", c.shape, chunks));
    }
  }
}

TEST(ManipulationTest, ExpandDimsAndSqueeze) {
  const std::vector<Shape> shapes = {{}, {7}, {5, 3}, {4, 1, 6}, {0, 3}, {1, 1}, {2, 0, 1}};
  uint32_t seed = 10;
  for (const Shape& shape : shapes) {
    const int rank = static_cast<int>(shape.size());
    NDArray in = InputValues(shape, 2);
    for (const Shape& chunks : Chunkings(shape, ++seed)) {
      Array x = Input(shape, chunks, 2);
      for (int axis = -rank - 1; axis <= rank; ++axis) {
        const int at = axis < 0 ? axis + rank + 1 : axis;
        Shape out_shape = shape;
        out_shape.insert(out_shape.begin() + at, 1);
        Array e = expand_dims(x, axis);
        ASSERT_TRUE(e.ok()) << e.status().ToString();
        EXPECT_EQ(e.shape(), out_shape);
        ExpectEqualArrays(Compute(e), Reshaped(in, out_shape),
                          Describe("expand_dims axis " + std::to_string(axis), shape, chunks));
        // squeeze undoes it.
        ExpectEqualArrays(
            Compute(squeeze(e, {at})), in,
            Describe("squeeze(expand_dims) axis " + std::to_string(at), shape, chunks));
      }
      // squeeze() drops every extent-1 axis.
      Shape squeezed;
      for (Index d : shape)
        if (d != 1) squeezed.push_back(d);
      ExpectEqualArrays(Compute(squeeze(x)), Reshaped(in, squeezed),
                        Describe("squeeze", shape, chunks));
    }
  }
  // Named negative axes.
  Array x = Input({4, 1, 6, 1}, {3, 1, 4, 1}, 3);
  NDArray in = InputValues({4, 1, 6, 1}, 3);
  ExpectEqualArrays(Compute(squeeze(x, {-1})), Reshaped(in, {4, 1, 6}), "squeeze -1");
  ExpectEqualArrays(Compute(squeeze(x, {1, -1})), Reshaped(in, {4, 6}), "squeeze 1, -1");
}

TEST(ManipulationTest, BroadcastTo) {
  struct Case {
    Shape from, to;
  };
  const std::vector<Case> cases = {
      {{3}, {4, 3}},       {{1}, {5}},       {{4, 1}, {4, 5}},
      {{1, 3}, {2, 4, 3}}, {{}, {3, 2}},     {{2, 1, 3}, {2, 4, 3}},
      {{5, 3}, {5, 3}},    {{3, 1}, {3, 0}}, {{1, 1}, {0, 2}},
      {{0}, {3, 0}},       {{1, 4}, {1, 4}},
  };
  uint32_t seed = 20;
  for (const Case& c : cases) {
    const int offset = static_cast<int>(c.to.size() - c.from.size());
    NDArray in = InputValues(c.from, 4);
    NDArray want = Gathered(in, c.to, [&](const Shape& o) {
      Shape i(c.from.size());
      for (size_t k = 0; k < c.from.size(); ++k) i[k] = c.from[k] == 1 ? 0 : o[k + offset];
      return i;
    });
    for (const Shape& chunks : Chunkings(c.from, ++seed)) {
      Array x = Input(c.from, chunks, 4);
      ExpectEqualArrays(Compute(broadcast_to(x, c.to)), want,
                        Describe("broadcast_to " + ShapeToString(c.to), c.from, chunks));
      // Explicit chunks for the output (they shape the broadcast axes).
      for (const Shape& out_chunks : Chunkings(c.to, seed + 100, 1)) {
        Array b = broadcast_to(x, c.to, out_chunks);
        ASSERT_TRUE(b.ok()) << b.status().ToString();
        for (int o = 0; o < static_cast<int>(c.to.size()); ++o) {
          const int i = o - offset;
          if ((i < 0 || c.from[i] != c.to[o]) && c.to[o] > 0) {
            EXPECT_EQ(b.chunksize()[o], std::min(out_chunks[o], c.to[o]))
                << "axis " << o << " of " << ShapeToString(c.to);
          }
        }
        ExpectEqualArrays(
            Compute(b), want,
            Describe("broadcast_to " + ShapeToString(c.to) + " chunks " + ShapeToString(out_chunks),
                     c.from, chunks));
      }
    }
  }
}

TEST(ManipulationTest, ConcatAlongEveryAxis) {
  struct Case {
    std::vector<Shape> shapes;
    int axis;
  };
  const std::vector<Case> cases = {
      {{{3}, {5}, {1}}, 0},
      {{{2, 4}, {5, 4}}, 0},
      {{{3, 2}, {3, 5}, {3, 1}}, 1},
      {{{3, 2}, {3, 5}}, -1},
      {{{2, 3, 4}, {2, 1, 4}, {2, 2, 4}}, 1},
      {{{2, 3, 4}, {2, 3, 1}}, 2},
      {{{0, 3}, {2, 3}, {0, 3}}, 0},  // zero-size pieces
      {{{0, 3}, {0, 3}}, 0},          // all empty
      {{{2, 0}, {2, 0}}, 0},          // empty along another axis
      {{{4, 3}}, 0},                  // one array
  };
  std::mt19937 rng(30);
  for (const Case& c : cases) {
    const int rank = static_cast<int>(c.shapes[0].size());
    const int a = c.axis < 0 ? c.axis + rank : c.axis;
    std::vector<NDArray> ins;
    Shape out_shape = c.shapes[0];
    out_shape[a] = 0;
    for (size_t k = 0; k < c.shapes.size(); ++k) {
      ins.push_back(InputValues(c.shapes[k], 40 + k));
      out_shape[a] += c.shapes[k][a];
    }
    NDArray want = *NDArray::Allocate(*MemoryPool::Default(), DTypeId::kFloat64, out_shape);
    ForEachIndex(out_shape, [&](const Shape& o) {
      Shape i = o;
      size_t k = 0;
      while (i[a] >= c.shapes[k][a]) i[a] -= c.shapes[k++][a];
      want.data_as<double>()[LinearIndex(o, out_shape)] =
          ins[k].data_as<double>()[LinearIndex(i, c.shapes[k])];
    });
    // Every input in its own chunking; the first one fixes the other axes.
    for (int trial = 0; trial < 5; ++trial) {
      std::vector<Array> xs;
      std::string what = "concat axis " + std::to_string(c.axis) + ":";
      for (size_t k = 0; k < c.shapes.size(); ++k) {
        Shape chunks = trial == 0 ? Shape(rank, 1) : testing_util::RandomChunks(c.shapes[k], rng);
        xs.push_back(Input(c.shapes[k], chunks, 40 + k));
        what += " " + ShapeToString(c.shapes[k]) + "/" + ShapeToString(chunks);
      }
      Array y = concat(xs, c.axis);
      ASSERT_TRUE(y.ok()) << what << ": " << y.status().ToString();
      EXPECT_EQ(y.shape(), out_shape) << what;
      ExpectEqualArrays(Compute(y), want, what);
    }
  }
}

TEST(ManipulationTest, ConcatPromotesDTypes) {
  Spec spec = SmallSpec();
  Array i = arange(0, 4, 1, {3}, DTypeId::kInt32, spec);
  Array f = full({3}, 0.5, {2}, DTypeId::kFloat64, spec);
  Array y = concat({i, f});
  ASSERT_TRUE(y.ok()) << y.status().ToString();
  EXPECT_EQ(y.dtype(), DType(DTypeId::kFloat64));
  NDArray got = Compute(y);
  const std::vector<double> want = {0, 1, 2, 3, 0.5, 0.5, 0.5};
  ASSERT_EQ(got.num_elements(), 7);
  for (Index k = 0; k < 7; ++k) EXPECT_EQ(got.data_as<double>()[k], want[k]) << k;
  // int8 with int16: int16, the int8 values converted.
  Array small = full({2, 3}, -100, {1, 2}, DTypeId::kInt8, spec);
  Array wide = full({1, 3}, 1000, {1, 3}, DTypeId::kInt16, spec);
  Array z = concat({small, wide});
  ASSERT_TRUE(z.ok()) << z.status().ToString();
  EXPECT_EQ(z.dtype(), DType(DTypeId::kInt16));
  NDArray zi = Compute(z);
  ASSERT_EQ(zi.shape(), Shape({3, 3}));
  for (Index k = 0; k < 9; ++k) EXPECT_EQ(zi.data_as<int16_t>()[k], k < 6 ? -100 : 1000) << k;
}

TEST(ManipulationTest, StackAlongEveryAxis) {
  const std::vector<Shape> shapes = {{}, {5}, {4, 3}, {0, 3}, {2, 1, 3}};
  std::mt19937 rng(50);
  for (const Shape& shape : shapes) {
    const int rank = static_cast<int>(shape.size());
    std::vector<NDArray> ins;
    for (int k = 0; k < 3; ++k) ins.push_back(InputValues(shape, 60 + k));
    for (int axis = -rank - 1; axis <= rank; ++axis) {
      const int at = axis < 0 ? axis + rank + 1 : axis;
      Shape out_shape = shape;
      out_shape.insert(out_shape.begin() + at, 3);
      NDArray want = *NDArray::Allocate(*MemoryPool::Default(), DTypeId::kFloat64, out_shape);
      ForEachIndex(out_shape, [&](const Shape& o) {
        Shape i = o;
        i.erase(i.begin() + at);
        want.data_as<double>()[LinearIndex(o, out_shape)] =
            ins[o[at]].data_as<double>()[LinearIndex(i, shape)];
      });
      for (int trial = 0; trial < 3; ++trial) {
        std::vector<Array> xs;
        std::string what = "stack axis " + std::to_string(axis) + " of " + ShapeToString(shape);
        for (int k = 0; k < 3; ++k) {
          Shape chunks = trial == 0 ? Shape(rank, 1) : testing_util::RandomChunks(shape, rng);
          xs.push_back(Input(shape, chunks, 60 + k));
          what += " " + ShapeToString(chunks);
        }
        ExpectEqualArrays(Compute(stack(xs, axis)), want, what);
      }
    }
  }
}

TEST(ManipulationTest, FlipAnyAxes) {
  struct Case {
    Shape shape;
    std::vector<int> axes;  // empty: all
  };
  const std::vector<Case> cases = {
      {{7}, {}},         {{5, 3}, {0}}, {{5, 3}, {1}},   {{5, 3}, {}}, {{4, 1, 6}, {0, 2}},
      {{4, 1, 6}, {-1}}, {{0, 3}, {0}}, {{2, 0, 4}, {}}, {{}, {}},
  };
  uint32_t seed = 70;
  for (const Case& c : cases) {
    const int rank = static_cast<int>(c.shape.size());
    std::vector<bool> flipped(rank, c.axes.empty());
    for (int a : c.axes) flipped[a < 0 ? a + rank : a] = true;
    NDArray in = InputValues(c.shape, 5);
    NDArray want = Gathered(in, c.shape, [&](const Shape& o) {
      Shape i = o;
      for (int k = 0; k < rank; ++k)
        if (flipped[k]) i[k] = c.shape[k] - 1 - o[k];
      return i;
    });
    for (const Shape& chunks : Chunkings(c.shape, ++seed)) {
      Array x = Input(c.shape, chunks, 5);
      Array y = flip(x, c.axes);
      ASSERT_TRUE(y.ok()) << y.status().ToString();
      ExpectEqualArrays(Compute(y), want, Describe("flip", c.shape, chunks));
      // Flipping twice is the identity.
      ExpectEqualArrays(Compute(flip(y, c.axes)), in, Describe("flip twice", c.shape, chunks));
    }
  }
}

TEST(ManipulationTest, ReshapeOverChunkings) {
  struct Case {
    Shape from, to;
  };
  const std::vector<Case> cases = {
      {{6, 4}, {4, 6}},
      {{6, 4}, {24}},
      {{24}, {2, 3, 4}},
      {{2, 3, 4}, {6, 4}},
      {{2, 3, 4}, {4, 6}},
      {{4, 1, 6}, {4, 6}},
      {{4, 6}, {4, 1, 6}},
      {{4, 6}, {1, 24, 1}},
      {{12, 5}, {3, 4, 5}},
      {{3, 4, 5}, {12, 5}},
      {{3, 4, 5}, {3, 20}},
      {{3, 20}, {3, 4, 5}},
      {{7, 6}, {3, 14}},
      {{6, 10}, {4, 15}},
      {{5, 3}, {-1}},
      {{5, 3}, {3, -1}},
      {{1}, {}},
      {{}, {1, 1}},
      {{1, 1}, {}},
      {{}, {1}},
      {{0, 3}, {3, 0}},
      {{0, 3}, {-1, 3}},
      {{5, 3}, {5, 3}},
      {{8}, {2, 2, 2}},
  };
  uint32_t seed = 80;
  for (const Case& c : cases) {
    NDArray in = InputValues(c.from, 6);
    Shape to = c.to;
    Index known = 1;
    for (Index d : c.to)
      if (d != -1) known *= d;
    for (Index& d : to)
      if (d == -1) d = NumElements(c.from) / known;
    NDArray want = Reshaped(in, to);
    for (const Shape& chunks : Chunkings(c.from, ++seed, 3)) {
      std::string what = Describe("reshape to " + ShapeToString(c.to), c.from, chunks);
      Array x = Input(c.from, chunks, 6);
      Array y = reshape(x, c.to);
      ASSERT_TRUE(y.ok()) << what << ": " << y.status().ToString();
      EXPECT_EQ(y.shape(), to) << what;
      ExpectEqualArrays(Compute(y), want, what);
      // The same through an elementwise producer and with the method.
      ExpectEqualArrays(Compute((x + 0.0).reshape(c.to)), want, what + " of x + 0");
    }
  }
}

TEST(ManipulationTest, CompositionsOfManipulations) {
  // stack(reshape(transpose(concat(flip(a), b)))): each op's chunks feed the
  // next one's key functions.
  const Shape s = {6, 4};
  NDArray av = InputValues(s, 90), bv = InputValues(s, 91);
  std::mt19937 rng(92);
  for (int trial = 0; trial < 6; ++trial) {
    Array a = Input(s, testing_util::RandomChunks(s, rng), 90);
    Array b = Input(s, testing_util::RandomChunks(s, rng), 91);
    // c = concat(flip(a, 0), b, 1) is (6, 8); t = c^T is (8, 6); y is t as (4, 2, 6).
    Array y = reshape(transpose(concat({flip(a, {0}), b}, 1)), {4, 2, 6});
    NDArray got = Compute(stack({y, y * 2.0}, 1));
    ASSERT_EQ(got.shape(), Shape({4, 2, 2, 6}));
    for (Index flat = 0; flat < 48; ++flat) {
      const Index i = flat / 6, j = flat % 6;  // t[i][j] = c[j][i]
      const double v =
          i < 4 ? av.data_as<double>()[(5 - j) * 4 + i] : bv.data_as<double>()[j * 4 + (i - 4)];
      const Index y0 = flat / 12, y1 = flat / 6 % 2, y2 = flat % 6;
      EXPECT_EQ(got.data_as<double>()[((y0 * 2 + 0) * 2 + y1) * 6 + y2], v) << flat;
      EXPECT_EQ(got.data_as<double>()[((y0 * 2 + 1) * 2 + y1) * 6 + y2], 2 * v) << flat;
    }
  }
}

TEST(ManipulationTest, SameBytesOnInlineAndThreadsAndWithoutFusion) {
  // Manipulations feeding matmul, take, groupby_reduce and a reduction: the
  // bytes must not depend on the executor, the worker count or fusion.
  auto build = [](ExecutorKind executor, int workers) {
    Spec spec = SmallSpec();
    spec.executor = executor;
    spec.workers = workers;
    Array a = random::random({12, 9}, {5, 4}, 1, spec);
    Array b = random::random({7, 9}, {3, 9}, 2, spec);
    Array c = concat({flip(a, {1}), exp(b) - 1.0}, 0);                        // (19, 9)
    Array m = matmul(c, transpose(random::random({5, 9}, {2, 3}, 3, spec)));  // (19, 5)
    Array t = take(stack({m, m * 2.0}, 2), {18, 0, 7, 7, 3}, 0);              // (5, 5, 2)
    Array g = groupby_reduce(reshape(c, {19, 3, 3}),
                             {0, 1, 0, 2, 1, 1, 0, 2, 2, 0, 1, 0, 2, 2, 1, 0, -1, 1, 0}, 0,
                             ReduceOp::kMean);  // (3, 3, 3)
    return std::vector<Array>{t, g, var(squeeze(expand_dims(c, 1)), {0})};
  };
  auto run = [](std::vector<Array> arrays, bool fuse) {
    PlanOptions p;
    if (!fuse) p.disabled_passes.insert("fuse");
    Result<std::vector<NDArray>> r = compute(arrays, {}, p);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? std::move(r).value() : std::vector<NDArray>();
  };
  std::vector<NDArray> threads = run(build(ExecutorKind::kThreads, 2), true);
  ASSERT_EQ(threads.size(), 3u);
  EXPECT_EQ(threads[0].shape(), Shape({5, 5, 2}));
  EXPECT_EQ(threads[1].shape(), Shape({3, 3, 3}));
  EXPECT_EQ(threads[2].shape(), Shape({9}));
  std::vector<std::pair<std::string, std::vector<NDArray>>> others;
  others.emplace_back("inline", run(build(ExecutorKind::kInline, 1), true));
  others.emplace_back("threads x3", run(build(ExecutorKind::kThreads, 3), true));
  others.emplace_back("unfused", run(build(ExecutorKind::kThreads, 2), false));
  others.emplace_back("inline unfused", run(build(ExecutorKind::kInline, 1), false));
  for (const auto& [name, got] : others) {
    ASSERT_EQ(got.size(), threads.size()) << name;
    for (size_t j = 0; j < got.size(); ++j) {
      ASSERT_EQ(got[j].nbytes(), threads[j].nbytes()) << name << " output " << j;
      EXPECT_EQ(0, std::memcmp(got[j].data(), threads[j].data(), threads[j].nbytes()))
          << name << " output " << j;
    }
  }
}

TEST(ManipulationTest, BadInputNamesTheProblem) {
  Array x = Input({3, 4}, {2, 3}, 1);
  Array y = Input({3, 5}, {2, 3}, 2);
  Array v = Input({4}, {3}, 3);

  ExpectInvalid(permute_dims(x, {0}), "permute_dims: 1 axes given for an array of rank 2");
  ExpectInvalid(permute_dims(x, {0, 0}), "permute_dims: axis 0 is repeated");
  ExpectInvalid(permute_dims(x, {0, 2}),
                "permute_dims: axis 2 is out of range for an array of rank 2");
  ExpectInvalid(permute_dims(x, {-3, 0}), "permute_dims: axis -3 is out of range");

  ExpectInvalid(expand_dims(x, 3), "expand_dims: axis 3 is out of range");
  ExpectInvalid(expand_dims(x, -4), "expand_dims: axis -4 is out of range");

  ExpectInvalid(squeeze(x, {0}), "squeeze: axis 0 has extent 3, not 1");
  ExpectInvalid(squeeze(x, {2}), "squeeze: axis 2 is out of range for an array of rank 2");

  ExpectInvalid(broadcast_to(x, {3, 5}),
                "broadcast_to: shape (3, 4) cannot be broadcast to (3, 5)");
  ExpectInvalid(broadcast_to(x, {4}), "broadcast_to: shape (3, 4) cannot be broadcast to (4,)");
  ExpectInvalid(broadcast_to(x, {2, 3, 4}, {1, 1}), "broadcast_to: chunks do not match the shape");

  ExpectInvalid(concat({x, y}, 0), "concat: shapes (3, 4) and (3, 5) differ outside axis 0");
  ExpectInvalid(concat({x, v}, 0), "concat: all arrays need rank 2, got (4,)");
  ExpectInvalid(concat({x, y}, 2), "concat: axis 2 is out of range for an array of rank 2");
  ExpectInvalid(concat({}, 0), "concat: no arrays given");
  ExpectInvalid(concat({zeros({}), zeros({})}, 0), "concat: arrays must have rank >= 1");

  ExpectInvalid(stack({x, y}), "stack: shapes (3, 4) and (3, 5) differ");
  ExpectInvalid(stack({x, x}, 3), "stack: axis 3 is out of range");
  ExpectInvalid(stack({}), "stack: no arrays given");

  ExpectInvalid(flip(x, {2}), "flip: axis 2 is out of range for an array of rank 2");

  ExpectInvalid(reshape(x, {5, 3}), "reshape: cannot reshape (3, 4) (12 elements) into (5, 3)");
  ExpectInvalid(reshape(x, {5, -1}), "reshape: cannot reshape (3, 4) into (5, -1)");
  ExpectInvalid(reshape(x, {-1, -1}), "reshape: invalid shape (-1, -1)");
  ExpectInvalid(reshape(x, {-2, 6}), "reshape: invalid shape (-2, 6)");

  // An error passes through later operations unchanged.
  Array bad = broadcast_to(x, {3, 5});
  ExpectInvalid(flip(transpose(bad)), "broadcast_to: shape (3, 4) cannot be broadcast to (3, 5)");
  ExpectInvalid(concat({x, bad}), "broadcast_to: shape (3, 4) cannot be broadcast to (3, 5)");
}

}  // namespace
}  // namespace strata
