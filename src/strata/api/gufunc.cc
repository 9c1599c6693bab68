// api/gufunc.h.
#include "strata/api/gufunc.h"

#include <fmt/format.h>

#include <cctype>

#include "strata/api/internal.h"
#include "strata/core/kernels/elementwise.h"

namespace strata {

using internal_api::GridFromSizes;

namespace {

// "(i,j),(j)->(i)" -> {{"i","j"},{"j"}} and {"i"}.
struct Signature {
  std::vector<std::vector<std::string>> inputs;
  std::vector<std::string> output;
};

Result<std::vector<std::vector<std::string>>> ParseGroups(std::string_view s,
                                                          std::string_view all) {
  std::vector<std::vector<std::string>> groups;
  size_t i = 0;
  auto bad = [&]() {
    return InvalidArgumentError(fmt::format("apply_gufunc: malformed signature '{}'", all));
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

Result<Signature> Parse(std::string_view sig) {
  const size_t arrow = sig.find("->");
  if (arrow == std::string_view::npos) {
    return InvalidArgumentError(fmt::format("apply_gufunc: signature '{}' has no '->'", sig));
  }
  Signature s;
  STRATA_ASSIGN_OR_RETURN(s.inputs, ParseGroups(sig.substr(0, arrow), sig));
  STRATA_ASSIGN_OR_RETURN(std::vector<std::vector<std::string>> out,
                          ParseGroups(sig.substr(arrow + 2), sig));
  if (out.size() != 1) {
    return InvalidArgumentError(
        fmt::format("apply_gufunc: signature '{}' must have exactly one output", sig));
  }
  s.output = std::move(out[0]);
  return s;
}

}  // namespace

Array apply_gufunc(MapBlocksFunction fn, std::string_view signature,
                   const std::vector<Array>& inputs_in, DType dtype,
                   std::map<std::string, Index> output_sizes, int64_t extra_mem) {
  if (Status s = internal_api::FirstError(inputs_in); !s.ok()) return Array::FromStatus(s);
  auto fail = [](std::string m) {
    return Array::FromStatus(InvalidArgumentError("apply_gufunc: " + m));
  };
  if (!fn) return fail("no function given");
  if (extra_mem < 0) return fail("extra_mem is negative");
  Result<Signature> sig = Parse(signature);
  if (!sig.ok()) return Array::FromStatus(sig.status());
  if (sig->inputs.size() != inputs_in.size()) {
    return fail(fmt::format("signature '{}' has {} inputs, {} arrays given", signature,
                            sig->inputs.size(), inputs_in.size()));
  }
  // Core sizes, loop shapes.
  std::map<std::string, Index> sizes = std::move(output_sizes);
  std::vector<Shape> loops;
  for (size_t i = 0; i < inputs_in.size(); ++i) {
    const Array& a = inputs_in[i];
    const auto& core = sig->inputs[i];
    const int nc = static_cast<int>(core.size());
    if (a.ndim() < nc) {
      return fail(fmt::format("input {} of shape {} has fewer axes than its core dimensions ({})",
                              i, ShapeToString(a.shape()), nc));
    }
    for (int c = 0; c < nc; ++c) {
      const Index extent = a.shape()[a.ndim() - nc + c];
      if (extent == 0) {
        return fail(fmt::format("core dimension '{}' of input {} has extent 0", core[c], i));
      }
      auto [it, fresh] = sizes.emplace(core[c], extent);
      if (!fresh && it->second != extent) {
        return fail(
            fmt::format("core dimension '{}' has sizes {} and {}", core[c], it->second, extent));
      }
    }
    loops.push_back(Shape(a.shape().begin(), a.shape().end() - nc));
  }
  Shape out_core;
  for (const std::string& name : sig->output) {
    auto it = sizes.find(name);
    if (it == sizes.end()) {
      return fail(fmt::format("output dimension '{}' has no size (give it in output_sizes)", name));
    }
    out_core.push_back(it->second);
  }
  Result<Shape> loop = BroadcastShapes(loops);
  if (!loop.ok())
    return Array::FromStatus(loop.status().WithContext("apply_gufunc: loop dimensions"));
  const int nl = static_cast<int>(loop->size());
  // Loop chunks: per loop axis, from the first input spanning it.
  std::vector<std::vector<Index>> loop_sizes(nl);
  for (int o = 0; o < nl; ++o) {
    loop_sizes[o] = (*loop)[o] == 0 ? std::vector<Index>{} : std::vector<Index>{(*loop)[o]};
    for (size_t i = 0; i < inputs_in.size(); ++i) {
      const int li = o - (nl - static_cast<int>(loops[i].size()));
      if (li >= 0 && loops[i][li] == (*loop)[o]) {
        loop_sizes[o] = inputs_in[i].chunks().AxisChunkSizes(li);
        break;
      }
    }
  }
  std::vector<Array> inputs;
  std::vector<InputMap> maps;
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
        want[d] = loop_sizes[o];
        map.axes.push_back(AxisMap::Identity(o, static_cast<Index>(loop_sizes[o].size())));
      } else {
        want[d] = a.chunks().AxisChunkSizes(d);  // extent 1, broadcast
        map.axes.push_back(AxisMap::Fixed({0}, 1));
      }
    }
    inputs.push_back(internal_api::RechunkToGrid(a, GridFromSizes(want)));
    maps.push_back(std::move(map));
  }
  std::vector<std::vector<Index>> out_sizes = loop_sizes;
  for (Index c : out_core)
    out_sizes.push_back(c == 0 ? std::vector<Index>{} : std::vector<Index>{c});
  ChunkGrid grid = GridFromSizes(out_sizes);
  std::vector<int> core_counts;
  for (const auto& c : sig->inputs) core_counts.push_back(static_cast<int>(c.size()));
  BlockFunction block_fn = [fn = std::move(fn), dtype, nl,
                            core_counts](const BlockRequest& r) -> Result<NDArray> {
    std::vector<ConstArrayView> views;
    for (size_t i = 0; i < r.inputs.size(); ++i) {
      const ConstArrayView& v = r.inputs[i][0].view;
      const int nc = core_counts[i];
      const int nli = v.rank() - nc;
      // Loop axes broadcast to the output block's; core axes as they are.
      Shape shape(nl + nc), strides(nl + nc, 0);
      for (int o = 0; o < nl; ++o) {
        shape[o] = r.box.shape[o];
        const int d = o - (nl - nli);
        if (d >= 0 && v.shape()[d] == r.box.shape[o]) strides[o] = v.byte_strides()[d];
      }
      for (int c = 0; c < nc; ++c) {
        shape[nl + c] = v.shape()[nli + c];
        strides[nl + c] = v.byte_strides()[nli + c];
      }
      views.push_back(ConstArrayView(v.data(), v.dtype(), shape, strides));
    }
    const BlockInfo info{r.block, r.box};
    Result<NDArray> out = fn(views, info, *r.pool);
    if (!out.ok()) {
      return out.status().WithContext(
          fmt::format("apply_gufunc: block {}", JoinIndices(r.block, '.')));
    }
    if (out->shape() != r.box.shape || out->dtype() != dtype) {
      return InvalidArgumentError(fmt::format(
          "apply_gufunc: the function returned a {} block of shape {} for block {}, expected {} of "
          "shape {}",
          out->dtype().name(), ShapeToString(out->shape()), JoinIndices(r.block, '.'), dtype.name(),
          ShapeToString(r.box.shape)));
    }
    return out;
  };
  return internal_api::MakeBlockwise("apply_gufunc", grid.shape(), dtype, grid, std::move(inputs),
                                     std::move(maps), std::move(block_fn), extra_mem,
                                     internal_api::SpecOf(inputs_in));
}

}  // namespace strata
