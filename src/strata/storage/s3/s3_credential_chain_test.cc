// The AWS credential chain source by source (s3_credentials.h): environment,
// shared files and profiles, web identity at a fake STS, container and
// instance metadata endpoints, all on 127.0.0.1.
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <string>
#include <vector>

#include "strata/storage/open_store.h"
#include "strata/storage/s3/s3_credentials.h"
#include "strata/storage/s3/s3_credentials_internal.h"
#include "strata/storage/s3/s3_credentials_test_util.h"
#include "strata/storage/s3/s3_store.h"
#include "strata/storage/s3/s3_test_util.h"

namespace strata::testing_s3 {
namespace {

// ---------------------------------------------------------------------------
// The chain, source by source.

TEST(AwsChainTest, NothingConfiguredListsEveryPlaceLookedAt) {
  HermeticAwsEnvironment env;
  Result<std::shared_ptr<AwsCredentialProvider>> r = Resolve();
  EXPECT_EQ(r.status().code(), StatusCode::kPermissionDenied);
  const std::string m = Message(r.status());
  EXPECT_EQ(m, fmt::format("no AWS credentials found (looked at: environment (AWS_ACCESS_KEY_ID "
                           "unset); shared files (profile 'default' in {} and {}: absent); web "
                           "identity (AWS_WEB_IDENTITY_TOKEN_FILE unset); container "
                           "(AWS_CONTAINER_CREDENTIALS_RELATIVE_URI/_FULL_URI unset); instance "
                           "metadata (AWS_EC2_METADATA_DISABLED=true)); for a public bucket add "
                           "?anon=true to the s3:// URL",
                           env.credentials_file(), env.config_file()));
}

TEST(AwsChainTest, EnvironmentComesFirst) {
  HermeticAwsEnvironment env;
  WriteFile(env.credentials_file(), "[default]\naws_access_key_id=FILE\naws_secret_access_key=F\n");
  ScopedEnv key("AWS_ACCESS_KEY_ID", "AKENV");
  ScopedEnv secret("AWS_SECRET_ACCESS_KEY", "SKENV");
  ScopedEnv token("AWS_SESSION_TOKEN", "TOKENV");
  Result<std::shared_ptr<AwsCredentialProvider>> r = Resolve();
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ((*r)->description(), "environment");
  AwsCredentials c = *(*r)->Get();
  EXPECT_EQ(c.access_key_id, "AKENV");
  EXPECT_EQ(c.secret_access_key, "SKENV");
  EXPECT_EQ(c.session_token, "TOKENV");
  EXPECT_FALSE(c.expiration.has_value());

  // A profile asked for by name (the URL's profile=) wins over the
  // environment, as boto3.Session(profile_name=...) does.
  r = Resolve("default");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ((*r)->Get()->access_key_id, "FILE");
}

TEST(AwsChainTest, HalfTheEnvironmentKeysIsAnError) {
  HermeticAwsEnvironment env;
  ScopedEnv key("AWS_ACCESS_KEY_ID", "AKENV");
  Result<std::shared_ptr<AwsCredentialProvider>> r = Resolve();
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(Message(r.status()),
            "environment: AWS_ACCESS_KEY_ID is set but AWS_SECRET_ACCESS_KEY is not");
}

TEST(AwsChainTest, SharedFilesAndProfiles) {
  HermeticAwsEnvironment env;
  WriteFile(env.credentials_file(),
            "[default]\naws_access_key_id = AKDEF\naws_secret_access_key = SKDEF\n"
            "[dev]\naws_access_key_id = AKDEV\naws_secret_access_key = SKDEV\n"
            "aws_session_token = TDEV\n");
  WriteFile(env.config_file(),
            "[default]\nregion = eu-north-1\n"
            "[profile dev]\naws_access_key_id = AKCONFIGDEV\naws_secret_access_key = X\n"
            "[profile ops]\nregion = ap-south-1\naws_access_key_id = AKOPS\n"
            "aws_secret_access_key = SKOPS\n");
  Result<std::shared_ptr<AwsCredentialProvider>> r = Resolve();
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ((*r)->Get()->access_key_id, "AKDEF");
  EXPECT_EQ((*r)->description(),
            fmt::format("shared files (profile 'default' in {})", env.credentials_file()));
  EXPECT_EQ(ResolveAwsRegion(""), "eu-north-1");

  {
    ScopedEnv profile("AWS_PROFILE", "dev");
    r = Resolve();
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    AwsCredentials c = *(*r)->Get();
    EXPECT_EQ(c.access_key_id, "AKDEV");  // the credentials file wins over the config file
    EXPECT_EQ(c.session_token, "TDEV");
  }
  // [profile ops] in the config file only; its region.
  r = Resolve("ops");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ((*r)->Get()->access_key_id, "AKOPS");
  EXPECT_EQ((*r)->description(),
            fmt::format("shared files (profile 'ops' in {})", env.config_file()));
  EXPECT_EQ(ResolveAwsRegion("ops"), "ap-south-1");
  ScopedEnv region("AWS_REGION", "us-west-2");
  EXPECT_EQ(ResolveAwsRegion("ops"), "us-west-2");
}

TEST(AwsChainTest, SharedFileErrors) {
  HermeticAwsEnvironment env;
  {
    ScopedEnv profile("AWS_PROFILE", "nope");
    Result<std::shared_ptr<AwsCredentialProvider>> r = Resolve();
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(Message(r.status()),
              fmt::format("shared files: profile 'nope' is in neither {} nor {}",
                          env.credentials_file(), env.config_file()));
  }
  WriteFile(env.credentials_file(), "[default]\naws_access_key_id = AK\n");
  Result<std::shared_ptr<AwsCredentialProvider>> r = Resolve();
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(Message(r.status()),
              HasSubstr("has aws_access_key_id but not aws_secret_access_key"));

  WriteFile(env.credentials_file(), "[default]\nthis is not ini\n");
  r = Resolve();
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(Message(r.status()), HasSubstr(env.credentials_file() + " line 2: no '='"));

  WriteFile(env.credentials_file(), "");
  WriteFile(env.config_file(), "[profile sso]\nsso_session = corp\n");
  r = Resolve("sso");
  EXPECT_EQ(r.status().code(), StatusCode::kUnimplemented);
  EXPECT_THAT(Message(r.status()), HasSubstr("profile 'sso' in " + env.config_file() +
                                             " uses sso_session, which strata does not support"));
}

TEST(AwsChainTest, WebIdentityAssumesTheRoleAtSts) {
  HermeticAwsEnvironment env;
  FakeHttpServer sts(Sts("ASIAWEB", std::chrono::hours(1)));
  WriteFile(env.dir() + "/token", "eyJ.token.sig\n");
  ScopedEnv token_file("AWS_WEB_IDENTITY_TOKEN_FILE", (env.dir() + "/token").c_str());
  ScopedEnv role("AWS_ROLE_ARN", "arn:aws:iam::123:role/dask");
  ScopedEnv session("AWS_ROLE_SESSION_NAME", "worker-1");
  ScopedEnv endpoint("AWS_ENDPOINT_URL_STS", sts.endpoint().c_str());
  Result<std::shared_ptr<AwsCredentialProvider>> r = Resolve();
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ((*r)->description(), "web identity (role arn:aws:iam::123:role/dask)");
  AwsCredentials c = *(*r)->Get();
  EXPECT_EQ(c.access_key_id, "ASIAWEB");
  EXPECT_EQ(c.session_token, "session-of-ASIAWEB");
  ASSERT_TRUE(c.expiration.has_value());
  EXPECT_GT(*c.expiration, Clock::now() + std::chrono::minutes(50));

  std::vector<Request> requests = sts.requests();
  ASSERT_EQ(requests.size(), 1u);
  EXPECT_EQ(requests[0].target, "/");
  EXPECT_EQ(requests[0].body,
            "Action=AssumeRoleWithWebIdentity&RoleArn=arn%3Aaws%3Aiam%3A%3A123%3Arole%2Fdask&"
            "RoleSessionName=worker-1&Version=2011-06-15&WebIdentityToken=eyJ.token.sig");
  EXPECT_THAT(requests[0].headers["content-type"], HasSubstr("application/x-www-form-urlencoded"));
  EXPECT_EQ(requests[0].headers.count("authorization"), 0u);  // the call is not signed

  // Credentials valid for an hour are not fetched again; a second store with
  // the same configuration shares the provider.
  (*r)->Get().status().IgnoreError();
  Result<std::shared_ptr<AwsCredentialProvider>> again = Resolve();
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->get(), r->get());
  EXPECT_EQ(sts.requests().size(), 1u);
}

TEST(AwsChainTest, WebIdentityRefreshesBeforeExpirationAndRereadsTheToken) {
  HermeticAwsEnvironment env;
  // Credentials that expire within the refresh window: fetched again at every Get.
  FakeHttpServer sts(Sts("ASIASHORT", std::chrono::minutes(3)));
  WriteFile(env.dir() + "/token", "first-token");
  ScopedEnv token_file("AWS_WEB_IDENTITY_TOKEN_FILE", (env.dir() + "/token").c_str());
  ScopedEnv role("AWS_ROLE_ARN", "arn:aws:iam::123:role/short");
  ScopedEnv endpoint("AWS_ENDPOINT_URL_STS", sts.endpoint().c_str());
  Result<std::shared_ptr<AwsCredentialProvider>> r = Resolve();
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  WriteFile(env.dir() + "/token", "rotated-token");
  ASSERT_TRUE((*r)->Get().ok());
  std::vector<Request> requests = sts.requests();
  ASSERT_EQ(requests.size(), 2u);
  EXPECT_THAT(requests[0].body, HasSubstr("WebIdentityToken=first-token"));
  EXPECT_THAT(requests[1].body, HasSubstr("WebIdentityToken=rotated-token"));
  EXPECT_THAT(requests[0].body, HasSubstr("RoleSessionName=strata-"));
}

TEST(AwsChainTest, WebIdentityFromTheProfile) {
  HermeticAwsEnvironment env;
  FakeHttpServer sts(Sts("ASIAPROFILE", std::chrono::hours(1)));
  WriteFile(env.dir() + "/token", "tok");
  WriteFile(env.config_file(), fmt::format("[profile k8s]\nweb_identity_token_file = {}/token\n"
                                           "role_arn = arn:aws:iam::9:role/p\n"
                                           "role_session_name = from-profile\n",
                                           env.dir()));
  ScopedEnv endpoint("AWS_ENDPOINT_URL_STS", sts.endpoint().c_str());
  ScopedEnv profile("AWS_PROFILE", "k8s");
  Result<std::shared_ptr<AwsCredentialProvider>> r = Resolve();
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ((*r)->Get()->access_key_id, "ASIAPROFILE");
  ASSERT_EQ(sts.requests().size(), 1u);
  EXPECT_THAT(sts.requests()[0].body, HasSubstr("RoleSessionName=from-profile"));
}

TEST(AwsChainTest, WebIdentityErrorsNameStsAndTheCause) {
  HermeticAwsEnvironment env;
  WriteFile(env.dir() + "/token", "tok");
  ScopedEnv token_file("AWS_WEB_IDENTITY_TOKEN_FILE", (env.dir() + "/token").c_str());
  ScopedEnv role("AWS_ROLE_ARN", "arn:aws:iam::123:role/denied");
  {
    FakeHttpServer sts([](const Request&) {
      return Reply{403,
                   "<ErrorResponse><Error><Type>Sender</Type><Code>AccessDenied</Code>"
                   "<Message>Not authorized to perform sts:AssumeRoleWithWebIdentity</Message>"
                   "</Error></ErrorResponse>"};
    });
    ScopedEnv endpoint("AWS_ENDPOINT_URL_STS", sts.endpoint().c_str());
    Result<std::shared_ptr<AwsCredentialProvider>> r = Resolve();
    EXPECT_EQ(r.status().code(), StatusCode::kPermissionDenied);
    EXPECT_EQ(Message(r.status()),
              "web identity: STS at " + sts.endpoint() +
                  " answered 403 AccessDenied (Not authorized to perform "
                  "sts:AssumeRoleWithWebIdentity)");
    EXPECT_EQ(sts.requests().size(), 1u);  // a refusal is not retried
  }
  {
    // STS failing: retried, then Unavailable.
    FakeHttpServer sts([](const Request&) { return Reply{503, "busy"}; });
    ScopedEnv endpoint("AWS_ENDPOINT_URL_STS", sts.endpoint().c_str());
    Result<std::shared_ptr<AwsCredentialProvider>> r = Resolve();
    EXPECT_EQ(r.status().code(), StatusCode::kUnavailable);
    EXPECT_EQ(Message(r.status()),
              "web identity: STS at " + sts.endpoint() + " answered 503: busy after 3 attempts");
    EXPECT_EQ(sts.requests().size(), 3u);
  }
  {
    // STS not there at all.
    const std::string dead = fmt::format("http://127.0.0.1:{}", FakeHttpServer::ClosedPort());
    ScopedEnv endpoint("AWS_ENDPOINT_URL_STS", dead.c_str());
    Result<std::shared_ptr<AwsCredentialProvider>> r = Resolve();
    EXPECT_EQ(r.status().code(), StatusCode::kUnavailable);
    EXPECT_THAT(Message(r.status()),
                HasSubstr("web identity: STS at " + dead + " could not be reached (3 attempts)"));
  }
  {
    // STS that accepts and never answers: the budget, not a hang.
    FakeHttpServer sts([](const Request&) { return Reply{200, "", /*hang=*/true}; });
    ScopedEnv endpoint("AWS_ENDPOINT_URL_STS", sts.endpoint().c_str());
    AwsCredentialChainOptions options;
    options.sts_timeout_seconds = 0.5;
    const auto start = std::chrono::steady_clock::now();
    Result<std::shared_ptr<AwsCredentialProvider>> r = ResolveAwsCredentialChain(options);
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    EXPECT_EQ(r.status().code(), StatusCode::kUnavailable);
    EXPECT_THAT(Message(r.status()),
                HasSubstr("web identity: STS at " + sts.endpoint() + " could not be reached"));
    EXPECT_THAT(Message(r.status()), HasSubstr("timed out"));
    EXPECT_LT(seconds, 20);
  }
  {
    ScopedEnv endpoint("AWS_ENDPOINT_URL_STS", "http://127.0.0.1:1");
    ScopedEnv missing("AWS_WEB_IDENTITY_TOKEN_FILE", (env.dir() + "/absent").c_str());
    Result<std::shared_ptr<AwsCredentialProvider>> r = Resolve();
    EXPECT_EQ(r.status().code(), StatusCode::kFailedPrecondition);
    EXPECT_EQ(Message(r.status()),
              "web identity: the token file " + env.dir() + "/absent does not exist");
  }
  ScopedEnv no_role("AWS_ROLE_ARN", nullptr);
  Result<std::shared_ptr<AwsCredentialProvider>> r = Resolve();
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(Message(r.status()),
            "web identity: AWS_WEB_IDENTITY_TOKEN_FILE is set but AWS_ROLE_ARN is not");
}

TEST(AwsChainTest, ContainerCredentialsWithAuthorization) {
  HermeticAwsEnvironment env;
  FakeHttpServer container(Container("ASIAECS", std::chrono::hours(6)));
  const std::string url = container.endpoint() + "/creds";
  ScopedEnv full("AWS_CONTAINER_CREDENTIALS_FULL_URI", url.c_str());
  ScopedEnv token("AWS_CONTAINER_AUTHORIZATION_TOKEN", "Bearer from-env");
  Result<std::shared_ptr<AwsCredentialProvider>> r = Resolve();
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ((*r)->description(), "container credentials (" + url + ")");
  EXPECT_EQ((*r)->Get()->session_token, "T-ASIAECS");
  ASSERT_EQ(container.requests().size(), 1u);
  EXPECT_EQ(container.requests()[0].headers["authorization"], "Bearer from-env");

  // The token file (EKS Pod Identity) wins over the variable.
  WriteFile(env.dir() + "/eks-token", "from-file\n");
  const std::string eks_token = env.dir() + "/eks-token";
  ScopedEnv token_file("AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE", eks_token.c_str());
  ASSERT_TRUE(Resolve().ok());
  ASSERT_EQ(container.requests().size(), 2u);
  EXPECT_EQ(container.requests()[1].headers["authorization"], "from-file");
}

TEST(AwsChainTest, ContainerErrors) {
  HermeticAwsEnvironment env;
  {
    ScopedEnv full("AWS_CONTAINER_CREDENTIALS_FULL_URI", "http://10.1.2.3/creds");
    Result<std::shared_ptr<AwsCredentialProvider>> r = Resolve();
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    EXPECT_THAT(Message(r.status()),
                HasSubstr("AWS_CONTAINER_CREDENTIALS_FULL_URI http://10.1.2.3/creds must be "
                          "https:// or http:// to a loopback address"));
  }
  FakeHttpServer container([](const Request&) { return Reply{403, "forbidden token"}; });
  const std::string url = container.endpoint() + "/creds";
  ScopedEnv full("AWS_CONTAINER_CREDENTIALS_FULL_URI", url.c_str());
  Result<std::shared_ptr<AwsCredentialProvider>> r = Resolve();
  EXPECT_EQ(r.status().code(), StatusCode::kPermissionDenied);
  EXPECT_EQ(Message(r.status()),
            "container credentials: " + url + " answered 403: forbidden token");
}

TEST(AwsChainTest, InstanceMetadataV2) {
  HermeticAwsEnvironment env;
  FakeImds imds(/*v2=*/true, std::chrono::hours(6));
  ScopedEnv enabled("AWS_EC2_METADATA_DISABLED", "false");
  ScopedEnv endpoint("AWS_EC2_METADATA_SERVICE_ENDPOINT", imds.server.endpoint().c_str());
  Result<std::shared_ptr<AwsCredentialProvider>> r = Resolve();
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ((*r)->description(), "instance metadata (" + imds.server.endpoint() + ")");
  EXPECT_EQ((*r)->Get()->access_key_id, "ASIAEC2");
  std::vector<Request> requests = imds.server.requests();
  ASSERT_EQ(requests.size(), 3u);
  EXPECT_EQ(requests[0].method, "PUT");
  EXPECT_EQ(requests[1].target, "/latest/meta-data/iam/security-credentials/");
  EXPECT_EQ(requests[2].target, "/latest/meta-data/iam/security-credentials/dask-node");
}

TEST(AwsChainTest, InstanceMetadataV1Fallback) {
  HermeticAwsEnvironment env;
  FakeImds imds(/*v2=*/false, std::chrono::hours(6), "ASIAV1");
  ScopedEnv enabled("AWS_EC2_METADATA_DISABLED", nullptr);
  ScopedEnv endpoint("AWS_EC2_METADATA_SERVICE_ENDPOINT", imds.server.endpoint().c_str());
  Result<std::shared_ptr<AwsCredentialProvider>> r = Resolve();
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ((*r)->Get()->access_key_id, "ASIAV1");
  EXPECT_EQ(imds.server.requests().back().headers.count("x-aws-ec2-metadata-token"), 0u);

  ScopedEnv v1_off("AWS_EC2_METADATA_V1_DISABLED", "true");
  ScopedEnv timeout("AWS_METADATA_SERVICE_TIMEOUT", "2");  // another configuration
  r = Resolve();
  EXPECT_EQ(r.status().code(), StatusCode::kUnknown);
  EXPECT_THAT(Message(r.status()),
              HasSubstr("answered 405 and AWS_EC2_METADATA_V1_DISABLED is true"));
}

TEST(AwsChainTest, InstanceWithoutRoleOrServiceIsNoCredentials) {
  HermeticAwsEnvironment env;
  ScopedEnv enabled("AWS_EC2_METADATA_DISABLED", nullptr);
  {
    FakeHttpServer imds([](const Request& r) {
      return r.method == "PUT" ? Reply{200, "t"} : Reply{404, ""};
    });
    ScopedEnv endpoint("AWS_EC2_METADATA_SERVICE_ENDPOINT", imds.endpoint().c_str());
    Result<std::shared_ptr<AwsCredentialProvider>> r = Resolve();
    EXPECT_EQ(r.status().code(), StatusCode::kPermissionDenied);
    EXPECT_THAT(Message(r.status()),
                HasSubstr("; instance metadata " + imds.endpoint() + " (no IAM role attached))"));
  }
  {
    const std::string dead = fmt::format("http://127.0.0.1:{}", FakeHttpServer::ClosedPort());
    ScopedEnv endpoint("AWS_EC2_METADATA_SERVICE_ENDPOINT", dead.c_str());
    Result<std::shared_ptr<AwsCredentialProvider>> r = Resolve();
    EXPECT_EQ(r.status().code(), StatusCode::kPermissionDenied);
    EXPECT_THAT(Message(r.status()),
                HasSubstr("; instance metadata " + dead + " (unreachable: " + dead +
                          "/latest/api/token: "));
  }
  {
    // A service that accepts and never answers: the timeout, not a hang.
    FakeHttpServer imds([](const Request&) { return Reply{200, "", /*hang=*/true}; });
    ScopedEnv endpoint("AWS_EC2_METADATA_SERVICE_ENDPOINT", imds.endpoint().c_str());
    ScopedEnv timeout("AWS_METADATA_SERVICE_TIMEOUT", "0.3");
    ScopedEnv attempts("AWS_METADATA_SERVICE_NUM_ATTEMPTS", "2");
    const auto start = std::chrono::steady_clock::now();
    Result<std::shared_ptr<AwsCredentialProvider>> r = Resolve();
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    EXPECT_EQ(r.status().code(), StatusCode::kPermissionDenied);
    EXPECT_THAT(Message(r.status()), HasSubstr("instance metadata " + imds.endpoint() +
                                               " (unreachable: "));
    EXPECT_THAT(Message(r.status()), HasSubstr("timed out"));
    EXPECT_LT(seconds, 20);  // two attempts of 0.3 s (generous for ASan on a busy host)
    EXPECT_EQ(imds.requests().size(), 2u);
  }
  ScopedEnv bad("AWS_METADATA_SERVICE_TIMEOUT", "soon");
  Result<std::shared_ptr<AwsCredentialProvider>> r = Resolve();
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(Message(r.status()), "AWS_METADATA_SERVICE_TIMEOUT=soon is not a positive number");
}

}  // namespace
}  // namespace strata::testing_s3
