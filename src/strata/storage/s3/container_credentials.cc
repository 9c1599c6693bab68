// Container credentials: the ECS/EKS agent endpoint (credential_sources.h).
#include "strata/storage/s3/credential_sources.h"

#include <fmt/format.h>

namespace strata::internal_storage {

namespace {

struct ContainerConfig {
  std::string url;
  std::string token_file;  // read at every fetch; wins over `token`
  std::string token;
};

Result<AwsCredentials> FetchContainerCredentials(const ContainerConfig& config) {
  HttpCall call;
  call.url = config.url;
  call.timeout_seconds = 2;  // botocore's
  std::string token = config.token;
  if (!config.token_file.empty()) {
    STRATA_ASSIGN_OR_RETURN(std::optional<std::string> text,
                            ReadFileIfExists(config.token_file, "container credentials"));
    if (!text) {
      return FailedPreconditionError(fmt::format(
          "container credentials: AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE {} does not exist",
          config.token_file));
    }
    token = std::string(Trim(*text));
  }
  if (token.find_first_of("\r\n") != std::string::npos) {
    return InvalidArgumentError(
        "container credentials: the authorization token contains a line break");
  }
  if (!token.empty()) call.headers.push_back("Authorization: " + token);
  call.headers.push_back("Accept: application/json");
  int attempts = 0;
  return WithRetries(3, 10, [&](double left) -> Result<AwsCredentials> {
    ++attempts;
    call.timeout_seconds = std::min(2.0, left);
    Result<HttpReply> reply = HttpSend(call);
    if (!reply.ok()) {
      return UnavailableError(fmt::format("container credentials: {} could not be reached: {}",
                                          config.url, reply.status().message()));
    }
    if (reply->status != 200) {
      std::string message = fmt::format("container credentials: {} answered {}{}", config.url,
                                        reply->status,
                                        reply->body.empty() ? "" : ": " + BodyHead(reply->body));
      if (reply->status >= 500 || reply->status == 429) return UnavailableError(message);
      if (reply->status == 401 || reply->status == 403) return PermissionDeniedError(message);
      return UnknownError(message);
    }
    Result<AwsCredentials> parsed = ParseJsonCredentials(reply->body);
    if (!parsed.ok()) {
      return UnknownError(fmt::format("container credentials: {}: {}", config.url,
                                      parsed.status().message()));
    }
    return parsed;
  });
}

}  // namespace

Result<MaybeProvider> FromContainer(ChainContext& chain) {
  const std::string relative = Getenv("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI");
  const std::string full = Getenv("AWS_CONTAINER_CREDENTIALS_FULL_URI");
  if (relative.empty() && full.empty()) {
    chain.looked.push_back("container (AWS_CONTAINER_CREDENTIALS_RELATIVE_URI/_FULL_URI unset)");
    return MaybeProvider();
  }
  ContainerConfig config;
  if (!relative.empty()) {
    config.url = "http://169.254.170.2" + (relative.front() == '/' ? relative : "/" + relative);
  } else {
    config.url = full;
    const bool https = full.rfind("https://", 0) == 0;
    const bool http = full.rfind("http://", 0) == 0;
    if (!https && !(http && IsAllowedContainerHost(full))) {
      return InvalidArgumentError(fmt::format(
          "container credentials: AWS_CONTAINER_CREDENTIALS_FULL_URI {} must be https:// or "
          "http:// to a loopback address, 169.254.170.2, 169.254.170.23 or [fd00:ec2::23]",
          full));
    }
  }
  config.token_file = Getenv("AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE");
  config.token = Getenv("AWS_CONTAINER_AUTHORIZATION_TOKEN");
  STRATA_ASSIGN_OR_RETURN(AwsCredentials first, FetchContainerCredentials(config));
  return MaybeProvider(std::make_shared<RefreshingProvider>(
      fmt::format("container credentials ({})", config.url),
      [config] { return FetchContainerCredentials(config); }, std::move(first)));
}

}  // namespace strata::internal_storage
