// The parts of the S3 protocol that S3Store needs and that can be tested
// without a server: URI encoding for SigV4, the XML of ListObjectsV2, error
// bodies and multipart uploads, and which responses are worth a retry.
//
// All functions are pure and thread-safe.
#ifndef STRATA_STORAGE_S3_S3_PROTOCOL_H_
#define STRATA_STORAGE_S3_S3_PROTOCOL_H_

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "strata/base/status.h"

namespace strata::internal_storage {

// RFC 3986 percent-encoding as SigV4 canonicalises it: every byte except
// A-Z a-z 0-9 - _ . ~ (and '/' when `keep_slash`) becomes %XX, upper-case hex.
std::string UriEncode(std::string_view text, bool keep_slash);

// Decodes %XX escapes (and '+' as a space when `plus_is_space`).
// InvalidArgument for a malformed escape.
Result<std::string> UriDecode(std::string_view text, bool plus_is_space);

// A query string in the form libcurl's SigV4 signer expects it to be already
// canonical in: parameters sorted by name, names and values UriEncoded, "="
// always present. `params` are unencoded (name, value) pairs.
std::string CanonicalQuery(std::vector<std::pair<std::string, std::string>> params);

// Replaces the five predefined XML entities and numeric character references
// (&#10; &#x1F600;) by the characters they stand for. InvalidArgument for an
// unknown or malformed reference.
Result<std::string> XmlUnescape(std::string_view text);

// The raw (still escaped) contents of every element named `name`, in document
// order; "" for <name/>. Elements of one name must not nest, which holds for
// every S3 response this is used on.
std::vector<std::string_view> XmlElements(std::string_view xml, std::string_view name);

// The unescaped contents of the first element named `name`, or nullopt.
Result<std::optional<std::string>> XmlFirst(std::string_view xml, std::string_view name);

// One page of a ListObjectsV2 response.
struct ListPage {
  std::vector<std::string> keys;  // unescaped, as stored in the bucket
  bool truncated = false;
  std::string next_continuation_token;
};
// InvalidArgument when the document is not a ListBucketResult or a truncated
// page has no continuation token.
Result<ListPage> ParseListObjectsV2(std::string_view xml);

// The Code and Message of an S3 <Error> document (empty when absent).
struct S3ErrorBody {
  std::string code;
  std::string message;
};
S3ErrorBody ParseErrorBody(std::string_view xml);

// Whether a response with this HTTP status and S3 error code is transient:
// 5xx, 429, SlowDown, RequestTimeout, Throttling.
bool IsRetryableResponse(long http_status, std::string_view code);

// The body of CompleteMultipartUpload for parts 1..etags.size().
std::string CompleteMultipartUploadBody(const std::vector<std::string>& etags);

// Part size for a value of `size` bytes: `preferred`, raised so that at most
// 10,000 parts are needed.
int64_t MultipartPartSize(int64_t size, int64_t preferred);

}  // namespace strata::internal_storage

#endif  // STRATA_STORAGE_S3_S3_PROTOCOL_H_
