// api/set_functions.h: per-block distinct values, merged on the host.
#include "strata/api/set_functions.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

#include "strata/api/compute.h"
#include "strata/api/creation.h"
#include "strata/api/internal.h"
#include "strata/core/dtype_dispatch.h"

namespace strata {

using internal_api::MakeBlockwise;

namespace {

// One record per distinct value of a block: the value's bytes (padded to 8),
// its count and its first flat position.
constexpr int64_t kRecordExtra = 16;

template <typename T>
bool IsNanT(T v) {
  if constexpr (std::is_floating_point_v<T>) return v != v;
  return false;
}

template <typename T>
bool LessT(T a, T b) {
  if constexpr (std::is_floating_point_v<T>) return a < b || (b != b && a == a);
  return a < b;
}

struct Distinct {
  std::vector<std::byte> values;  // item bytes each
  std::vector<int64_t> counts, firsts;
};

// The distinct values of a block (sorted, NaN each on its own at the end in
// position order), with counts and first flat positions in an array of
// `array_shape`.
template <typename T>
void DistinctOf(const ConstArrayView& v, const Box& box, const Shape& array_shape, Distinct& d) {
  const Index n = v.num_elements();
  std::vector<std::pair<T, int64_t>> items;
  items.reserve(n);
  if (n > 0) {
    Shape idx(v.rank(), 0), global(v.rank());
    do {
      for (int i = 0; i < v.rank(); ++i) global[i] = box.origin[i] + idx[i];
      T x;
      std::memcpy(&x, v.ElementPointer(idx), sizeof(T));
      items.push_back({x, LinearIndex(global, array_shape)});
    } while (NextIndex(idx, v.shape()));
  }
  std::stable_sort(items.begin(), items.end(),
                   [](const auto& a, const auto& b) { return LessT(a.first, b.first); });
  for (size_t i = 0; i < items.size();) {
    size_t j = i + 1;
    if (!IsNanT(items[i].first)) {
      while (j < items.size() && items[j].first == items[i].first) ++j;
    }
    const size_t at = d.values.size();
    d.values.resize(at + sizeof(T));
    std::memcpy(d.values.data() + at, &items[i].first, sizeof(T));
    d.counts.push_back(static_cast<int64_t>(j - i));
    d.firsts.push_back(items[i].second);  // stable sort: the first position
    i = j;
  }
}

Status Refuse(DType t) {
  return InvalidArgumentError(
      fmt::format("unique: complex numbers are not ordered ({})", t.name()));
}

struct Merged {
  NDArray values, counts, firsts;
  Index num_numbers = 0;  // values before the NaNs
};

Result<Merged> MergeAll(const Array& x) {
  if (!x.ok()) return x.status();
  if (x.dtype().is_complex()) return Refuse(x.dtype());
  const ChunkGrid& grid = x.chunks();
  const Shape gshape = grid.grid_shape();
  const Shape array_shape = x.shape();
  const DType dtype = x.dtype();
  const int64_t item = dtype.size();
  const int64_t block_elements = grid.max_block_elements();
  const int64_t scratch = 2 * block_elements * (item + 8);
  // bool is read as bytes.
  auto distinct_typed = [dtype, array_shape](const BlockRequest& r, Distinct& d) {
    VisitDType(dtype, [&](auto tag) {
      using T = typename decltype(tag)::type;
      if constexpr (!kIsComplex<T>) {
        using C = std::conditional_t<std::is_same_v<T, bool>, uint8_t, T>;
        DistinctOf<C>(r.inputs[0][0].view, r.inputs[0][0].box, array_shape, d);
      }
    });
  };
  // Pass 1: distinct values per block.
  Shape ones(gshape.size(), 1);
  ChunkGrid cgrid = *ChunkGrid::Regular(gshape, ones);
  BlockFunction count_fn = [distinct_typed](const BlockRequest& r) -> Result<NDArray> {
    STRATA_ASSIGN_OR_RETURN(NDArray out, NDArray::Allocate(*r.pool, DTypeId::kInt64, r.box.shape));
    Distinct d;
    distinct_typed(r, d);
    out.data_as<int64_t>()[0] = static_cast<int64_t>(d.counts.size());
    return out;
  };
  if (NumElements(array_shape) == 0) {
    Merged m;
    m.values = *NDArray::Allocate(*MemoryPool::Default(), dtype, {0});
    m.counts = *NDArray::Allocate(*MemoryPool::Default(), DTypeId::kInt64, {0});
    m.firsts = *NDArray::Allocate(*MemoryPool::Default(), DTypeId::kInt64, {0});
    return m;
  }
  Array counts =
      MakeBlockwise("unique-count", gshape, DTypeId::kInt64, cgrid, {x},
                    {InputMap::IdentityMap(gshape)}, std::move(count_fn), scratch, x.spec());
  STRATA_ASSIGN_OR_RETURN(NDArray per_block, compute(counts));
  int64_t most = 1;
  for (int64_t c : per_block.values<int64_t>()) most = std::max(most, c);
  // Pass 2: the records, padded to the most any block has.
  const int64_t record = item + kRecordExtra;
  Shape rshape = gshape;
  rshape.push_back(most * record);
  Shape rchunks = ones;
  rchunks.push_back(most * record);
  ChunkGrid rgrid = *ChunkGrid::Regular(rshape, rchunks);
  InputMap rmap = InputMap::IdentityMap(gshape);
  BlockFunction record_fn = [distinct_typed, item,
                             record](const BlockRequest& r) -> Result<NDArray> {
    STRATA_ASSIGN_OR_RETURN(NDArray out, NDArray::Zeros(*r.pool, DTypeId::kUInt8, r.box.shape));
    Distinct d;
    distinct_typed(r, d);
    std::byte* o = out.data();
    for (size_t i = 0; i < d.counts.size(); ++i) {
      std::memcpy(o + i * record, d.values.data() + i * item, item);
      std::memcpy(o + i * record + item, &d.counts[i], 8);
      std::memcpy(o + i * record + item + 8, &d.firsts[i], 8);
    }
    return out;
  };
  Array records = MakeBlockwise("unique-records", rshape, DTypeId::kUInt8, rgrid, {x},
                                {std::move(rmap)}, std::move(record_fn), scratch, x.spec());
  STRATA_ASSIGN_OR_RETURN(NDArray all, compute(records));
  // Merge on the host.
  Merged m;
  std::span<const int64_t> c = per_block.values<int64_t>();
  STRATA_RETURN_IF_ERROR(VisitDType(dtype, [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    if constexpr (kIsComplex<T>) {
      return Refuse(dtype);
    } else {
      using C = std::conditional_t<std::is_same_v<T, bool>, uint8_t, T>;
      struct Rec {
        C v;
        int64_t count, first;
      };
      std::vector<Rec> numbers, nans;
      for (size_t b = 0; b < c.size(); ++b) {
        const std::byte* base = all.data() + b * most * record;
        for (int64_t i = 0; i < c[b]; ++i) {
          Rec rec;
          std::memcpy(&rec.v, base + i * record, sizeof(C));
          std::memcpy(&rec.count, base + i * record + item, 8);
          std::memcpy(&rec.first, base + i * record + item + 8, 8);
          (IsNanT(rec.v) ? nans : numbers).push_back(rec);
        }
      }
      std::sort(numbers.begin(), numbers.end(), [](const Rec& a, const Rec& b) {
        return a.v < b.v || (a.v == b.v && a.first < b.first);
      });
      std::vector<Rec> merged;
      for (const Rec& r : numbers) {
        if (!merged.empty() && merged.back().v == r.v) {
          merged.back().count += r.count;
        } else {
          merged.push_back(r);
        }
      }
      m.num_numbers = static_cast<Index>(merged.size());
      std::sort(nans.begin(), nans.end(),
                [](const Rec& a, const Rec& b) { return a.first < b.first; });
      merged.insert(merged.end(), nans.begin(), nans.end());
      const Index n = static_cast<Index>(merged.size());
      STRATA_ASSIGN_OR_RETURN(m.values, NDArray::Allocate(*MemoryPool::Default(), dtype, {n}));
      STRATA_ASSIGN_OR_RETURN(m.counts,
                              NDArray::Allocate(*MemoryPool::Default(), DTypeId::kInt64, {n}));
      STRATA_ASSIGN_OR_RETURN(m.firsts,
                              NDArray::Allocate(*MemoryPool::Default(), DTypeId::kInt64, {n}));
      for (Index i = 0; i < n; ++i) {
        std::memcpy(m.values.data() + i * item, &merged[i].v, item);
        m.counts.data_as<int64_t>()[i] = merged[i].count;
        m.firsts.data_as<int64_t>()[i] = merged[i].first;
      }
      return Status::Ok();
    }
  }));
  return m;
}

// The position of each element of x in the unique values (NaNs: their own).
Array Inverse(const Array& x, const Merged& m) {
  auto values =
      std::make_shared<NDArray>(*NDArray::CopyOf(*MemoryPool::Default(), m.values.view()));
  // NaN first positions, sorted (they follow the numbers).
  auto nan_firsts =
      std::make_shared<std::vector<int64_t>>(m.firsts.data_as<int64_t>() + m.num_numbers,
                                             m.firsts.data_as<int64_t>() + m.firsts.num_elements());
  const Index numbers = m.num_numbers;
  const DType dtype = x.dtype();
  const Shape array_shape = x.shape();
  BlockFunction fn = [values, nan_firsts, numbers, dtype,
                      array_shape](const BlockRequest& r) -> Result<NDArray> {
    STRATA_ASSIGN_OR_RETURN(NDArray out, NDArray::Allocate(*r.pool, DTypeId::kInt64, r.box.shape));
    if (out.num_elements() == 0) return out;
    const InputBlock& b = r.inputs[0][0];
    VisitDType(dtype, [&](auto tag) {
      using T = typename decltype(tag)::type;
      if constexpr (!kIsComplex<T>) {
        using C = std::conditional_t<std::is_same_v<T, bool>, uint8_t, T>;
        const C* u = reinterpret_cast<const C*>(values->data());
        int64_t* o = out.data_as<int64_t>();
        Shape idx(b.view.rank(), 0), global(b.view.rank());
        Index i = 0;
        do {
          C v;
          std::memcpy(&v, b.view.ElementPointer(idx), sizeof(C));
          if (IsNanT(v)) {
            for (int d = 0; d < b.view.rank(); ++d) global[d] = b.box.origin[d] + idx[d];
            const int64_t flat = LinearIndex(global, array_shape);
            o[i] = numbers + (std::lower_bound(nan_firsts->begin(), nan_firsts->end(), flat) -
                              nan_firsts->begin());
          } else {
            o[i] = std::lower_bound(u, u + numbers, v, LessT<C>) - u;
          }
          ++i;
        } while (NextIndex(idx, b.view.shape()));
      }
    });
    return out;
  };
  return MakeBlockwise("unique-inverse", x.shape(), DTypeId::kInt64, x.chunks(), {x},
                       {InputMap::IdentityMap(x.chunks().grid_shape())}, std::move(fn), 0,
                       x.spec());
}

Array Host(NDArray a, const Array& like) { return asarray(std::move(a), {}, *like.spec()); }

}  // namespace

Array unique_values(const Array& x) {
  Result<Merged> m = MergeAll(x);
  if (!m.ok()) return Array::FromStatus(m.status().WithContext("unique_values"));
  return Host(std::move(m->values), x);
}

UniqueCounts unique_counts(const Array& x) {
  Result<Merged> m = MergeAll(x);
  if (!m.ok()) {
    Array e = Array::FromStatus(m.status().WithContext("unique_counts"));
    return {e, e};
  }
  return {Host(std::move(m->values), x), Host(std::move(m->counts), x)};
}

UniqueInverse unique_inverse(const Array& x) {
  Result<Merged> m = MergeAll(x);
  if (!m.ok()) {
    Array e = Array::FromStatus(m.status().WithContext("unique_inverse"));
    return {e, e};
  }
  Array inv = Inverse(x, *m);
  return {Host(std::move(m->values), x), inv};
}

UniqueAll unique_all(const Array& x) {
  Result<Merged> m = MergeAll(x);
  if (!m.ok()) {
    Array e = Array::FromStatus(m.status().WithContext("unique_all"));
    return {e, e, e, e};
  }
  Array inv = Inverse(x, *m);
  return {Host(std::move(m->values), x), Host(std::move(m->firsts), x), inv,
          Host(std::move(m->counts), x)};
}

}  // namespace strata
