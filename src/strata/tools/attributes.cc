#include <nlohmann/json.hpp>

#include "strata/tools/commands.h"

namespace strata {

CarriedAttributes CarryAttributes(const ArrayMetadata& source, ZarrFormat format) {
  using json = nlohmann::ordered_json;
  CarriedAttributes out;
  out.fill_value = source.fill_value;
  if (format == ZarrFormat::kV3 && out.fill_value.is_null) {
    out.fill_value = ZeroFillValue(source.dtype());
  }
  out.attributes_json = source.attributes_json;
  if (format == ZarrFormat::kV3) {
    out.dimension_names = source.dimension_names;
  }
  // Already parsed (and size- and depth-checked) when the source was opened.
  json attributes = json::parse(source.attributes_json, nullptr, /*allow_exceptions=*/false);
  if (!attributes.is_object()) return out;
  auto found = attributes.find("_ARRAY_DIMENSIONS");
  if (format == ZarrFormat::kV3 && !out.dimension_names && found != attributes.end() &&
      found->is_array() && static_cast<int>(found->size()) == source.rank()) {
    std::vector<std::optional<std::string>> names;
    for (const json& n : *found) {
      if (!n.is_string()) return out;
      names.emplace_back(n.get<std::string>());
    }
    out.dimension_names = std::move(names);
  }
  if (format == ZarrFormat::kV2 && source.dimension_names && found == attributes.end()) {
    json names = json::array();
    for (const auto& n : *source.dimension_names) {
      if (!n) return out;  // xarray needs a name for every axis
      names.push_back(*n);
    }
    attributes["_ARRAY_DIMENSIONS"] = std::move(names);
    out.attributes_json = attributes.dump();
  }
  return out;
}

}  // namespace strata
