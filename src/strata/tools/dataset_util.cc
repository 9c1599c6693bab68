#include "strata/tools/dataset_util.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <charconv>

#include "strata/storage/zarr/hierarchy.h"

namespace strata {

std::string JoinUrl(const std::string& url, const std::string& member) {
  if (member.empty()) return url;
  const size_t query = url.rfind("s3://", 0) == 0 ? url.find('?') : std::string::npos;
  std::string path = url.substr(0, query);
  while (path.size() > 1 && path.back() == '/') path.pop_back();
  path += "/" + member;
  if (query != std::string::npos) path += url.substr(query);
  return path;
}

Result<NamedChunks> ParseNamedChunks(std::string_view text) {
  NamedChunks out;
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    std::string_view item = text.substr(start, comma == std::string_view::npos ? text.npos
                                                                              : comma - start);
    size_t eq = item.find('=');
    auto bad = [&] {
      return InvalidArgumentError(fmt::format(
          "--chunks item '{}' is not name=size (e.g. time=-1,lat=10; -1 is the whole axis)",
          item));
    };
    if (eq == std::string_view::npos || eq == 0) return bad();
    std::string_view value = item.substr(eq + 1);
    Index v = 0;
    auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
    if (ec != std::errc() || end != value.data() + value.size() || (v < 1 && v != -1)) {
      return bad();
    }
    std::string name(item.substr(0, eq));
    for (const auto& [seen, size] : out) {
      if (seen == name) {
        return InvalidArgumentError(fmt::format("--chunks names dimension '{}' twice", name));
      }
    }
    out.emplace_back(std::move(name), v);
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return out;
}

Result<std::vector<std::pair<std::string, Index>>> ParseNamedOrigin(std::string_view text) {
  std::vector<std::pair<std::string, Index>> out;
  size_t start = 0;
  while (true) {
    const size_t comma = text.find(',', start);
    std::string_view item = text.substr(start, comma == std::string_view::npos ? text.npos
                                                                              : comma - start);
    const size_t eq = item.find('=');
    std::string_view value = eq == std::string_view::npos ? "" : item.substr(eq + 1);
    Index v = -1;
    auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
    if (eq == std::string_view::npos || eq == 0 || ec != std::errc() ||
        end != value.data() + value.size() || v < 0) {
      return InvalidArgumentError(fmt::format(
          "--at item '{}' is not name=index (e.g. init_time=4: the first index it writes)",
          item));
    }
    std::string name(item.substr(0, eq));
    for (const auto& [seen, unused] : out) {
      if (seen == name) {
        return InvalidArgumentError(fmt::format("--at names dimension '{}' twice", name));
      }
    }
    out.emplace_back(std::move(name), v);
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return out;
}

Shape ChunksByName(const NamedChunks& named, const std::vector<std::optional<std::string>>& dims,
                   const Shape& shape, const Shape& current) {
  Shape chunks = current;
  for (size_t i = 0; i < chunks.size() && i < dims.size(); ++i) {
    if (!dims[i]) continue;
    for (const auto& [name, size] : named) {
      if (name != *dims[i]) continue;
      const Index extent = std::max<Index>(shape[i], 1);
      chunks[i] = size == -1 ? extent : std::min(size, extent);
    }
  }
  return chunks;
}

}  // namespace strata
