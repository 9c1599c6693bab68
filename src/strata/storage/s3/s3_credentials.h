// AWS credentials for S3Store: the standard AWS credential chain, as the AWS
// SDKs (boto3, the C++ and Go SDKs) resolve it, with refreshing of expiring
// credentials.
//
// The chain is tried in this order; the first source that is configured is
// used, and a source that is configured but fails is an error (the later ones
// are not tried, so a broken setup is never papered over by another one):
//
//   1. environment: AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and optionally
//      AWS_SESSION_TOKEN. Skipped when the options name a profile (the URL's
//      profile=), as boto3.Session(profile_name=...) skips it.
//   2. shared files, profile `profile` (else AWS_PROFILE, else "default"):
//      keys in the credentials file (AWS_SHARED_CREDENTIALS_FILE, default
//      ~/.aws/credentials, section [NAME]), else in the config file
//      (AWS_CONFIG_FILE, default ~/.aws/config, section [profile NAME] or
//      [default]); or web_identity_token_file + role_arn in the profile (then
//      as 3). A profile named explicitly that neither file has is an error.
//   3. web identity: AWS_WEB_IDENTITY_TOKEN_FILE and AWS_ROLE_ARN (optionally
//      AWS_ROLE_SESSION_NAME): STS AssumeRoleWithWebIdentity at
//      AWS_ENDPOINT_URL_STS, else AWS_ENDPOINT_URL, else
//      https://sts.REGION.amazonaws.com (https://sts.amazonaws.com with no
//      region or AWS_STS_REGIONAL_ENDPOINTS=legacy); the call, retries
//      included, gets `sts_timeout_seconds`. The token file is read again at
//      every refresh (Kubernetes rotates it).
//   4. container: AWS_CONTAINER_CREDENTIALS_RELATIVE_URI (on
//      http://169.254.170.2) or AWS_CONTAINER_CREDENTIALS_FULL_URI, with the
//      header "Authorization:" from AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE or
//      AWS_CONTAINER_AUTHORIZATION_TOKEN (ECS tasks, EKS Pod Identity).
//   5. instance metadata (IMDSv2, falling back to v1 when the token PUT is
//      refused with 403/404/405 unless AWS_EC2_METADATA_V1_DISABLED=true) at
//      AWS_EC2_METADATA_SERVICE_ENDPOINT, else per
//      AWS_EC2_METADATA_SERVICE_ENDPOINT_MODE (IPv4: http://169.254.169.254,
//      IPv6: http://[fd00:ec2::254]); off with AWS_EC2_METADATA_DISABLED=true;
//      AWS_METADATA_SERVICE_TIMEOUT (seconds, default 1) and
//      AWS_METADATA_SERVICE_NUM_ATTEMPTS (default 1) bound each request. An
//      unreachable service or an instance without a role counts as "not
//      configured".
//
// When no source is configured the result is PermissionDenied with one line
// naming every place looked at. Errors name the source and the cause:
// "web identity: STS at http://127.0.0.1:4000 answered 403 AccessDenied
// (...)". A server that refuses connections or does not answer is an error
// after its timeout, never a hang.
//
// Lifecycle: ResolveAwsCredentialChain picks the source once (fetching its
// first credentials) and returns a provider; Get() returns the provider's
// current credentials, fetching new ones when they expire within
// kAwsCredentialRefreshWindow (if that fetch fails, the old ones are used
// while they are still valid). Resolved providers are shared process-wide
// between stores with the same configuration (options, environment
// variables, shared files' contents), so that opening many stores costs one
// STS or metadata call, not one each.
//
// Thread-safety: every function and every provider method may be called from
// many threads at once; a refresh holds the provider's lock, so concurrent
// callers wait for it rather than fetch twice.
#ifndef STRATA_STORAGE_S3_S3_CREDENTIALS_H_
#define STRATA_STORAGE_S3_S3_CREDENTIALS_H_

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "strata/base/status.h"

namespace strata {

struct AwsCredentials {
  std::string access_key_id;
  std::string secret_access_key;
  // Temporary credentials only (sent as x-amz-security-token).
  std::string session_token;
  // When they stop working; nullopt for long-term keys.
  std::optional<std::chrono::system_clock::time_point> expiration;
};

// Credentials are fetched again once they expire within this long.
inline constexpr std::chrono::minutes kAwsCredentialRefreshWindow{5};

// Where a store's credentials come from. See the file comment.
class AwsCredentialProvider {
 public:
  virtual ~AwsCredentialProvider() = default;
  // The current credentials. The error of the source when fresh ones are
  // needed and cannot be had.
  virtual Result<AwsCredentials> Get() = 0;
  // The source, for messages: "environment", "web identity (role arn:...)".
  virtual std::string description() const = 0;
};

// A provider that always returns `credentials`.
std::shared_ptr<AwsCredentialProvider> StaticAwsCredentialProvider(AwsCredentials credentials,
                                                                   std::string description);

struct AwsCredentialChainOptions {
  // The shared-file profile; empty: AWS_PROFILE, else AWS_DEFAULT_PROFILE, else "default".
  std::string profile;
  // For the regional STS endpoint; empty: AWS_REGION, AWS_DEFAULT_REGION,
  // the profile's region.
  std::string region;
  // The budget of one STS call, retries included (the store's `timeout`).
  double sts_timeout_seconds = 30;
};

// The provider of the first configured source of the chain, with its first
// credentials fetched. PermissionDenied "no AWS credentials found (looked
// at: ...)" when no source is configured; the source's error when the one
// configured fails (InvalidArgument for a malformed setting or file,
// PermissionDenied for refused credentials, Unavailable for an unreachable
// or failing server).
Result<std::shared_ptr<AwsCredentialProvider>> ResolveAwsCredentialChain(
    const AwsCredentialChainOptions& options);

// The region from AWS_REGION, AWS_DEFAULT_REGION, then the `region` of
// `profile` (empty: as in AwsCredentialChainOptions) in the config file; ""
// when none says.
std::string ResolveAwsRegion(std::string_view profile);

}  // namespace strata

#endif  // STRATA_STORAGE_S3_S3_CREDENTIALS_H_
