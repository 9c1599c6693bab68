// The parts of the AWS credential chain (s3_credentials.h) that can be tested
// without a server: the INI dialect of ~/.aws/credentials and ~/.aws/config,
// the timestamps and documents that STS and the metadata services answer
// with, and which HTTP endpoints may be spoken to without a proxy.
//
// All functions are pure and thread-safe.
#ifndef STRATA_STORAGE_S3_S3_CREDENTIALS_INTERNAL_H_
#define STRATA_STORAGE_S3_S3_CREDENTIALS_INTERNAL_H_

#include <chrono>
#include <map>
#include <string>
#include <string_view>

#include "strata/base/status.h"
#include "strata/storage/s3/s3_credentials.h"

namespace strata::internal_storage {

// Section name -> (key -> value) of an AWS shared credentials or config
// file, sections as written ("default", "profile dev"). Keys are lower-case;
// values are trimmed. Comments ('#' or ';' at the start of a line) and blank
// lines are skipped, as are the indented lines of a nested setting
// ("s3 =\n  addressing_style = path"). InvalidArgument naming `path` and the
// line for anything else that is not "[section]" or "key = value".
using IniSections = std::map<std::string, std::map<std::string, std::string>>;
Result<IniSections> ParseAwsIni(std::string_view text, std::string_view path);

// An ISO 8601 UTC time as the AWS services write it: "2026-12-04T21:35:00Z",
// with optional fractional seconds and "+00:00" for "Z". InvalidArgument
// otherwise.
Result<std::chrono::system_clock::time_point> ParseIso8601(std::string_view text);
// The inverse, to the second: "2026-12-04T21:35:00Z".
std::string FormatIso8601(std::chrono::system_clock::time_point time);

// The credentials in an AssumeRoleWithWebIdentity response
// (<AssumeRoleWithWebIdentityResponse> ... <Credentials>). InvalidArgument
// when an element is missing.
Result<AwsCredentials> ParseStsCredentials(std::string_view xml);

// The credentials in the JSON the container and instance metadata services
// answer with ({"AccessKeyId", "SecretAccessKey", "Token", "Expiration"};
// the instance's also has "Code": "Success"). InvalidArgument otherwise.
Result<AwsCredentials> ParseJsonCredentials(std::string_view json);

// The value of environment variable `name`, "" when unset.
std::string Getenv(const char* name);

// Whether `url`'s host is this machine (127.0.0.0/8, [::1], localhost).
bool IsLoopbackUrl(std::string_view url);

// Whether an http:// AWS_CONTAINER_CREDENTIALS_FULL_URI may be used, as the
// SDKs allow: a loopback host or the ECS/EKS agent addresses 169.254.170.2,
// 169.254.170.23 and [fd00:ec2::23]. (https:// is allowed anywhere.)
bool IsAllowedContainerHost(std::string_view url);

}  // namespace strata::internal_storage

#endif  // STRATA_STORAGE_S3_S3_CREDENTIALS_INTERNAL_H_
