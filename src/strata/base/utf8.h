// UTF-8 encoding of Unicode code points: the one encoder of the code base
// (Zarr's fixed_length_utf32 fill values, the S3 XML parser's character
// references, NDArray's element printing).
//
// Thread-safety: a free function of its arguments.
#ifndef STRATA_BASE_UTF8_H_
#define STRATA_BASE_UTF8_H_

#include <cstdint>
#include <string>

namespace strata {

// The largest Unicode code point.
inline constexpr uint32_t kMaxCodePoint = 0x10FFFF;

// Appends `code_point` to `out` as UTF-8 (1 to 4 bytes) and returns true; a
// value past kMaxCodePoint is no code point: nothing is appended and false is
// returned, for the caller to report or replace. Surrogates (U+D800..DFFF)
// are encoded as they are, as Python's "surrogatepass" does; a caller that
// must refuse them checks first.
bool AppendUtf8(uint32_t code_point, std::string& out);

}  // namespace strata

#endif  // STRATA_BASE_UTF8_H_
