// Limits on the JSON that Strata reads from storage (metadata documents,
// attributes, the incomplete-array marker), checked before any parser sees
// the text, and a parse that never throws.
//
// nlohmann::json builds, copies, prints and destroys values recursively, so a
// document nested 50,000 deep (a 100 KB `.zarray`) overflows the stack, and
// printing one nested 10,000 deep with indentation writes hundreds of MB.
// CheckJsonLimits is a linear scan with no recursion: it counts nesting
// outside strings and refuses past kMaxJsonDepth levels or kMaxJsonBytes.
//
// Thread-safety: free functions.
#ifndef STRATA_STORAGE_ZARR_JSON_UTIL_H_
#define STRATA_STORAGE_ZARR_JSON_UTIL_H_

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string_view>

#include "strata/base/status.h"

namespace strata::internal_zarr {

// Real metadata nests a handful of levels (CF attributes perhaps ten).
inline constexpr int kMaxJsonDepth = 128;
// Consolidated metadata of a large dataset runs to megabytes; nothing
// legitimate comes near this.
inline constexpr int64_t kMaxJsonBytes = int64_t{64} << 20;

// InvalidArgument naming `doc` ("zarr.json", ".zattrs") when `text` is larger
// than kMaxJsonBytes or nests arrays/objects deeper than kMaxJsonDepth. Says
// nothing about whether the text is otherwise valid JSON.
Status CheckJsonLimits(std::string_view text, std::string_view doc);

// CheckJsonLimits, then a parse that does not throw: InvalidArgument naming
// `doc` for malformed text.
Result<nlohmann::ordered_json> ParseLimitedJson(std::string_view text, std::string_view doc);

}  // namespace strata::internal_zarr

#endif  // STRATA_STORAGE_ZARR_JSON_UTIL_H_
