// Zarr v2 metadata from untrusted bytes: `.zarray` (and `.zattrs`, after the
// first NUL byte) and `.zgroup`. Parsing must return an error or metadata,
// never crash; metadata that parses must encode and parse back to the same
// documents.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "strata/base/check.h"
#include "strata/storage/zarr/metadata.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  std::string_view zattrs;
  if (size_t nul = text.find('\0'); nul != std::string_view::npos) {
    zattrs = text.substr(nul + 1);
    text = text.substr(0, nul);
  }
  strata::Result<strata::ArrayMetadata> m = strata::ParseZarrV2ArrayMetadata(text, zattrs);
  if (m.ok()) {
    auto docs = m->Encode();
    std::string zarray, attrs;
    for (const auto& [key, doc] : docs) (key == ".zarray" ? zarray : attrs) = doc;
    strata::Result<strata::ArrayMetadata> again = strata::ParseZarrV2ArrayMetadata(zarray, attrs);
    STRATA_CHECK(again.ok()) << again.status().ToString() << "\n" << zarray;
    STRATA_CHECK(again->Encode() == docs) << zarray;
    (void)strata::DescribeEncoding(*m);
  }
  (void)strata::ParseZarrV2GroupMetadata(text, zattrs);
  return 0;
}
