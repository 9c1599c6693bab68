#include <fmt/format.h>

#include <cmath>
#include <complex>
#include <cstring>

#include "strata/base/parallel.h"
#include "strata/base/thread_annotations.h"
#include "strata/core/dtype_dispatch.h"
#include "strata/core/float16.h"
#include "strata/storage/open_store.h"
#include "strata/storage/zarr/zarr_array.h"
#include "strata/tools/commands.h"
#include "strata/base/progress.h"

namespace strata {
namespace {

struct Mismatch {
  Shape index;
  std::string a;
  std::string b;
};

template <typename T>
bool SameValue(T x, T y) {
  if constexpr (std::is_floating_point_v<T>) {
    return x == y || (std::isnan(x) && std::isnan(y));
  } else if constexpr (kIsComplex<T>) {
    return SameValue(x.real(), y.real()) && SameValue(x.imag(), y.imag());
  } else {
    return x == y;
  }
}

template <typename T>
std::string ToText(T v) {
  if constexpr (kIsComplex<T>) {
    return fmt::format("({}{:+}j)", v.real(), v.imag());
  } else if constexpr (std::is_same_v<T, bool>) {
    return v ? "true" : "false";
  } else {
    return fmt::format("{}", v);
  }
}

template <typename T>
double AbsDiff(T x, T y) {
  if constexpr (std::is_same_v<T, bool>) {
    return x == y ? 0.0 : 1.0;
  } else if constexpr (kIsComplex<T>) {
    return std::abs(std::complex<double>(x) - std::complex<double>(y));
  } else {
    return std::abs(static_cast<double>(x) - static_cast<double>(y));
  }
}

}  // namespace

Result<bool> RunVerify(const VerifyOptions& options) {
  STRATA_ASSIGN_OR_RETURN(StoreAndPrefix a_at, OpenStoreUrl(options.a, /*create=*/false));
  STRATA_ASSIGN_OR_RETURN(std::shared_ptr<ZarrArray> a, ZarrArray::Open(a_at.store, a_at.prefix));
  STRATA_ASSIGN_OR_RETURN(StoreAndPrefix b_at, OpenStoreUrl(options.b, /*create=*/false));
  STRATA_ASSIGN_OR_RETURN(std::shared_ptr<ZarrArray> b, ZarrArray::Open(b_at.store, b_at.prefix));
  if (a->shape() != b->shape()) {
    fmt::print("NOT EQUAL: shapes differ: {} vs {}\n", ShapeToString(a->shape()),
               ShapeToString(b->shape()));
    return false;
  }
  if (a->dtype() != b->dtype()) {
    fmt::print("NOT EQUAL: dtypes differ: {} vs {}\n", a->dtype().ToString(),
               b->dtype().ToString());
    return false;
  }
  // Block by block of what A reads one at a time (inner chunks when sharded).
  const ChunkGrid& grid = a->read_grid();
  auto pool = MemoryPool::Default()->NewChild({"strata verify", 0});
  // What the blocks found, summed over the threads that compare them.
  struct Differences {
    Mutex mu;
    int64_t count STRATA_GUARDED_BY(mu) = 0;
    double max_diff STRATA_GUARDED_BY(mu) = 0;
    std::vector<std::pair<int64_t, Mismatch>> reported STRATA_GUARDED_BY(mu);
  } found;
  ProgressBar progress("verify", grid.num_blocks(), a->chunk_bytes() * 2);
  STRATA_RETURN_IF_ERROR(ParallelFor(grid.num_blocks(), options.workers, [&](int64_t bi) -> Status {
    Shape block(grid.rank());
    UnravelIndex(bi, grid.grid_shape(), block);
    Box box = grid.BlockBox(block);
    STRATA_ASSIGN_OR_RETURN(NDArray x, NDArray::Allocate(*pool, a->dtype(), box.shape));
    STRATA_RETURN_IF_ERROR(a->ReadBlock(block, x.view(), *pool).status());
    STRATA_ASSIGN_OR_RETURN(NDArray y, NDArray::Allocate(*pool, b->dtype(), box.shape));
    STRATA_RETURN_IF_ERROR(b->ReadRegion(box, y.view(), *pool));
    int64_t local = 0;
    double local_max = 0;
    std::vector<std::pair<int64_t, Mismatch>> local_first;
    auto report = [&](Index i, const std::string& xa, const std::string& yb) {
      if (static_cast<int>(local_first.size()) < options.max_report) {
        Shape in_block(box.rank());
        UnravelIndex(i, box.shape, in_block);
        Shape global(box.rank());
        for (int k = 0; k < box.rank(); ++k) global[k] = box.origin[k] + in_block[k];
        local_first.push_back({LinearIndex(global, a->shape()), Mismatch{global, xa, yb}});
      }
    };
    if (!a->dtype().is_numeric()) {
      // float16 compares as numbers, the fixed-length types byte by byte
      // (a difference counts 1 towards max |a - b|).
      const DType t = a->dtype();
      const size_t esize = static_cast<size_t>(t.size());
      const Index n = x.num_elements();
      for (Index i = 0; i < n; ++i) {
        const std::byte* xp = x.data() + i * esize;
        const std::byte* yp = y.data() + i * esize;
        double d = 0;
        if (t.is_float16()) {
          uint16_t u, v;
          std::memcpy(&u, xp, 2);
          std::memcpy(&v, yp, 2);
          const double du = HalfToDouble(u), dv = HalfToDouble(v);
          if (SameValue(du, dv)) continue;
          d = AbsDiff(du, dv);
        } else {
          if (std::memcmp(xp, yp, esize) == 0) continue;
          d = 1;
        }
        ++local;
        if (!(d <= local_max)) local_max = d;
        report(i, FormatElement(t, xp), FormatElement(t, yp));
      }
    } else VisitDType(a->dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* xs = x.data_as<T>();
      const T* ys = y.data_as<T>();
      const Index n = x.num_elements();
      for (Index i = 0; i < n; ++i) {
        if (SameValue(xs[i], ys[i])) continue;
        ++local;
        double d = AbsDiff(xs[i], ys[i]);
        if (!(d <= local_max)) local_max = d;  // NaN vs number counts as the largest
        report(i, ToText(xs[i]), ToText(ys[i]));
      }
    });
    MutexLock lock(&found.mu);
    found.count += local;
    if (!(local_max <= found.max_diff)) found.max_diff = local_max;
    for (auto& m : local_first) found.reported.push_back(std::move(m));
    progress.Advance();
    return Status::Ok();
  }));
  progress.Finish();
  MutexLock lock(&found.mu);  // the threads are done; the lock is for the analysis
  const int64_t mismatches = found.count;
  const double max_diff = found.max_diff;
  std::vector<std::pair<int64_t, Mismatch>> reported = std::move(found.reported);
  const int64_t total = NumElements(a->shape());
  if (mismatches == 0) {
    fmt::print("EQUAL: {} elements of {} {} compared, no differences\n", total,
               ShapeToString(a->shape()), a->dtype().ToString());
    return true;
  }
  std::sort(reported.begin(), reported.end(),
            [](const auto& l, const auto& r) { return l.first < r.first; });
  if (static_cast<int>(reported.size()) > options.max_report) reported.resize(options.max_report);
  fmt::print("NOT EQUAL: {} of {} elements differ ({:.4g}%), max |a - b| = {}\n", mismatches,
             total, 100.0 * mismatches / std::max<int64_t>(total, 1), max_diff);
  for (const auto& [flat, m] : reported) {
    fmt::print("  at {}: {} vs {}\n", ShapeToString(m.index), m.a, m.b);
  }
  return false;
}

}  // namespace strata
