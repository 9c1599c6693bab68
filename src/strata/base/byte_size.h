// Byte sizes as users write them: "400MB", "2GiB", "1.5 GB", "1048576".
//
// Decimal units (kB, MB, GB, TB) are powers of 1000 and binary units (KiB, MiB,
// GiB, TiB) powers of 1024, as in Cubed and Dask. Units are case-insensitive;
// a bare number is bytes.
#ifndef STRATA_BASE_BYTE_SIZE_H_
#define STRATA_BASE_BYTE_SIZE_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "strata/base/status.h"

namespace strata {

// Parses a size. InvalidArgument names the text when it is not a size, is
// negative, or overflows int64.
Result<int64_t> ParseByteSize(std::string_view text);

// Formats a size with a decimal unit and 3 significant digits: "80.0 MB".
std::string FormatBytes(int64_t bytes);

}  // namespace strata

#endif  // STRATA_BASE_BYTE_SIZE_H_
