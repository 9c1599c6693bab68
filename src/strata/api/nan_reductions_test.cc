// NaN-aware reductions and group-by statistics against numpy 1.24: every op
// over axis subsets, keepdims and ddof, for float64, float32, int32, bool and
// complex input (where defined), on 0-d, empty, ragged and random chunkings
// with NaN (and all-NaN slices); numpy's errors; the memory contract.
#include "strata/api/nan_reductions.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "strata/api/groupby_extras.h"
#include "strata/api/internal.h"
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
using testing_util::RecordingCallback;
using testing_util::SmallSpec;

// Float data with NaN, where the first row along axis 0 (when there is one)
// is NaN everywhere, so that all-NaN slices occur along the other axes.
NDArray WithNan(DType t, const Shape& shape, uint32_t seed) {
  NDArray h = RandomHost(t, shape, seed, 0.3, /*nan_only=*/true);
  if ((t.is_float() || t.is_complex()) && !shape.empty() && shape[0] > 1 && h.num_elements() > 0) {
    const Index row = h.num_elements() / shape[0];
    VisitDType(t, [&](auto tag) {
      using T = typename decltype(tag)::type;
      if constexpr (std::is_floating_point_v<T>) {
        for (Index i = 0; i < row; ++i) h.data_as<T>()[i] = std::numeric_limits<T>::quiet_NaN();
      } else if constexpr (kIsComplex<T>) {
        for (Index i = 0; i < row; ++i) h.data_as<T>()[i] = T(std::nan(""), 0);
      }
    });
  }
  return h;
}

std::string AxesText(const std::vector<int>& axes) {
  if (axes.empty()) return "None";
  std::string s = "(";
  for (int a : axes) s += std::to_string(a) + ",";
  return s + ")";
}

struct NanOp {
  const char* numpy;
  std::function<Array(const Array&, std::vector<int>, ReduceOptions)> fn;
  bool complex_ok;
  bool uses_ddof;
};

const std::vector<NanOp>& NanOps() {
  static const std::vector<NanOp> ops = {
      {"nansum", nansum, true, false},   {"nanprod", nanprod, true, false},
      {"nanmean", nanmean, true, false}, {"nanvar", nanvar, false, true},
      {"nanstd", nanstd, false, true},   {"nanmin", nanmin, false, false},
      {"nanmax", nanmax, false, false},
  };
  return ops;
}

double Tol(DType t) {
  return t.id() == DTypeId::kFloat32 || t.id() == DTypeId::kComplex64 ? 1e-4 : 1e-9;
}

TEST(NanReductionsTest, AgainstNumpy) {
  NumpyOracle np;
  struct Pending {
    std::string what;
    NDArray got;
    int id;
    double tol;
  };
  std::vector<Pending> pending;
  uint32_t seed = 1;
  const std::vector<DType> dtypes = {DTypeId::kFloat64, DTypeId::kFloat32, DTypeId::kInt32,
                                     DTypeId::kBool, DTypeId::kComplex128};
  const std::vector<std::pair<Shape, std::vector<std::vector<int>>>> shapes = {
      {{}, {{}}},
      {{0}, {{}, {0}}},
      {{9}, {{}, {0}}},
      {{6, 5}, {{}, {0}, {1}, {-1, 0}}},
      {{3, 0, 4}, {{2}, {0, 2}}},
      {{4, 3, 5}, {{}, {1}, {0, 2}}},
  };
  for (DType t : dtypes) {
    for (const auto& [shape, axes_list] : shapes) {
      const NDArray host = WithNan(t, shape, seed++);
      const std::vector<Shape> chunkings = Chunkings(shape, seed++, 1);
      for (const NanOp& op : NanOps()) {
        if (t.is_complex() && !op.complex_ok) continue;
        for (const std::vector<int>& axes : axes_list) {
          bool empty_axis = axes.empty() ? NumElements(shape) == 0 : false;
          for (int a : axes) empty_axis |= shape[(a + shape.size()) % shape.size()] == 0;
          const bool needs_identity =
              std::string(op.numpy) == "nanmin" || std::string(op.numpy) == "nanmax";
          if (empty_axis && needs_identity) {
            Array r = op.fn(Lazy(host, shape), axes, {});
            EXPECT_FALSE(r.ok()) << op.numpy << " over an empty axis";
            continue;
          }
          for (bool keepdims : {false, true}) {
            for (int ddof : op.uses_ddof ? std::vector<int>{0, 1, 4} : std::vector<int>{0}) {
              const Shape& chunks = chunkings[(seed++) % chunkings.size()];
              ReduceOptions o;
              o.keepdims = keepdims;
              o.ddof = ddof;
              o.split_every = 2 + static_cast<int>(seed % 3);
              Array r = op.fn(Lazy(host, chunks), axes, o);
              const std::string what =
                  std::string(op.numpy) + " of " + std::string(t.name()) + " " +
                  ShapeToString(shape) + " chunks " + ShapeToString(chunks) + " axes " +
                  AxesText(axes) + (keepdims ? " keepdims" : "") + " ddof " + std::to_string(ddof);
              ASSERT_TRUE(r.ok()) << what << ": " << r.status().ToString();
              // Integers: numpy's var divides by max(n - ddof, 0) (inf); the
              // standard (and Strata) give NaN when n - ddof <= 0, as numpy's
              // nanvar does for floats.
              const std::string arg =
                  op.uses_ddof && !(t.is_float() || t.is_complex()) ? "a.astype(np.float64)" : "a";
              std::string expr = std::string("np.") + op.numpy + "(" + arg +
                                 ", axis=" + AxesText(axes) +
                                 ", keepdims=" + (keepdims ? "True" : "False");
              if (op.uses_ddof) expr += ", ddof=" + std::to_string(ddof);
              expr += ")";
              // numpy's nanvar/nanstd of bool/int compute in float64, as ours.
              pending.push_back({what, Compute(r), np.Add(expr, {&host}), Tol(t)});
            }
          }
        }
      }
    }
  }
  np.Run();
  for (const Pending& p : pending) {
    ExpectArrayNear(p.got, np.First(p.id), p.tol, p.tol, p.what + " = " + np.expr(p.id));
  }
}

TEST(NanReductionsTest, ArgAgainstNumpy) {
  NumpyOracle np;
  struct Pending {
    std::string what;
    Array r;
    int id;
  };
  std::vector<Pending> pending;
  uint32_t seed = 50;
  for (DType t : {DType(DTypeId::kFloat64), DType(DTypeId::kFloat32), DType(DTypeId::kInt16)}) {
    for (const Shape& shape : std::vector<Shape>{{9}, {6, 5}, {4, 3, 5}}) {
      NDArray host = RandomHost(t, shape, seed++, 0.3, true);
      for (const Shape& chunks : Chunkings(shape, seed++, 1)) {
        for (std::optional<int> axis : std::vector<std::optional<int>>{std::nullopt, 0, -1}) {
          for (bool max : {false, true}) {
            const char* name = max ? "nanargmax" : "nanargmin";
            Array r =
                max ? nanargmax(Lazy(host, chunks), axis) : nanargmin(Lazy(host, chunks), axis);
            const std::string ax = axis ? std::to_string(*axis) : "None";
            pending.push_back(
                {std::string(name) + " " + ShapeToString(shape) + " " + ShapeToString(chunks) +
                     " axis " + ax,
                 r, np.Add(std::string("np.") + name + "(a, axis=" + ax + ")", {&host})});
          }
        }
      }
    }
  }
  // All-NaN slices: numpy raises, so does compute.
  NDArray all_nan = RandomHost(DTypeId::kFloat64, {4, 3}, 9);
  for (Index j = 0; j < 3; ++j) all_nan.data_as<double>()[3 * 2 + j] = std::nan("");
  int raises = np.Add("np.nanargmin(a, axis=1)", {&all_nan});
  np.Run();
  for (Pending& p : pending) {
    ASSERT_TRUE(p.r.ok()) << p.what << ": " << p.r.status().ToString();
    if (!np.Error(p.id).empty()) {
      // numpy raised (an all-NaN slice): so must compute.
      Result<NDArray> r = compute(p.r);
      EXPECT_FALSE(r.ok()) << p.what << ": numpy raised " << np.Error(p.id);
      continue;
    }
    ExpectArrayNear(Compute(p.r), np.First(p.id), 0, 0, p.what);
  }
  EXPECT_NE(np.Error(raises).find("All-NaN slice encountered"), std::string::npos);
  Result<NDArray> r = compute(nanargmin(Lazy(all_nan, {2, 2}), 1));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("nanargmin: All-NaN slice encountered"), std::string::npos)
      << r.status().ToString();
  // Complex is refused when built.
  Array z = Lazy(RandomHost(DTypeId::kComplex64, {3}, 1), {2});
  EXPECT_FALSE(nanargmax(z).ok());
  EXPECT_NE(nanvar(z).status().message().find("complex64"), std::string::npos);
  EXPECT_FALSE(nanmin(z).ok());
}

TEST(NanReductionsTest, OnePassAndStreamsFusedInput) {
  // nanmean of a fused elementwise chain: one op with tasks reads the
  // sources (the chain is computed strip by strip inside the partial reduce).
  Spec spec = SmallSpec();
  Array a = random::random({40, 30}, {10, 30}, 1, spec);
  Array x = where(a < 0.2, Scalar(std::nan("")), a * 2.0);
  Array m = nanmean(x, {0});
  Result<std::shared_ptr<const Plan>> p = plan({m});
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  int partial_ops = 0;
  for (const PlannedOp& op : (*p)->ops()) {
    if (op.node->op_name == "nanmean-partial") {
      ++partial_ops;
      EXPECT_TRUE(op.materialized);
      EXPECT_FALSE(op.fused_names.empty()) << "the where/multiply chain is fused";
    }
    if (op.node->op_name == "where") {
      EXPECT_FALSE(op.materialized);
    }
  }
  EXPECT_EQ(partial_ops, 1);
  RecordingCallback rec;
  auto cb = std::shared_ptr<Callback>(&rec, [](Callback*) {});
  ComputeOptions co;
  co.callbacks.push_back(cb);
  Result<NDArray> got = compute(m, co);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  rec.ExpectWithinBudget();
  NDArray whole = Compute(x);
  for (Index j = 0; j < 30; ++j) {
    double s = 0, n = 0;
    for (Index i = 0; i < 40; ++i) {
      const double v = whole.data_as<double>()[i * 30 + j];
      if (!std::isnan(v)) s += v, n += 1;
    }
    EXPECT_NEAR(got->data_as<double>()[j], n > 0 ? s / n : std::nan(""), 1e-12);
  }
}

// -------------------------------------------------------------- group-by

constexpr const char* kGroupPrelude = R"PY(
def _grouped(a, labels, G, ax, op, ddof=0, skip=True):
    ax = ax % a.ndim
    out = []
    for g in range(G):
        idx = np.nonzero(labels == g)[0]
        out.append(_reduce(np.take(a, idx, axis=ax), idx, ax, op, ddof, skip))
    if not out:
        return np.zeros(a.shape[:ax] + (0,) + a.shape[ax+1:])
    return np.stack(out, axis=ax)

def _reduce(s, idx, ax, op, ddof, skip):
    isf = np.issubdtype(s.dtype, np.inexact)
    skip = skip and isf
    rest = s.shape[:ax] + s.shape[ax+1:]
    nan = np.isnan(s) if isf else np.zeros(s.shape, bool)
    valid = ~nan if skip else np.ones(s.shape, bool)
    n = s.shape[ax]
    if op == 'count':
        return (~nan).sum(axis=ax)
    if op == 'sum':
        return (np.nansum if skip else np.sum)(s, axis=ax)
    if op == 'mean':
        return (np.nanmean if skip else np.mean)(s, axis=ax) if n else np.full(rest, np.nan)
    if op in ('var', 'std'):
        f = {'var': (np.var, np.nanvar), 'std': (np.std, np.nanstd)}[op][skip]
        return f(s.astype(np.float64) if not isf else s, axis=ax, ddof=ddof) if n else np.full(rest, np.nan)
    if op in ('min', 'max'):
        if n == 0:
            if isf: return np.full(rest, np.nan, s.dtype)
            info = np.iinfo(s.dtype)
            return np.full(rest, info.max if op == 'min' else info.min, s.dtype)
        f = {'min': (np.min, np.nanmin), 'max': (np.max, np.nanmax)}[op][skip]
        return f(s, axis=ax)
    if op in ('argmin', 'argmax'):
        if n == 0:
            return np.full(rest, -1)
        if skip:
            allnan = ~valid.any(axis=ax)
            f = np.nanargmin if op == 'argmin' else np.nanargmax
            r = f(np.where(np.expand_dims(allnan, ax), 0, s), axis=ax)
            return np.where(allnan, -1, idx[r])
        f = np.argmin if op == 'argmin' else np.argmax
        return idx[f(s, axis=ax)]
    if op in ('first', 'last'):
        fill = np.nan if isf else 0
        if n == 0:
            return np.full(rest, fill, s.dtype)
        v = valid if op == 'first' else np.flip(valid, ax)
        t = s if op == 'first' else np.flip(s, ax)
        pos = np.argmax(v, axis=ax)
        val = np.take_along_axis(t, np.expand_dims(pos, ax), ax).squeeze(ax)
        return np.where(v.any(axis=ax), val, fill).astype(s.dtype)
    raise ValueError(op)
)PY";

TEST(GroupbyExtrasTest, AgainstNumpy) {
  NumpyOracle np;
  np.Prelude(kGroupPrelude);
  struct Pending {
    std::string what;
    NDArray got;
    int id;
    double tol;
  };
  std::vector<Pending> pending;
  const std::vector<std::pair<ReduceOp, const char*>> ops = {
      {ReduceOp::kSum, "sum"},     {ReduceOp::kMean, "mean"},     {ReduceOp::kCount, "count"},
      {ReduceOp::kMin, "min"},     {ReduceOp::kMax, "max"},       {ReduceOp::kVar, "var"},
      {ReduceOp::kStd, "std"},     {ReduceOp::kArgmin, "argmin"}, {ReduceOp::kArgmax, "argmax"},
      {ReduceOp::kFirst, "first"}, {ReduceOp::kLast, "last"}};
  uint32_t seed = 7;
  std::mt19937 rng(3);
  for (DType t : {DType(DTypeId::kFloat64), DType(DTypeId::kFloat32), DType(DTypeId::kInt32)}) {
    for (const auto& [shape, axis] : std::vector<std::pair<Shape, int>>{
             {{11}, 0}, {{10, 4}, 0}, {{3, 13}, 1}, {{4, 9, 2}, -2}, {{0, 3}, 0}}) {
      const int ax = (axis + static_cast<int>(shape.size())) % static_cast<int>(shape.size());
      NDArray host = WithNan(t, shape, seed++);
      const Index G = 4;
      std::vector<int64_t> labels(shape[ax]);
      // Group 3 stays empty; some positions are skipped (-1).
      for (auto& l : labels) l = std::uniform_int_distribution<int>(-1, 2)(rng);
      NDArray lab = *NDArray::Allocate(*MemoryPool::Default(), DTypeId::kInt64, {shape[ax]});
      std::copy(labels.begin(), labels.end(), lab.data_as<int64_t>());
      for (const auto& [op, name] : ops) {
        for (bool skip : {true, false}) {
          for (int ddof : (op == ReduceOp::kVar ? std::vector<int>{0, 1} : std::vector<int>{0})) {
            Shape chunks = Chunkings(shape, seed++, 1).back();
            GroupbyOptions o;
            o.num_groups = G;
            o.skipna = skip;
            o.ddof = ddof;
            o.split_every = 2;
            // Labels on the host and as a chunked array (int32, other chunks).
            Array labels_array = astype(Lazy(lab, {3}), DTypeId::kInt32);
            const bool as_array = (seed % 2) == 0;
            Array r = as_array ? groupby_reduce(Lazy(host, chunks), labels_array, axis, op, o)
                               : groupby_reduce(Lazy(host, chunks), labels, axis, op, o);
            const std::string what =
                std::string("groupby ") + name + " of " + std::string(t.name()) + " " +
                ShapeToString(shape) + " chunks " + ShapeToString(chunks) + " axis " +
                std::to_string(axis) + (skip ? " skipna" : "") + (as_array ? " labels array" : "") +
                " ddof " + std::to_string(ddof);
            ASSERT_TRUE(r.ok()) << what << ": " << r.status().ToString();
            const std::string expr = std::string("_grouped(a, b, 4, ") + std::to_string(axis) +
                                     ", '" + name + "', " + std::to_string(ddof) + ", " +
                                     (skip ? "True" : "False") + ")";
            pending.push_back({what, Compute(r), np.Add(expr, {&host, &lab}), Tol(t)});
          }
        }
      }
    }
  }
  np.Run();
  for (const Pending& p : pending) {
    // numpy's sums of int32 are int64 like ours; means and variances float64;
    // argmin int64. Dtypes are compared too.
    ExpectArrayNear(p.got, np.First(p.id), p.tol, p.tol, p.what, /*check_dtype=*/false);
  }
}

TEST(GroupbyExtrasTest, SkipnaIsTheDefaultForFloats) {
  // xarray's default: a group mean over data with NaN is the mean of the rest.
  NDArray h = *NDArray::Allocate(*MemoryPool::Default(), DTypeId::kFloat64, {4});
  const double v[] = {1, std::nan(""), 3, 10};
  std::copy(std::begin(v), std::end(v), h.data_as<double>());
  Array x = Lazy(h, {2});
  NDArray m = Compute(groupby_reduce(x, std::vector<int64_t>{0, 0, 0, 1}, 0, ReduceOp::kMean));
  EXPECT_DOUBLE_EQ(m.data_as<double>()[0], 2.0);
  EXPECT_DOUBLE_EQ(m.data_as<double>()[1], 10.0);
  GroupbyOptions keep;
  keep.skipna = false;
  NDArray p =
      Compute(groupby_reduce(x, std::vector<int64_t>{0, 0, 0, 1}, 0, ReduceOp::kMean, keep));
  EXPECT_TRUE(std::isnan(p.data_as<double>()[0]));
}

TEST(GroupbyExtrasTest, LabelArrayErrors) {
  Array x = random::random({6, 4}, {2, 2}, 1, SmallSpec());
  NDArray lab = *NDArray::Allocate(*MemoryPool::Default(), DTypeId::kInt64, {6});
  for (int i = 0; i < 6; ++i) lab.data_as<int64_t>()[i] = i % 3;
  lab.data_as<int64_t>()[4] = 7;
  GroupbyOptions o;
  o.num_groups = 3;
  Result<NDArray> r = compute(groupby_reduce(x, Lazy(lab, {4}), 0, ReduceOp::kSum, o));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("label 7 at position 4 is not below num_groups 3"),
            std::string::npos)
      << r.status().ToString();
  // Without num_groups the maximum label sets it (computed first).
  Array auto_g = groupby_reduce(x, Lazy(lab, {4}), 0, ReduceOp::kCount, GroupbyOptions{});
  ASSERT_TRUE(auto_g.ok()) << auto_g.status().ToString();
  EXPECT_EQ(auto_g.shape(), Shape({8, 4}));
  Array wrong_len = groupby_reduce(x, Lazy(lab, {4}), 1, ReduceOp::kSum, GroupbyOptions{});
  ASSERT_FALSE(wrong_len.ok());
  EXPECT_NE(wrong_len.status().message().find("labels of shape (6,) given for axis 1 of extent 4"),
            std::string::npos)
      << wrong_len.status().message();
  Array float_labels = groupby_reduce(x, Lazy(RandomHost(DTypeId::kFloat32, {6}, 1), {2}), 0,
                                      ReduceOp::kSum, GroupbyOptions{});
  ASSERT_FALSE(float_labels.ok());
  EXPECT_NE(float_labels.status().message().find("integer dtype"), std::string::npos);
  Array prod = groupby_reduce(x, std::vector<int64_t>{0, 1, 0, 1, 0, 1}, 0, ReduceOp::kProd);
  EXPECT_NE(prod.status().message().find("op 'prod' is not supported"), std::string::npos);
  Array cvar = groupby_reduce(astype(x, DTypeId::kComplex64),
                              std::vector<int64_t>{0, 1, 0, 1, 0, 1}, 0, ReduceOp::kVar);
  EXPECT_FALSE(cvar.ok());
}

}  // namespace
}  // namespace strata
