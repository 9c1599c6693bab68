// The AWS credential chain (s3_credentials.h): its order, the environment
// source, static and refreshing providers, and the cache of resolved ones.
// The other sources have their own files (credential_sources.h).
#include "strata/storage/s3/s3_credentials.h"

#include <fmt/format.h>

#include <map>

#include "strata/storage/s3/credential_sources.h"

namespace strata {
namespace internal_storage {

Result<AwsCredentials> RefreshingProvider::Get() {
  MutexLock lock(&mu_);
  const Clock::time_point now = Clock::now();
  if (!cached_.expiration || now < *cached_.expiration - kAwsCredentialRefreshWindow) {
    return cached_;
  }
  Result<AwsCredentials> fresh = fetch_();
  if (fresh.ok()) {
    cached_ = *fresh;
    return cached_;
  }
  if (now < *cached_.expiration) return cached_;
  return fresh.status().WithContext(
      fmt::format("refreshing the credentials that expired at {}",
                  FormatIso8601(*cached_.expiration)));
}

Result<MaybeProvider> FromEnvironment(ChainContext& chain) {
  // A profile named in the options wins, as boto3.Session(profile_name=...).
  if (!chain.options.profile.empty()) {
    chain.looked.push_back(
        fmt::format("environment (skipped: profile '{}' asked for)", chain.options.profile));
    return MaybeProvider();
  }
  const std::string key = Getenv("AWS_ACCESS_KEY_ID");
  const std::string secret = Getenv("AWS_SECRET_ACCESS_KEY");
  if (key.empty() && secret.empty()) {
    chain.looked.push_back("environment (AWS_ACCESS_KEY_ID unset)");
    return MaybeProvider();
  }
  if (key.empty() || secret.empty()) {
    return InvalidArgumentError(fmt::format(
        "environment: {} is set but {} is not",
        key.empty() ? "AWS_SECRET_ACCESS_KEY" : "AWS_ACCESS_KEY_ID",
        key.empty() ? "AWS_ACCESS_KEY_ID" : "AWS_SECRET_ACCESS_KEY"));
  }
  AwsCredentials c;
  c.access_key_id = key;
  c.secret_access_key = secret;
  c.session_token = Getenv("AWS_SESSION_TOKEN");
  return MaybeProvider(StaticAwsCredentialProvider(std::move(c), "environment"));
}

}  // namespace internal_storage

namespace {

namespace is = internal_storage;
using is::ChainContext;
using is::Getenv;
using is::MaybeProvider;

class StaticProvider : public AwsCredentialProvider {
 public:
  StaticProvider(AwsCredentials credentials, std::string description)
      : credentials_(std::move(credentials)), description_(std::move(description)) {}
  Result<AwsCredentials> Get() override { return credentials_; }
  std::string description() const override { return description_; }

 private:
  const AwsCredentials credentials_;
  const std::string description_;
};

using Source = Result<MaybeProvider> (*)(ChainContext&);
constexpr Source kChain[] = {is::FromEnvironment, is::FromSharedFiles, is::FromWebIdentity,
                             is::FromContainer, is::FromInstanceMetadata};

// ---------------------------------------------------------------------------
// Resolved providers, shared between stores of one configuration (so that
// opening many stores costs one STS or metadata call, not one each).

// Every variable the chain reads.
constexpr const char* kChainVariables[] = {
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "AWS_PROFILE",
    "AWS_DEFAULT_PROFILE",
    "AWS_SHARED_CREDENTIALS_FILE",
    "AWS_CONFIG_FILE",
    "HOME",
    "AWS_WEB_IDENTITY_TOKEN_FILE",
    "AWS_ROLE_ARN",
    "AWS_ROLE_SESSION_NAME",
    "AWS_ENDPOINT_URL_STS",
    "AWS_ENDPOINT_URL",
    "AWS_STS_REGIONAL_ENDPOINTS",
    "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
    "AWS_CONTAINER_CREDENTIALS_FULL_URI",
    "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE",
    "AWS_CONTAINER_AUTHORIZATION_TOKEN",
    "AWS_EC2_METADATA_DISABLED",
    "AWS_EC2_METADATA_SERVICE_ENDPOINT",
    "AWS_EC2_METADATA_SERVICE_ENDPOINT_MODE",
    "AWS_EC2_METADATA_V1_DISABLED",
    "AWS_METADATA_SERVICE_TIMEOUT",
    "AWS_METADATA_SERVICE_NUM_ATTEMPTS",
};

// The configuration the chain resolves from: the options, the variables and
// the shared files' contents (a file edited in place is a new configuration).
std::string ConfigurationKey(const AwsCredentialChainOptions& options, const std::string& region) {
  std::string key = fmt::format("profile={}\nregion={}\ntimeout={}\n", options.profile, region,
                                options.sts_timeout_seconds);
  for (const char* name : kChainVariables) key += fmt::format("{}={}\n", name, Getenv(name));
  for (const std::string& path : {is::CredentialsFilePath(), is::ConfigFilePath()}) {
    Result<std::optional<std::string>> text = is::ReadFileIfExists(path, "");
    key += fmt::format("{}:{}\n", path, text.ok() ? text->value_or("(absent)") : "(unreadable)");
  }
  return key;
}

struct ProviderCache {
  Mutex mu;
  // By ConfigurationKey.
  std::map<std::string, std::shared_ptr<AwsCredentialProvider>> providers STRATA_GUARDED_BY(mu);
};

// Never destroyed: stores on other threads may still use their providers
// while the process exits.
ProviderCache& Providers() {
  static auto* cache = new ProviderCache();
  return *cache;
}

}  // namespace

std::shared_ptr<AwsCredentialProvider> StaticAwsCredentialProvider(AwsCredentials credentials,
                                                                   std::string description) {
  return std::make_shared<StaticProvider>(std::move(credentials), std::move(description));
}

std::string ResolveAwsRegion(std::string_view profile) {
  std::string region = Getenv("AWS_REGION");
  if (region.empty()) region = Getenv("AWS_DEFAULT_REGION");
  if (!region.empty()) return region;
  // A malformed file is reported by the credential chain, which reads it too.
  Result<is::Profile> p = is::LoadProfile(is::ProfileName(std::string(profile)));
  return p.ok() ? is::Setting(p->config, "region") : std::string();
}

Result<std::shared_ptr<AwsCredentialProvider>> ResolveAwsCredentialChain(
    const AwsCredentialChainOptions& options) {
  ChainContext chain{options,
                     options.region.empty() ? ResolveAwsRegion(options.profile) : options.region,
                     {}};
  const std::string key = ConfigurationKey(options, chain.region);
  ProviderCache& cache = Providers();
  {
    MutexLock lock(&cache.mu);
    auto it = cache.providers.find(key);
    if (it != cache.providers.end()) return it->second;
  }
  for (Source source : kChain) {
    STRATA_ASSIGN_OR_RETURN(MaybeProvider provider, source(chain));
    if (!provider) continue;
    MutexLock lock(&cache.mu);
    // Another thread may have resolved the same configuration meanwhile: keep one.
    return cache.providers.emplace(key, *std::move(provider)).first->second;
  }
  std::string list;
  for (const std::string& place : chain.looked) list += (list.empty() ? "" : "; ") + place;
  return PermissionDeniedError(fmt::format(
      "no AWS credentials found (looked at: {}); for a public bucket add ?anon=true to the "
      "s3:// URL",
      list));
}

}  // namespace strata
