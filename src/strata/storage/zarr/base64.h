// Standard base64 (RFC 4648, with padding), as Python's
// base64.standard_b64encode/decode: zarr-python writes the fill values of
// bytes types with it, and xarray a float _FillValue attribute in Zarr v3.
// Pure functions, safe from any thread.
#ifndef STRATA_STORAGE_ZARR_BASE64_H_
#define STRATA_STORAGE_ZARR_BASE64_H_

#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace strata {

std::string Base64Encode(std::span<const std::byte> bytes);

// nullopt when `text` is not padded base64 (a length that is no multiple of
// 4, a character outside the alphabet, '=' anywhere but at the end).
std::optional<std::vector<std::byte>> Base64Decode(std::string_view text);

}  // namespace strata

#endif  // STRATA_STORAGE_ZARR_BASE64_H_
