// The sources of the AWS credential chain (s3_credentials.h), each in its
// own file, and what they share:
//   s3_credentials.cc              the chain's order, the environment source,
//                                  the cache of resolved providers
//   profile_credentials.cc         ~/.aws/credentials and ~/.aws/config
//   web_identity_credentials.cc    STS AssumeRoleWithWebIdentity
//   container_credentials.cc       the ECS/EKS container endpoint
//   imds_credentials.cc            EC2 instance metadata (IMDSv2, then v1)
//   credential_io.cc               environment, files and HTTP for all of them
//   s3_credentials_internal.cc     the documents they read (pure)
//
// Thread-safety: free functions; RefreshingProvider is safe to call
// concurrently.
#ifndef STRATA_STORAGE_S3_CREDENTIAL_SOURCES_H_
#define STRATA_STORAGE_S3_CREDENTIAL_SOURCES_H_

#include <chrono>
#include <cmath>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "strata/base/status.h"
#include "strata/base/thread_annotations.h"
#include "strata/storage/s3/s3_credentials.h"
#include "strata/storage/s3/s3_credentials_internal.h"

namespace strata::internal_storage {

using Clock = std::chrono::system_clock;

// ---------------------------------------------------------------------------
// Text, environment and files (credential_io.cc, s3_credentials_internal.cc).

std::string_view Trim(std::string_view s);
std::string Lower(std::string_view s);
// The host of an http(s):// URL ("[::1]" with its brackets).
std::string_view UrlHost(std::string_view url);

// Whether environment variable `name` is "true" (any case, trimmed).
bool EnvIsTrue(const char* name);
// "~/x" -> "$HOME/x".
std::string ExpandUser(std::string path);
// The file's text, nullopt when it does not exist; an error naming `what`
// when it exists but cannot be read.
Result<std::optional<std::string>> ReadFileIfExists(const std::string& path,
                                                    std::string_view what);

// ---------------------------------------------------------------------------
// HTTP for the credential services: small bodies, a hard timeout per attempt
// (credential_io.cc).

struct HttpCall {
  const char* method = "GET";
  std::string url;
  std::vector<std::string> headers;
  std::string body;
  double timeout_seconds = 1;
};

struct HttpReply {
  long status = 0;
  std::string body;
};

// One attempt. Unavailable "URL: <libcurl's reason>" when no response came.
Result<HttpReply> HttpSend(const HttpCall& call);

// The start of a body, on one line, for messages.
std::string BodyHead(std::string_view body);

// Runs `attempt` up to `attempts` times while it fails transiently and
// `budget_seconds` lasts, passing each try the time left; sleeps 0.1, 0.2,
// 0.4 s between tries.
template <typename F>
auto WithRetries(int attempts, double budget_seconds, F attempt) -> decltype(attempt(1.0)) {
  const auto start = std::chrono::steady_clock::now();
  for (int k = 1;; ++k) {
    const double spent =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    auto result = attempt(std::max(0.05, budget_seconds - spent));
    if (result.ok() || result.status().code() != StatusCode::kUnavailable || k >= attempts) {
      return result;
    }
    const double pause = 0.1 * std::ldexp(1.0, k - 1);
    const double now_spent =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (now_spent + pause >= budget_seconds) return result;
    std::this_thread::sleep_for(std::chrono::duration<double>(pause));
  }
}

// ---------------------------------------------------------------------------
// Providers (s3_credentials.cc).

// Fetches credentials with `fetch` when those it has expire within the
// refresh window; keeps using them while still valid if a fetch fails.
class RefreshingProvider : public AwsCredentialProvider {
 public:
  using Fetch = std::function<Result<AwsCredentials>()>;
  RefreshingProvider(std::string description, Fetch fetch, AwsCredentials first)
      : description_(std::move(description)), fetch_(std::move(fetch)), cached_(std::move(first)) {}

  Result<AwsCredentials> Get() override STRATA_EXCLUDES(mu_);
  std::string description() const override { return description_; }

 private:
  const std::string description_;
  const Fetch fetch_;
  Mutex mu_;
  AwsCredentials cached_ STRATA_GUARDED_BY(mu_);
};

// ---------------------------------------------------------------------------
// The sources, in the chain's order. Each returns its provider, nothing when
// it is not configured (noting in `looked` where it looked), or the error of
// a configured source that fails.

using MaybeProvider = std::optional<std::shared_ptr<AwsCredentialProvider>>;

struct ChainContext {
  const AwsCredentialChainOptions& options;
  std::string region;  // for the regional STS endpoint
  std::vector<std::string> looked;
};

Result<MaybeProvider> FromEnvironment(ChainContext& chain);   // s3_credentials.cc
Result<MaybeProvider> FromSharedFiles(ChainContext& chain);   // profile_credentials.cc
Result<MaybeProvider> FromWebIdentity(ChainContext& chain);   // web_identity_credentials.cc
Result<MaybeProvider> FromContainer(ChainContext& chain);     // container_credentials.cc
Result<MaybeProvider> FromInstanceMetadata(ChainContext& chain);  // imds_credentials.cc

// ---------------------------------------------------------------------------
// Shared files (profile_credentials.cc).

std::string ProfileName(const std::string& explicit_profile);
std::string CredentialsFilePath();
std::string ConfigFilePath();

// One profile's settings from both files.
struct Profile {
  std::string name;
  std::string credentials_path;
  std::string config_path;
  std::optional<std::map<std::string, std::string>> credentials;  // from the credentials file
  std::optional<std::map<std::string, std::string>> config;       // from the config file
};

Result<Profile> LoadProfile(const std::string& name);

// The value of `key` in a profile's section, "" when absent.
std::string Setting(const std::optional<std::map<std::string, std::string>>& section,
                    const char* key);

// ---------------------------------------------------------------------------
// Web identity (web_identity_credentials.cc), also configured by a profile.

struct WebIdentityConfig {
  std::string token_file;
  std::string role_arn;
  std::string session_name;
  std::string sts_endpoint;
  double timeout_seconds = 30;
};

// The provider for `config` with the chain's region and timeout filled in.
Result<MaybeProvider> WebIdentitySource(WebIdentityConfig config, const ChainContext& chain);

}  // namespace strata::internal_storage

#endif  // STRATA_STORAGE_S3_CREDENTIAL_SOURCES_H_
