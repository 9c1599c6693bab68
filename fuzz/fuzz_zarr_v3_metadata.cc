// Zarr v3 `zarr.json` from untrusted bytes, as an array and as a group.
// Parsing must return an error or metadata, never crash; metadata that
// parses must encode and parse back to the same document.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "strata/base/check.h"
#include "strata/storage/zarr/metadata.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  strata::Result<strata::ArrayMetadata> m = strata::ParseZarrV3ArrayMetadata(text);
  if (m.ok()) {
    auto docs = m->Encode();
    STRATA_CHECK(docs.size() == 1);
    strata::Result<strata::ArrayMetadata> again = strata::ParseZarrV3ArrayMetadata(docs[0].second);
    STRATA_CHECK(again.ok()) << again.status().ToString() << "\n" << docs[0].second;
    STRATA_CHECK(again->Encode() == docs) << docs[0].second;
    (void)strata::DescribeEncoding(*m);
  }
  strata::Result<strata::GroupMetadata> g = strata::ParseZarrV3GroupMetadata(text);
  if (g.ok()) (void)g->Encode();
  return 0;
}
