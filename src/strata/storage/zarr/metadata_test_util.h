// Helpers of the Zarr metadata tests (zarr/*metadata*_test.cc,
// fill_value_test.cc, chunk_key_test.cc): fill values as hex, encoding and
// parsing back, EXPECT_STATUS, the rows of the zarr-python document tables,
// a JSON edit that breaks a valid document in one way, and the Zarr v3 core
// specification's array example that the v3 tests start from.
#ifndef STRATA_STORAGE_ZARR_METADATA_TEST_UTIL_H_
#define STRATA_STORAGE_ZARR_METADATA_TEST_UTIL_H_

#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "strata/storage/zarr/metadata.h"

namespace strata::testing_zarr {

using ::nlohmann::json;

// ---------------------------------------------------------------------------
// Helpers.

inline std::string Hex(const std::vector<std::byte>& bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  for (std::byte b : bytes) {
    out += kDigits[static_cast<uint8_t>(b) >> 4];
    out += kDigits[static_cast<uint8_t>(b) & 15];
  }
  return out;
}

inline std::string FillHex(const FillValue& fill) { return fill.is_null ? "null" : Hex(fill.bytes); }

template <typename T>
FillValue FillOf(T value) {
  FillValue fill;
  fill.bytes.resize(sizeof(T));
  std::memcpy(fill.bytes.data(), &value, sizeof(T));
  return fill;
}

template <typename T>
FillValue ComplexFillOf(T re, T im) {
  FillValue fill;
  fill.bytes.resize(2 * sizeof(T));
  std::memcpy(fill.bytes.data(), &re, sizeof(T));
  std::memcpy(fill.bytes.data() + sizeof(T), &im, sizeof(T));
  return fill;
}

// The document stored under `key` by Encode(), or "" when there is none.
template <typename Metadata>
std::string EncodedDocument(const Metadata& metadata, std::string_view key) {
  for (const auto& [k, text] : metadata.Encode()) {
    if (k == key) return text;
  }
  return "";
}

template <typename Metadata>
std::vector<std::string> EncodedKeys(const Metadata& metadata) {
  std::vector<std::string> keys;
  for (const auto& [k, text] : metadata.Encode()) keys.push_back(k);
  return keys;
}

// Encodes `metadata` and parses the result back.
inline Result<ArrayMetadata> RoundTrip(const ArrayMetadata& metadata) {
  if (metadata.zarr_format == ZarrFormat::kV2) {
    return ParseZarrV2ArrayMetadata(EncodedDocument(metadata, kZarrayKey),
                                    EncodedDocument(metadata, kZattrsKey));
  }
  return ParseZarrV3ArrayMetadata(EncodedDocument(metadata, kZarrJsonKey));
}

#define EXPECT_STATUS(expr, expected_code, substring)                                       \
  do {                                                                                      \
    const ::strata::Status strata_test_status_ = ::strata::internal_base::ToStatus(expr);   \
    EXPECT_EQ(strata_test_status_.code(), expected_code) << strata_test_status_.ToString(); \
    EXPECT_NE(strata_test_status_.message().find(substring), std::string_view::npos)        \
        << "message: " << strata_test_status_.message()                                     \
        << "\nexpected to contain: " << (substring);                                        \
  } while (false)

struct ZarrPythonDocument {
  const char* name;
  DTypeId dtype;
  Endian endian;
  const char* fill_hex;  // "null" for fill_value null
  const char* zarray;
};

struct ZarrPythonCompressor {
  const char* name;
  std::vector<BytesCodecSpec> codecs;
  const char* zarray;
};

// A change to a valid document and the error it must give.
struct JsonEdit {
  const char* name;
  std::function<void(json&)> edit;
  StatusCode code;
  const char* message;
};

// The first array example of the Zarr v3 core specification, section "Array
// metadata" (zarr-specs docs/v3/core/index.rst; the v3.0 text had a gzip
// codec instead of bytes, the current text has bytes).
constexpr std::string_view kCoreSpecArrayExample = R"({
        "zarr_format": 3,
        "node_type": "array",
        "shape": [10000, 1000],
        "dimension_names": ["rows", "columns"],
        "data_type": "float64",
        "chunk_grid": {
            "name": "regular",
            "configuration": {
                "chunk_shape": [1000, 100]
            }
        },
        "chunk_key_encoding": {
            "name": "default",
            "configuration": {
                "separator": "/"
            }
        },
        "codecs": [{
            "name": "bytes",
            "configuration": {
                "endian": "little"
            }
        }],
        "fill_value": "NaN",
        "attributes": {
            "foo": 42,
            "bar": "apples",
            "baz": [1, 2, 3, 4]
        }
    })";

}  // namespace strata::testing_zarr

#endif  // STRATA_STORAGE_ZARR_METADATA_TEST_UTIL_H_
