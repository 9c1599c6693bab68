#include "strata/storage/zarr/json_util.h"

#include <fmt/format.h>

namespace strata::internal_zarr {

Status CheckJsonLimits(std::string_view text, std::string_view doc) {
  if (static_cast<int64_t>(text.size()) > kMaxJsonBytes) {
    return InvalidArgumentError(fmt::format("{} is {} bytes, more than the {} MiB Strata reads",
                                            doc, text.size(), kMaxJsonBytes >> 20));
  }
  int depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') {
        ++i;  // the escaped character, whatever it is
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > kMaxJsonDepth) {
        return InvalidArgumentError(
            fmt::format("{} nests JSON deeper than {} levels (at byte {}); refusing to read it",
                        doc, kMaxJsonDepth, i));
      }
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return Status::Ok();
}

Result<nlohmann::ordered_json> ParseLimitedJson(std::string_view text, std::string_view doc) {
  STRATA_RETURN_IF_ERROR(CheckJsonLimits(text, doc));
  try {
    nlohmann::ordered_json j = nlohmann::ordered_json::parse(text, nullptr,
                                                             /*allow_exceptions=*/false);
    if (j.is_discarded()) return InvalidArgumentError(fmt::format("malformed JSON in {}", doc));
    return j;
  } catch (const std::exception& e) {  // allocation failure; nothing else throws here
    return InvalidArgumentError(fmt::format("malformed JSON in {}: {}", doc, e.what()));
  }
}

}  // namespace strata::internal_zarr
