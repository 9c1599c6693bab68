// OrthogonalGather (api/gather_internal.h).
#include <fmt/format.h>

#include <algorithm>
#include <memory>

#include "strata/api/gather_internal.h"
#include "strata/api/internal.h"

namespace strata::internal_api {
namespace {

// The runs overlapping output range [begin, end), clipped to it.
std::vector<AxisRun> RunsIn(const std::vector<AxisRun>& runs, Index begin, Index end) {
  std::vector<AxisRun> out;
  auto it = std::upper_bound(runs.begin(), runs.end(), begin,
                             [](Index v, const AxisRun& r) { return v < r.out_start; });
  if (it != runs.begin()) --it;
  for (; it != runs.end() && it->out_start < end; ++it) {
    const Index lo = std::max(begin, it->out_start);
    const Index hi = std::min(end, it->out_start + it->length);
    if (hi <= lo) continue;
    AxisRun r = *it;
    const Index skip = lo - it->out_start;
    r.out_start = lo;
    r.length = hi - lo;
    if (r.in_start >= 0) r.in_start += r.step * skip;
    out.push_back(r);
  }
  return out;
}

// A piece of one run inside one input block along one axis: output local
// position, input local position, length, step.
struct Piece {
  Index out = 0, in = 0, length = 0, step = 1;
};

// The part of `run` whose input positions lie in [lo, hi), in coordinates
// local to the output block (origin `out0`) and the input block (`lo`).
std::optional<Piece> Clip(const AxisRun& run, Index out0, Index lo, Index hi) {
  if (run.in_start < 0 || run.length == 0) return std::nullopt;
  Index t0 = 0, t1 = run.length;  // t range whose input position is in [lo, hi)
  if (run.step == 0) {
    if (run.in_start < lo || run.in_start >= hi) return std::nullopt;
  } else if (run.step > 0) {
    t0 = std::max<Index>(0, lo - run.in_start);
    t1 = std::min(run.length, hi - run.in_start);
  } else {
    t0 = std::max<Index>(0, run.in_start - (hi - 1));
    t1 = std::min(run.length, run.in_start - lo + 1);
  }
  if (t1 <= t0) return std::nullopt;
  return Piece{run.out_start - out0 + t0, run.in_start + run.step * t0 - lo, t1 - t0, run.step};
}

struct GatherData {
  std::vector<AxisSource> axes;
  ChunkGrid out_grid;
  bool has_fill = false;
  NDArray fill;  // rank 0, x's dtype
};

}  // namespace

AxisSource IdentityAxis(const Array& x, int axis) {
  AxisSource s;
  const Index n = x.shape()[axis];
  if (n > 0) s.runs.push_back({0, n, 0, 1});
  s.out_chunks = x.chunks().AxisChunkSizes(axis);
  return s;
}

std::vector<Index> SplitExtent(Index extent, Index chunk) {
  std::vector<Index> out;
  chunk = std::max<Index>(1, chunk);
  for (Index left = extent; left > 0; left -= chunk) out.push_back(std::min(left, chunk));
  return out;
}

Array OrthogonalGather(std::string op, const Array& x, std::vector<AxisSource> axes,
                       std::optional<Scalar> fill, const std::function<void(Node&)>& decorate) {
  if (!x.ok()) return x;
  const int rank = x.ndim();
  STRATA_CHECK(static_cast<int>(axes.size()) == rank) << op << ": one source per axis";
  const ChunkGrid& in_grid = x.chunks();
  std::vector<std::vector<Index>> sizes(rank);
  InputMap map;
  bool has_fill = false;
  for (int d = 0; d < rank; ++d) {
    AxisSource& a = axes[d];
    Index extent = 0;
    for (Index c : a.out_chunks) extent += c;
    Index next = 0;
    for (const AxisRun& r : a.runs) {
      const bool bad_step = r.step < -1 || r.step > 1;
      const Index last = r.in_start + r.step * (r.length - 1);
      const bool outside =
          r.in_start >= 0 && (r.in_start >= x.shape()[d] || last < 0 || last >= x.shape()[d]);
      if (r.out_start != next || r.length < 0 || bad_step || outside) {
        return Array::FromStatus(InternalError(
            fmt::format("{}: bad source run [{}, +{}) <- {} step {} along axis {} of extent {}", op,
                        r.out_start, r.length, r.in_start, r.step, d, x.shape()[d])));
      }
      has_fill = has_fill || r.in_start < 0;
      next += r.length;
    }
    if (next != extent) {
      return Array::FromStatus(InternalError(
          fmt::format("{}: runs cover {} of {} positions along axis {}", op, next, extent, d)));
    }
    sizes[d] = a.out_chunks;
    const Index n_in = in_grid.grid_shape()[d];
    std::vector<std::vector<Index>> table(a.out_chunks.size());
    Index o = 0;
    for (size_t j = 0; j < a.out_chunks.size(); ++j) {
      std::vector<Index>& row = table[j];
      for (const AxisRun& r : RunsIn(a.runs, o, o + a.out_chunks[j])) {
        if (r.in_start < 0) continue;
        const Index last = r.in_start + r.step * (r.length - 1);
        const Index lo = std::min(r.in_start, last), hi = std::max(r.in_start, last) + 1;
        auto [k0, k1] = in_grid.BlocksIntersecting(d, lo, hi);
        for (Index k = k0; k < k1; ++k) row.push_back(k);
      }
      std::sort(row.begin(), row.end());
      row.erase(std::unique(row.begin(), row.end()), row.end());
      o += a.out_chunks[j];
    }
    map.axes.push_back(AxisMap::Table(d, table, n_in));
  }
  if (has_fill && !fill) {
    return Array::FromStatus(InternalError(fmt::format("{}: fill runs without a fill value", op)));
  }
  auto data = std::make_shared<GatherData>();
  data->axes = std::move(axes);
  data->out_grid = GridFromSizes(sizes);
  data->has_fill = has_fill;
  const DType dtype = x.dtype();
  if (has_fill) {
    Array s = ScalarArray(*fill, dtype, x.spec());
    data->fill = *NDArray::CopyOf(*MemoryPool::Default(), s.node()->data->view());
  }
  ChunkGrid grid = data->out_grid;
  BlockFunction fn = [data, dtype](const BlockRequest& r) -> Result<NDArray> {
    STRATA_ASSIGN_OR_RETURN(NDArray out, NDArray::Allocate(*r.pool, dtype, r.box.shape));
    const int rank = r.box.rank();
    // The runs of this output block, per axis.
    std::vector<std::vector<AxisRun>> runs(rank);
    bool fills = false;
    for (int d = 0; d < rank; ++d) {
      runs[d] = RunsIn(data->axes[d].runs, r.box.origin[d], r.box.end(d));
      for (const AxisRun& run : runs[d]) fills = fills || run.in_start < 0;
    }
    if (fills) FillArray(out.view(), data->fill.bytes());
    const ArrayView out_view = out.view();
    const Shape& ostr = out_view.byte_strides();
    for (const InputBlock& b : r.inputs[0]) {
      std::vector<std::vector<Piece>> pieces(rank);
      bool any = true;
      for (int d = 0; d < rank && any; ++d) {
        for (const AxisRun& run : runs[d]) {
          std::optional<Piece> p = Clip(run, r.box.origin[d], b.box.origin[d], b.box.end(d));
          if (p) pieces[d].push_back(*p);
        }
        any = !pieces[d].empty();
      }
      if (!any) continue;
      // One strided copy per combination of pieces.
      std::vector<size_t> at(rank, 0);
      while (true) {
        const std::byte* src = b.view.data();
        std::byte* dst = out_view.data();
        Shape shape(rank), src_strides(rank), dst_strides(rank);
        for (int d = 0; d < rank; ++d) {
          const Piece& p = pieces[d][at[d]];
          shape[d] = p.length;
          src += p.in * b.view.byte_strides()[d];
          src_strides[d] = p.step * b.view.byte_strides()[d];
          dst += p.out * ostr[d];
          dst_strides[d] = ostr[d];
        }
        CopyArray(ConstArrayView(src, dtype, shape, src_strides),
                  ArrayView(dst, dtype, shape, dst_strides));
        int d = rank - 1;
        for (; d >= 0; --d) {
          if (++at[d] < pieces[d].size()) break;
          at[d] = 0;
        }
        if (d < 0) break;
      }
    }
    return out;
  };
  return MakeBlockwise(std::move(op), grid.shape(), dtype, grid, {x}, {std::move(map)},
                       std::move(fn), 0, x.spec(), NodeKind::kBlockwise, decorate);
}

}  // namespace strata::internal_api
