// Instance metadata credentials: EC2 IMDSv2, falling back to v1 unless
// disabled (credential_sources.h).
#include "strata/storage/s3/credential_sources.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>

#include "strata/storage/s3/s3_protocol.h"

namespace strata::internal_storage {

namespace {

struct ImdsConfig {
  std::string endpoint;
  double timeout_seconds = 1;
  int attempts = 1;
  bool v1_disabled = false;
};

// What an IMDS walk found: credentials, or why the service is not there.
struct ImdsOutcome {
  std::optional<AwsCredentials> credentials;
  std::string absent;  // "unreachable: ...", "no IAM role attached"
};

constexpr const char* kImdsCredentialsPath = "/latest/meta-data/iam/security-credentials/";

Result<ImdsOutcome> FetchImds(const ImdsConfig& config) {
  auto send = [&](HttpCall call) {
    call.timeout_seconds = config.timeout_seconds;
    return WithRetries(config.attempts, config.timeout_seconds * config.attempts + 1,
                       [&](double) { return HttpSend(call); });
  };
  auto failed = [&](const HttpCall& call, const HttpReply& reply) {
    std::string message = fmt::format("instance metadata: {} {} answered {}{}", call.method,
                                      call.url, reply.status,
                                      reply.body.empty() ? "" : ": " + BodyHead(reply.body));
    return reply.status >= 500 ? UnavailableError(message) : UnknownError(message);
  };

  // IMDSv2: a session token first.
  std::vector<std::string> auth;
  HttpCall token_call;
  token_call.method = "PUT";
  token_call.url = config.endpoint + "/latest/api/token";
  token_call.headers = {"x-aws-ec2-metadata-token-ttl-seconds: 21600"};
  Result<HttpReply> token = send(token_call);
  if (!token.ok()) {
    return ImdsOutcome{std::nullopt, fmt::format("unreachable: {}", token.status().message())};
  }
  if (token->status == 200 && !Trim(token->body).empty()) {
    auth.push_back(fmt::format("x-aws-ec2-metadata-token: {}", Trim(token->body)));
  } else if (token->status == 403 || token->status == 404 || token->status == 405) {
    // IMDSv1 only (or a proxy in the way): the SDKs go on without a token.
    if (config.v1_disabled) {
      return UnknownError(fmt::format(
          "instance metadata: PUT {} answered {} and AWS_EC2_METADATA_V1_DISABLED is true",
          token_call.url, token->status));
    }
  } else {
    return failed(token_call, *token);
  }

  HttpCall role_call;
  role_call.url = config.endpoint + kImdsCredentialsPath;
  role_call.headers = auth;
  Result<HttpReply> role = send(role_call);
  if (!role.ok()) {
    return ImdsOutcome{std::nullopt, fmt::format("unreachable: {}", role.status().message())};
  }
  if (role->status == 404) return ImdsOutcome{std::nullopt, "no IAM role attached"};
  if (role->status != 200) return failed(role_call, *role);
  std::string_view name = Trim(role->body);
  name = Trim(name.substr(0, name.find('\n')));
  if (name.empty()) return ImdsOutcome{std::nullopt, "no IAM role attached"};

  HttpCall credentials_call;
  credentials_call.url = role_call.url + UriEncode(name, /*keep_slash=*/false);
  credentials_call.headers = auth;
  Result<HttpReply> reply = send(credentials_call);
  if (!reply.ok()) {
    return UnavailableError(fmt::format("instance metadata: {}", reply.status().message()));
  }
  if (reply->status != 200) return failed(credentials_call, *reply);
  Result<AwsCredentials> parsed = ParseJsonCredentials(reply->body);
  if (!parsed.ok()) {
    return UnknownError(fmt::format("instance metadata: {}: {}", credentials_call.url,
                                    parsed.status().message()));
  }
  return ImdsOutcome{*std::move(parsed), ""};
}

Result<AwsCredentials> RefreshImds(const ImdsConfig& config) {
  STRATA_ASSIGN_OR_RETURN(ImdsOutcome outcome, FetchImds(config));
  if (!outcome.credentials) {
    return UnavailableError(
        fmt::format("instance metadata: {}: {}", config.endpoint, outcome.absent));
  }
  return *std::move(outcome.credentials);
}

Result<double> PositiveNumberFromEnv(const char* name, double fallback) {
  const std::string text = Getenv(name);
  if (text.empty()) return fallback;
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (end != text.c_str() + text.size() || !(v > 0) || v > 3600) {
    return InvalidArgumentError(fmt::format("{}={} is not a positive number", name, text));
  }
  return v;
}

}  // namespace

Result<MaybeProvider> FromInstanceMetadata(ChainContext& chain) {
  if (EnvIsTrue("AWS_EC2_METADATA_DISABLED")) {
    chain.looked.push_back("instance metadata (AWS_EC2_METADATA_DISABLED=true)");
    return MaybeProvider();
  }
  ImdsConfig config;
  config.endpoint = Getenv("AWS_EC2_METADATA_SERVICE_ENDPOINT");
  if (config.endpoint.empty()) {
    const std::string mode = Getenv("AWS_EC2_METADATA_SERVICE_ENDPOINT_MODE");
    if (Lower(mode) == "ipv6") {
      config.endpoint = "http://[fd00:ec2::254]";
    } else if (mode.empty() || Lower(mode) == "ipv4") {
      config.endpoint = "http://169.254.169.254";
    } else {
      return InvalidArgumentError(fmt::format(
          "instance metadata: AWS_EC2_METADATA_SERVICE_ENDPOINT_MODE={} is not IPv4 or IPv6",
          mode));
    }
  }
  while (!config.endpoint.empty() && config.endpoint.back() == '/') config.endpoint.pop_back();
  STRATA_ASSIGN_OR_RETURN(config.timeout_seconds,
                          PositiveNumberFromEnv("AWS_METADATA_SERVICE_TIMEOUT", 1));
  STRATA_ASSIGN_OR_RETURN(double attempts,
                          PositiveNumberFromEnv("AWS_METADATA_SERVICE_NUM_ATTEMPTS", 1));
  config.attempts = std::max(1, static_cast<int>(attempts));
  config.v1_disabled = EnvIsTrue("AWS_EC2_METADATA_V1_DISABLED");
  STRATA_ASSIGN_OR_RETURN(ImdsOutcome outcome, FetchImds(config));
  if (!outcome.credentials) {
    chain.looked.push_back(
        fmt::format("instance metadata {} ({})", config.endpoint, outcome.absent));
    return MaybeProvider();
  }
  return MaybeProvider(std::make_shared<RefreshingProvider>(
      fmt::format("instance metadata ({})", config.endpoint),
      [config] { return RefreshImds(config); }, *std::move(outcome.credentials)));
}

}  // namespace strata::internal_storage
