// api/gufunc.h.
#include "strata/api/gufunc.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cstring>
#include <numeric>

#include "strata/api/creation.h"
#include "strata/api/internal.h"
#include "strata/core/kernels/elementwise.h"

namespace strata {

using internal_api::GridFromSizes;

namespace {

Result<std::vector<std::vector<std::string>>> ParseGroups(std::string_view s, std::string_view all,
                                                          std::string_view name) {
  std::vector<std::vector<std::string>> groups;
  size_t i = 0;
  auto bad = [&]() {
    return InvalidArgumentError(fmt::format("{}: malformed signature '{}'", name, all));
  };
  while (i < s.size() && s[i] == ' ') ++i;
  while (i < s.size()) {
    if (s[i] != '(') return bad();
    const size_t close = s.find(')', i);
    if (close == std::string_view::npos) return bad();
    std::vector<std::string> names;
    std::string cur;
    for (size_t j = i + 1; j < close; ++j) {
      const char c = s[j];
      if (c == ',') {
        if (cur.empty()) return bad();
        names.push_back(cur);
        cur.clear();
      } else if (std::isalnum(static_cast<unsigned char>(c)) || c == '_') {
        cur += c;
      } else if (c != ' ') {
        return bad();
      }
    }
    if (!cur.empty()) names.push_back(cur);
    groups.push_back(std::move(names));
    i = close + 1;
    while (i < s.size() && s[i] == ' ') ++i;
    if (i < s.size()) {
      if (s[i] != ',') return bad();
      ++i;
      while (i < s.size() && s[i] == ' ') ++i;
    }
  }
  return groups;
}

// The inputs on one block grid over the loop dimensions, whole along their
// core dimensions.
struct Prepared {
  int num_loop = 0;
  std::vector<std::vector<Index>> loop_sizes;  // block sizes per loop axis
  std::vector<Shape> out_cores;                // per output
  std::vector<int> core_counts;                // per input
  std::vector<Array> inputs;
  std::vector<InputMap> maps;  // over the loop axes (plus trailing axes: block 0)
  std::shared_ptr<const Spec> spec;
};

Result<Prepared> Prepare(std::string_view signature, const std::vector<Array>& inputs_in,
                         size_t num_dtypes, const GufuncOptions& options) {
  const std::string& name = options.name;
  auto fail = [&](std::string m) { return InvalidArgumentError(fmt::format("{}: {}", name, m)); };
  STRATA_RETURN_IF_ERROR(internal_api::FirstError(inputs_in));
  if (options.extra_mem < 0) return fail(fmt::format("extra_mem {} is negative", options.extra_mem));
  STRATA_ASSIGN_OR_RETURN(GufuncSignature sig, ParseGufuncSignature(signature, name));
  if (sig.inputs.size() != inputs_in.size()) {
    return fail(fmt::format("signature '{}' has {} inputs, {} arrays given", signature,
                            sig.inputs.size(), inputs_in.size()));
  }
  if (sig.outputs.size() != num_dtypes) {
    return fail(fmt::format("signature '{}' has {} outputs, {} dtypes given", signature,
                            sig.outputs.size(), num_dtypes));
  }
  Prepared p;
  p.spec = internal_api::SpecOf(inputs_in);
  STRATA_RETURN_IF_ERROR(
      internal_api::CheckCallingProcessOnly(name, options.calling_process_only, *p.spec));
  // Core sizes, loop shapes.
  std::map<std::string, Index> sizes = options.output_sizes;
  std::vector<Shape> loops;
  for (size_t i = 0; i < inputs_in.size(); ++i) {
    const Array& a = inputs_in[i];
    const auto& core = sig.inputs[i];
    const int nc = static_cast<int>(core.size());
    if (a.ndim() < nc) {
      return fail(fmt::format("input {} of shape {} has fewer axes than its core dimensions ({})",
                              i, ShapeToString(a.shape()), nc));
    }
    for (int c = 0; c < nc; ++c) {
      const int axis = a.ndim() - nc + c;
      const Index extent = a.shape()[axis];
      if (extent == 0) {
        return fail(fmt::format("core dimension '{}' of input {} has extent 0", core[c], i));
      }
      auto [it, fresh] = sizes.emplace(core[c], extent);
      if (!fresh && it->second != extent) {
        return fail(
            fmt::format("core dimension '{}' has sizes {} and {}", core[c], it->second, extent));
      }
      const Index chunks = a.chunks().grid_shape()[axis];
      if (!options.allow_rechunk && chunks > 1) {
        return fail(fmt::format(
            "core dimension '{}' of input {} is in {} chunks; rechunk it into one chunk along "
            "axis {} or allow rechunking (allow_rechunk), which may need much more memory per task",
            core[c], i, chunks, axis));
      }
    }
    loops.push_back(Shape(a.shape().begin(), a.shape().end() - nc));
    p.core_counts.push_back(nc);
  }
  for (const auto& out : sig.outputs) {
    Shape core;
    for (const std::string& dim : out) {
      auto it = sizes.find(dim);
      if (it == sizes.end()) {
        return fail(fmt::format("output dimension '{}' has no size (give it in output_sizes)", dim));
      }
      if (it->second < 0) return fail(fmt::format("output dimension '{}' has a negative size", dim));
      core.push_back(it->second);
    }
    p.out_cores.push_back(std::move(core));
  }
  Result<Shape> loop = BroadcastShapes(loops);
  if (!loop.ok()) return loop.status().WithContext(name + ": loop dimensions");
  const int nl = static_cast<int>(loop->size());
  p.num_loop = nl;
  // Loop chunks: per loop axis, from the first input spanning it.
  p.loop_sizes.resize(nl);
  for (int o = 0; o < nl; ++o) {
    p.loop_sizes[o] = (*loop)[o] == 0 ? std::vector<Index>{} : std::vector<Index>{(*loop)[o]};
    for (size_t i = 0; i < inputs_in.size(); ++i) {
      const int li = o - (nl - static_cast<int>(loops[i].size()));
      if (li >= 0 && loops[i][li] == (*loop)[o]) {
        p.loop_sizes[o] = inputs_in[i].chunks().AxisChunkSizes(li);
        break;
      }
    }
  }
  for (size_t i = 0; i < inputs_in.size(); ++i) {
    const Array& a = inputs_in[i];
    const int nli = static_cast<int>(loops[i].size());
    std::vector<std::vector<Index>> want(a.ndim());
    InputMap map;
    for (int d = 0; d < a.ndim(); ++d) {
      if (d >= nli) {
        want[d] = {a.shape()[d]};
        map.axes.push_back(AxisMap::Fixed({0}, 1));
        continue;
      }
      const int o = d + (nl - nli);
      if (a.shape()[d] == (*loop)[o]) {
        want[d] = p.loop_sizes[o];
        map.axes.push_back(AxisMap::Identity(o, static_cast<Index>(p.loop_sizes[o].size())));
      } else {
        want[d] = a.chunks().AxisChunkSizes(d);  // extent 1, broadcast
        map.axes.push_back(AxisMap::Fixed({0}, 1));
      }
    }
    p.inputs.push_back(internal_api::RechunkToGrid(a, GridFromSizes(want)));
    p.maps.push_back(std::move(map));
  }
  return p;
}

// What fn sees of each input block: the loop axes broadcast to the output
// block's (`loop_shape`), then the input's core axes as they are.
std::vector<ConstArrayView> LoopViews(const BlockRequest& r, std::span<const Index> loop_shape,
                                      const std::vector<int>& core_counts) {
  const int nl = static_cast<int>(loop_shape.size());
  std::vector<ConstArrayView> views;
  for (size_t i = 0; i < r.inputs.size(); ++i) {
    const ConstArrayView& v = r.inputs[i][0].view;
    const int nc = core_counts[i];
    const int nli = v.rank() - nc;
    Shape shape(nl + nc), strides(nl + nc, 0);
    for (int o = 0; o < nl; ++o) {
      shape[o] = loop_shape[o];
      const int d = o - (nl - nli);
      if (d >= 0 && v.shape()[d] == loop_shape[o]) strides[o] = v.byte_strides()[d];
    }
    for (int c = 0; c < nc; ++c) {
      shape[nl + c] = v.shape()[nli + c];
      strides[nl + c] = v.byte_strides()[nli + c];
    }
    views.push_back(ConstArrayView(v.data(), v.dtype(), shape, strides));
  }
  return views;
}

Status WrongBlock(std::string_view name, std::string_view which, const NDArray& got,
                  std::span<const Index> block, DType dtype, const Shape& want) {
  return InvalidArgumentError(fmt::format(
      "{}: the function returned a {} block of shape {} for {}block {}, expected {} of shape {}",
      name, got.dtype().name(), ShapeToString(got.shape()), which, JoinIndices(block, '.'),
      dtype.name(), ShapeToString(want)));
}

Shape Concat(std::span<const Index> a, const Shape& b) {
  Shape s(a.begin(), a.end());
  s.insert(s.end(), b.begin(), b.end());
  return s;
}

// One output: fn's block is the output block.
Array SingleOutput(MapBlocksFunction fn, Prepared p, DType dtype, const GufuncOptions& options) {
  std::vector<std::vector<Index>> out_sizes = p.loop_sizes;
  for (Index c : p.out_cores[0]) {
    out_sizes.push_back(c == 0 ? std::vector<Index>{} : std::vector<Index>{c});
  }
  ChunkGrid grid = GridFromSizes(out_sizes);
  const std::string name = options.name;
  BlockFunction block_fn = [fn = std::move(fn), dtype, nl = p.num_loop,
                            core_counts = p.core_counts, name](const BlockRequest& r) -> Result<NDArray> {
    const std::vector<ConstArrayView> views =
        LoopViews(r, std::span(r.box.shape).first(nl), core_counts);
    const BlockInfo info{r.block, r.box};
    Result<NDArray> out = fn(views, info, *r.pool);
    if (!out.ok()) {
      return out.status().WithContext(fmt::format("{}: block {}", name, JoinIndices(r.block, '.')));
    }
    if (out->shape() != r.box.shape || out->dtype() != dtype) {
      return WrongBlock(name, "", *out, r.block, dtype, r.box.shape);
    }
    return out;
  };
  const std::string reason = options.calling_process_only;
  return internal_api::MakeBlockwise(
      name, grid.shape(), dtype, grid, std::move(p.inputs), std::move(p.maps), std::move(block_fn),
      options.extra_mem, p.spec, NodeKind::kBlockwise,
      [&](Node& node) { node.calling_process_only = reason; });
}

}  // namespace

Result<GufuncSignature> ParseGufuncSignature(std::string_view signature, std::string_view op) {
  const size_t arrow = signature.find("->");
  if (arrow == std::string_view::npos) {
    return InvalidArgumentError(fmt::format("{}: signature '{}' has no '->'", op, signature));
  }
  GufuncSignature s;
  STRATA_ASSIGN_OR_RETURN(s.inputs, ParseGroups(signature.substr(0, arrow), signature, op));
  STRATA_ASSIGN_OR_RETURN(s.outputs, ParseGroups(signature.substr(arrow + 2), signature, op));
  if (s.outputs.empty()) {
    return InvalidArgumentError(fmt::format("{}: signature '{}' has no output", op, signature));
  }
  return s;
}

Array apply_gufunc(MapBlocksFunction fn, std::string_view signature,
                   const std::vector<Array>& inputs, DType dtype,
                   std::map<std::string, Index> output_sizes, int64_t extra_mem) {
  GufuncOptions options;
  options.output_sizes = std::move(output_sizes);
  options.extra_mem = extra_mem;
  return apply_gufunc(std::move(fn), signature, inputs, dtype, std::move(options));
}

Array apply_gufunc(MapBlocksFunction fn, std::string_view signature,
                   const std::vector<Array>& inputs, DType dtype, GufuncOptions options) {
  if (!fn) {
    return Array::FromStatus(
        InvalidArgumentError(fmt::format("{}: no function given", options.name)));
  }
  Result<Prepared> p = Prepare(signature, inputs, 1, options);
  if (!p.ok()) return Array::FromStatus(p.status());
  return SingleOutput(std::move(fn), *std::move(p), dtype, options);
}

std::vector<Array> apply_gufunc(GufuncFunction fn, std::string_view signature,
                                const std::vector<Array>& inputs, const std::vector<DType>& dtypes,
                                GufuncOptions options) {
  const std::string name = options.name;
  auto refused = [&](Status s) {
    return std::vector<Array>(std::max<size_t>(1, dtypes.size()), Array::FromStatus(s));
  };
  if (!fn) return refused(InvalidArgumentError(fmt::format("{}: no function given", name)));
  Result<Prepared> prepared = Prepare(signature, inputs, dtypes.size(), options);
  if (!prepared.ok()) return refused(prepared.status());
  Prepared& p = *prepared;
  const int nl = p.num_loop;
  const size_t k = dtypes.size();
  const Shape loop_shape = [&] {
    Shape s;
    for (const auto& sizes : p.loop_sizes) s.push_back(std::accumulate(sizes.begin(), sizes.end(), Index{0}));
    return s;
  }();
  if (k == 1) {
    // fn's one block is the output block.
    auto single = [fn = std::move(fn), nl](std::span<const ConstArrayView> blocks,
                                           const BlockInfo& info,
                                           MemoryPool& pool) -> Result<NDArray> {
      const Box loop(Shape(info.box.origin.begin(), info.box.origin.begin() + nl),
                     Shape(info.box.shape.begin(), info.box.shape.begin() + nl));
      STRATA_ASSIGN_OR_RETURN(std::vector<NDArray> out,
                              fn(blocks, BlockInfo{info.block.first(nl), loop}, pool));
      if (out.size() != 1) {
        return InvalidArgumentError(fmt::format("the function returned {} blocks, expected 1",
                                                out.size()));
      }
      return std::move(out[0]);
    };
    return {SingleOutput(std::move(single), std::move(p), dtypes[0], options)};
  }
  // Several outputs: fn's blocks packed into one block of bytes per loop
  // block, part by part (the widest dtypes first, so that every part starts
  // aligned for its dtype), then each output copies its part out.
  std::vector<size_t> order(k);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return dtypes[a].size() > dtypes[b].size(); });
  // Bytes per loop element of each output, and where its part starts (per
  // loop element: the part of output j starts at loop elements x prefix[j]).
  std::vector<Index> part(k), prefix(k);
  Index per_element = 0;
  for (size_t j : order) {
    part[j] = NumElements(p.out_cores[j]) * dtypes[j].size();
    prefix[j] = per_element;
    per_element += part[j];
  }
  std::vector<Array> outputs(k);
  if (per_element == 0 || NumElements(loop_shape) == 0) {
    // No output holds a value: fn has nothing to compute.
    for (size_t j = 0; j < k; ++j) {
      outputs[j] = zeros(Concat(loop_shape, p.out_cores[j]), {}, dtypes[j], *p.spec);
    }
    return outputs;
  }
  std::vector<std::vector<Index>> packed_sizes = p.loop_sizes;
  packed_sizes.push_back({per_element});
  ChunkGrid packed_grid = GridFromSizes(packed_sizes);
  int64_t results_bytes = 0;  // fn's blocks beside the packed copy
  Index max_loop_block = 1;
  for (const auto& sizes : p.loop_sizes) {
    max_loop_block *= sizes.empty() ? 0 : *std::max_element(sizes.begin(), sizes.end());
  }
  for (size_t j = 0; j < k; ++j) results_bytes += max_loop_block * part[j];
  BlockFunction pack = [fn = std::move(fn), dtypes, out_cores = p.out_cores, order, prefix, part,
                        nl, core_counts = p.core_counts,
                        name](const BlockRequest& r) -> Result<NDArray> {
    const std::span<const Index> loop_shape = std::span(r.box.shape).first(nl);
    const std::span<const Index> block = std::span(r.block).first(nl);
    const std::vector<ConstArrayView> views = LoopViews(r, loop_shape, core_counts);
    const Box loop(Shape(r.box.origin.begin(), r.box.origin.begin() + nl),
                   Shape(loop_shape.begin(), loop_shape.end()));
    Result<std::vector<NDArray>> got = fn(views, BlockInfo{block, loop}, *r.pool);
    if (!got.ok()) {
      return got.status().WithContext(fmt::format("{}: block {}", name, JoinIndices(block, '.')));
    }
    if (got->size() != dtypes.size()) {
      return InvalidArgumentError(fmt::format(
          "{}: the function returned {} blocks for block {}, the signature has {} outputs", name,
          got->size(), JoinIndices(block, '.'), dtypes.size()));
    }
    for (size_t j = 0; j < dtypes.size(); ++j) {
      const Shape want = Concat(loop_shape, out_cores[j]);
      const NDArray& out = (*got)[j];
      if (out.shape() != want || out.dtype() != dtypes[j]) {
        return WrongBlock(name, fmt::format("output {} of ", j), out, block, dtypes[j], want);
      }
    }
    STRATA_ASSIGN_OR_RETURN(NDArray packed, NDArray::Allocate(*r.pool, DTypeId::kUInt8, r.box.shape));
    const Index elements = NumElements(loop_shape);
    for (size_t j : order) {
      if (part[j] == 0) continue;
      std::memcpy(packed.data() + elements * prefix[j], (*got)[j].data(),
                  static_cast<size_t>(elements * part[j]));
    }
    return packed;
  };
  const std::string reason = options.calling_process_only;
  Array packed = internal_api::MakeBlockwise(
      name, packed_grid.shape(), DTypeId::kUInt8, packed_grid, std::move(p.inputs),
      std::move(p.maps), std::move(pack), options.extra_mem + results_bytes, p.spec,
      NodeKind::kBlockwise, [&](Node& node) {
        node.calling_process_only = reason;
        // Every output reads each packed block: computing it inside their
        // tasks would call fn once per output.
        node.keep_materialized = true;
      });
  if (!packed.ok()) return refused(packed.status());
  for (size_t j = 0; j < k; ++j) {
    std::vector<std::vector<Index>> sizes = p.loop_sizes;
    InputMap map;
    for (int o = 0; o < nl; ++o) {
      map.axes.push_back(AxisMap::Identity(o, static_cast<Index>(p.loop_sizes[o].size())));
    }
    map.axes.push_back(AxisMap::Fixed({0}, 1));
    for (Index c : p.out_cores[j]) sizes.push_back(c == 0 ? std::vector<Index>{} : std::vector<Index>{c});
    ChunkGrid grid = GridFromSizes(sizes);
    const DType dtype = dtypes[j];
    BlockFunction unpack = [dtype, nl, offset = prefix[j]](const BlockRequest& r) -> Result<NDArray> {
      ConstArrayView bytes = r.inputs[0][0].view;
      std::optional<NDArray> dense;  // only if the block came strided
      if (!bytes.is_contiguous()) {
        STRATA_ASSIGN_OR_RETURN(dense, NDArray::CopyOf(*r.pool, bytes));
        bytes = dense->view();
      }
      const Index elements = NumElements(std::span(r.box.shape).first(nl));
      return NDArray::CopyOf(*r.pool, ConstArrayView::Contiguous(bytes.data() + elements * offset,
                                                                  dtype, r.box.shape));
    };
    outputs[j] = internal_api::MakeBlockwise(fmt::format("{}-{}", name, j), grid.shape(), dtype,
                                             grid, {packed}, {std::move(map)}, std::move(unpack),
                                             0, p.spec);
  }
  return outputs;
}

}  // namespace strata
