// Web identity credentials: STS AssumeRoleWithWebIdentity with a token file
// (credential_sources.h).
#include "strata/storage/s3/credential_sources.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cmath>

#include "strata/storage/s3/s3_protocol.h"

namespace strata::internal_storage {

namespace {

std::string StsEndpoint(const std::string& region) {
  std::string endpoint = Getenv("AWS_ENDPOINT_URL_STS");
  if (endpoint.empty()) endpoint = Getenv("AWS_ENDPOINT_URL");
  if (endpoint.empty()) {
    const bool legacy = Lower(Getenv("AWS_STS_REGIONAL_ENDPOINTS")) == "legacy";
    endpoint = region.empty() || legacy ? "https://sts.amazonaws.com"
                                        : fmt::format("https://sts.{}.amazonaws.com", region);
  }
  while (!endpoint.empty() && endpoint.back() == '/') endpoint.pop_back();
  return endpoint;
}

Status StsError(const WebIdentityConfig& config, const HttpReply& reply, int attempts) {
  S3ErrorBody error = ParseErrorBody(reply.body);
  std::string message =
      fmt::format("web identity: STS at {} answered {}", config.sts_endpoint, reply.status);
  if (!error.code.empty()) message += " " + error.code;
  if (!error.message.empty()) {
    message += " (" + error.message + ")";
  } else if (error.code.empty() && !reply.body.empty()) {
    message += ": " + BodyHead(reply.body);
  }
  if (attempts > 1) message += fmt::format(" after {} attempts", attempts);
  if (reply.status >= 500 || reply.status == 429 || error.code == "IDPCommunicationError" ||
      error.code == "Throttling") {
    return UnavailableError(std::move(message));
  }
  if (reply.status == 401 || reply.status == 403 || error.code == "AccessDenied" ||
      error.code == "InvalidIdentityToken" || error.code == "ExpiredTokenException" ||
      error.code == "IDPRejectedClaim") {
    return PermissionDeniedError(std::move(message));
  }
  if (reply.status == 400) return InvalidArgumentError(std::move(message));
  return UnknownError(std::move(message));
}

Result<AwsCredentials> AssumeRoleWithWebIdentity(const WebIdentityConfig& config) {
  STRATA_ASSIGN_OR_RETURN(std::optional<std::string> token,
                          ReadFileIfExists(config.token_file, "web identity"));
  if (!token) {
    return FailedPreconditionError(
        fmt::format("web identity: the token file {} does not exist", config.token_file));
  }
  const std::string_view trimmed = Trim(*token);
  if (trimmed.empty()) {
    return FailedPreconditionError(
        fmt::format("web identity: the token file {} is empty", config.token_file));
  }
  HttpCall call;
  call.method = "POST";
  call.url = config.sts_endpoint + "/";
  // No "Expect: 100-continue" (libcurl adds it to bodies over 1 KiB, and a
  // token is about that): a server that does not answer it would cost a
  // second per call.
  call.headers = {"Content-Type: application/x-www-form-urlencoded; charset=utf-8",
                  "Accept: application/xml", "Expect:"};
  call.body = CanonicalQuery({{"Action", "AssumeRoleWithWebIdentity"},
                                  {"Version", "2011-06-15"},
                                  {"RoleArn", config.role_arn},
                                  {"RoleSessionName", config.session_name},
                                  {"WebIdentityToken", std::string(trimmed)}});
  int attempts = 0;
  return WithRetries(3, config.timeout_seconds, [&](double left) -> Result<AwsCredentials> {
    ++attempts;
    call.timeout_seconds = left;
    Result<HttpReply> reply = HttpSend(call);
    if (!reply.ok()) {
      return UnavailableError(fmt::format("web identity: STS at {} could not be reached{}: {}",
                                          config.sts_endpoint,
                                          attempts > 1 ? fmt::format(" ({} attempts)", attempts)
                                                       : std::string(),
                                          reply.status().message()));
    }
    if (reply->status != 200) return StsError(config, *reply, attempts);
    Result<AwsCredentials> parsed = ParseStsCredentials(reply->body);
    if (!parsed.ok()) {
      return UnknownError(fmt::format("web identity: STS at {}: {}", config.sts_endpoint,
                                      parsed.status().message()));
    }
    return parsed;
  });
}

std::string DefaultSessionName() {
  return fmt::format("strata-{}", std::chrono::duration_cast<std::chrono::seconds>(
                                      Clock::now().time_since_epoch())
                                      .count());
}

Result<std::shared_ptr<AwsCredentialProvider>> WebIdentityProvider(WebIdentityConfig config) {
  STRATA_ASSIGN_OR_RETURN(AwsCredentials first, AssumeRoleWithWebIdentity(config));
  std::string description = fmt::format("web identity (role {})", config.role_arn);
  return std::shared_ptr<AwsCredentialProvider>(std::make_shared<RefreshingProvider>(
      std::move(description), [config] { return AssumeRoleWithWebIdentity(config); },
      std::move(first)));
}

}  // namespace

Result<MaybeProvider> WebIdentitySource(WebIdentityConfig config, const ChainContext& chain) {
  if (config.session_name.empty()) config.session_name = DefaultSessionName();
  config.token_file = ExpandUser(config.token_file);
  config.sts_endpoint = StsEndpoint(chain.region);
  config.timeout_seconds = chain.options.sts_timeout_seconds;
  STRATA_ASSIGN_OR_RETURN(std::shared_ptr<AwsCredentialProvider> p, WebIdentityProvider(config));
  return MaybeProvider(std::move(p));
}

Result<MaybeProvider> FromWebIdentity(ChainContext& chain) {
  WebIdentityConfig config;
  config.token_file = Getenv("AWS_WEB_IDENTITY_TOKEN_FILE");
  config.role_arn = Getenv("AWS_ROLE_ARN");
  config.session_name = Getenv("AWS_ROLE_SESSION_NAME");
  if (config.token_file.empty() && config.role_arn.empty()) {
    chain.looked.push_back("web identity (AWS_WEB_IDENTITY_TOKEN_FILE unset)");
    return MaybeProvider();
  }
  if (config.token_file.empty() || config.role_arn.empty()) {
    const bool no_file = config.token_file.empty();
    return InvalidArgumentError(fmt::format(
        "web identity: {} is set but {} is not",
        no_file ? "AWS_ROLE_ARN" : "AWS_WEB_IDENTITY_TOKEN_FILE",
        no_file ? "AWS_WEB_IDENTITY_TOKEN_FILE" : "AWS_ROLE_ARN"));
  }
  return WebIdentitySource(std::move(config), chain);
}

}  // namespace strata::internal_storage
