// The S3 XML responses Strata reads (ListObjectsV2 pages, <Error> bodies) and
// the XML helpers under them, from untrusted bytes: an error or a value,
// never a crash.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "strata/storage/s3/s3_protocol.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace strata::internal_storage;
  std::string_view xml(reinterpret_cast<const char*>(data), size);
  (void)ParseListObjectsV2(xml);
  S3ErrorBody error = ParseErrorBody(xml);
  (void)IsRetryableResponse(503, error.code);
  (void)XmlUnescape(xml);
  (void)XmlFirst(xml, "UploadId");
  for (std::string_view e : XmlElements(xml, "Key")) (void)XmlUnescape(e);
  (void)UriDecode(xml, true);
  return 0;
}
