// The AWS credential chain (s3_credentials.h): the file and document parsers
// without a server, then each source of the chain against small fake STS,
// container and instance metadata servers on 127.0.0.1, refreshing, and
// S3Store using what the chain found (against s3rver and a fake S3).
#include "strata/storage/s3_credentials.h"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <string>
#include <vector>

#include "strata/storage/s3_credentials_internal.h"
#include "strata/storage/s3_store.h"
#include "strata/storage/s3_test_util.h"

namespace strata {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
namespace is = internal_storage;
using Clock = std::chrono::system_clock;
using Reply = FakeHttpServer::Reply;
using Request = FakeHttpServer::Request;

void WriteFile(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  STRATA_CHECK(out.good()) << path;
}

std::string Message(const Status& s) { return std::string(s.message()); }

std::string Header(const Request& r, const std::string& name) {
  auto it = r.headers.find(name);
  return it == r.headers.end() ? std::string() : it->second;
}

// ---------------------------------------------------------------------------
// Parsers.

TEST(AwsIniTest, SectionsKeysCommentsAndNestedSettings) {
  Result<is::IniSections> ini = is::ParseAwsIni(
      "# a comment\n"
      "[default]\n"
      "aws_access_key_id = AKDEFAULT\n"
      "AWS_Secret_Access_Key=SKDEFAULT ; inline comment\n"
      "\n"
      "[profile   dev]\n"
      "region = eu-west-1\n"
      "s3 =\n"
      "    addressing_style = path\n"
      "  ; indented comment\n"
      "role_arn = arn:aws:iam::1:role/r\n"
      "[empty]\n",
      "cfg");
  ASSERT_TRUE(ini.ok()) << ini.status().ToString();
  EXPECT_EQ(ini->at("default").at("aws_access_key_id"), "AKDEFAULT");
  EXPECT_EQ(ini->at("default").at("aws_secret_access_key"), "SKDEFAULT");
  EXPECT_EQ(ini->at("profile dev").at("region"), "eu-west-1");
  EXPECT_EQ(ini->at("profile dev").at("s3"), "");
  EXPECT_EQ(ini->at("profile dev").count("addressing_style"), 0u);
  EXPECT_EQ(ini->at("profile dev").at("role_arn"), "arn:aws:iam::1:role/r");
  EXPECT_TRUE(ini->at("empty").empty());
}

TEST(AwsIniTest, MalformedLinesNameFileAndLine) {
  Result<is::IniSections> r = is::ParseAwsIni("[default]\nkey value\n", "/x/credentials");
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(Message(r.status()), HasSubstr("/x/credentials line 2: no '='"));
  r = is::ParseAwsIni("key = value\n", "f");
  EXPECT_THAT(Message(r.status()), HasSubstr("f line 1: a setting before any [section]"));
  r = is::ParseAwsIni("\n[default\n", "f");
  EXPECT_THAT(Message(r.status()), HasSubstr("f line 2: unterminated section header"));
}

TEST(AwsTimeTest, Iso8601) {
  const Clock::time_point t = Clock::from_time_t(1796420100);  // 2026-12-04T21:35:00Z
  EXPECT_EQ(is::FormatIso8601(t), "2026-12-04T21:35:00Z");
  EXPECT_EQ(*is::ParseIso8601("2026-12-04T21:35:00Z"), t);
  EXPECT_EQ(*is::ParseIso8601("2026-12-04T21:35:00.123Z"), t);
  EXPECT_EQ(*is::ParseIso8601("2026-12-04T21:35:00+00:00"), t);
  for (const char* bad :
       {"", "2026-12-04", "2026-12-04T21:35:00", "2026-13-04T21:35:00Z",
        "2026-12-04T21:35:00+01:00", "20261204T213500Z", "2026-12-04T21:35:0xZ"}) {
    EXPECT_EQ(is::ParseIso8601(bad).status().code(), StatusCode::kInvalidArgument) << bad;
  }
}

TEST(AwsDocumentTest, StsCredentials) {
  Result<AwsCredentials> c = is::ParseStsCredentials(
      "<AssumeRoleWithWebIdentityResponse xmlns=\"https://sts.amazonaws.com/doc/2011-06-15/\">"
      "<AssumeRoleWithWebIdentityResult><Credentials><AccessKeyId>ASIA1</AccessKeyId>"
      "<SecretAccessKey>s/e+c</SecretAccessKey><SessionToken>tok&amp;en</SessionToken>"
      "<Expiration>2026-12-04T21:35:00Z</Expiration></Credentials>"
      "</AssumeRoleWithWebIdentityResult></AssumeRoleWithWebIdentityResponse>");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->access_key_id, "ASIA1");
  EXPECT_EQ(c->secret_access_key, "s/e+c");
  EXPECT_EQ(c->session_token, "tok&en");
  EXPECT_EQ(c->expiration, Clock::from_time_t(1796420100));
  EXPECT_THAT(Message(is::ParseStsCredentials("<Other/>").status()),
              HasSubstr("the response has no <Credentials>"));
  EXPECT_THAT(Message(is::ParseStsCredentials("<Credentials><AccessKeyId>A</AccessKeyId>"
                                              "</Credentials>")
                          .status()),
              HasSubstr("has no <SecretAccessKey>"));
}

TEST(AwsDocumentTest, JsonCredentials) {
  Result<AwsCredentials> c = is::ParseJsonCredentials(
      R"({"Code": "Success", "Type": "AWS-HMAC", "AccessKeyId": "ASIA2",
          "SecretAccessKey": "S2", "Token": "T2", "Expiration": "2026-12-04T21:35:00Z"})");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->access_key_id, "ASIA2");
  EXPECT_EQ(c->session_token, "T2");
  EXPECT_EQ(c->expiration, Clock::from_time_t(1796420100));
  EXPECT_THAT(Message(is::ParseJsonCredentials(R"({"Code": "AssumeRoleUnauthorizedAccess",
      "Message": "no"})")
                          .status()),
              HasSubstr("Code AssumeRoleUnauthorizedAccess (no)"));
  EXPECT_THAT(Message(is::ParseJsonCredentials(R"({"AccessKeyId": "A"})").status()),
              HasSubstr("no \"SecretAccessKey\""));
  EXPECT_THAT(Message(is::ParseJsonCredentials("<html>").status()),
              HasSubstr("not a JSON object: '<html>'"));
}

TEST(AwsUrlTest, LoopbackAndContainerHosts) {
  EXPECT_TRUE(is::IsLoopbackUrl("http://127.0.0.1:9/x"));
  EXPECT_TRUE(is::IsLoopbackUrl("http://localhost/x"));
  EXPECT_TRUE(is::IsLoopbackUrl("http://[::1]:80/"));
  EXPECT_FALSE(is::IsLoopbackUrl("http://169.254.169.254"));
  EXPECT_FALSE(is::IsLoopbackUrl("http://127.0.0.1.example.com/"));
  EXPECT_TRUE(is::IsAllowedContainerHost("http://169.254.170.2/v2/credentials/x"));
  EXPECT_TRUE(is::IsAllowedContainerHost("http://169.254.170.23/v1/credentials"));
  EXPECT_TRUE(is::IsAllowedContainerHost("http://[fd00:ec2::23]/v1/credentials"));
  EXPECT_TRUE(is::IsAllowedContainerHost("http://127.0.0.1:8080/creds"));
  EXPECT_FALSE(is::IsAllowedContainerHost("http://10.0.0.1/creds"));
}

// ---------------------------------------------------------------------------
// The chain, source by source.

Result<std::shared_ptr<AwsCredentialProvider>> Resolve(std::string profile = "") {
  AwsCredentialChainOptions options;
  options.profile = std::move(profile);
  options.sts_timeout_seconds = 5;
  return ResolveAwsCredentialChain(options);
}

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

// A fake STS: answers AssumeRoleWithWebIdentity with `key` (and a token and
// an expiration `lifetime` from now).
FakeHttpServer::Handler Sts(std::string key, std::chrono::seconds lifetime) {
  return [key, lifetime](const Request& request) {
    if (request.method != "POST" || request.body.find("Action=AssumeRoleWithWebIdentity") ==
                                        std::string::npos) {
      return Reply{400, "<ErrorResponse><Error><Code>InvalidAction</Code></Error></ErrorResponse>"};
    }
    return Reply{200, fmt::format("<AssumeRoleWithWebIdentityResponse><AssumeRoleWithWebIdentity"
                                  "Result><Credentials><AccessKeyId>{}</AccessKeyId>"
                                  "<SecretAccessKey>{}</SecretAccessKey><SessionToken>session-of-"
                                  "{}</SessionToken><Expiration>{}</Expiration></Credentials>"
                                  "</AssumeRoleWithWebIdentityResult>"
                                  "</AssumeRoleWithWebIdentityResponse>",
                                  key, key, key, is::FormatIso8601(Clock::now() + lifetime))};
  };
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

// A fake container credentials endpoint at /creds.
FakeHttpServer::Handler Container(std::string key, std::chrono::seconds lifetime) {
  return [key, lifetime](const Request& request) {
    if (request.target != "/creds") return Reply{404, "{}"};
    return Reply{200, fmt::format(R"({{"AccessKeyId": "{}", "SecretAccessKey": "S",
                                      "Token": "T-{}", "Expiration": "{}"}})",
                                  key, key, is::FormatIso8601(Clock::now() + lifetime))};
  };
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

// A fake instance metadata service with role "dask-node". `v2`: it hands
// out session tokens (else it answers the token PUT with 405, as an
// IMDSv1-only service or proxy does).
struct FakeImds {
  explicit FakeImds(bool v2, std::chrono::seconds lifetime, std::string key = "ASIAEC2")
      : server([=](const Request& r) {
          const bool has_token = r.headers.count("x-aws-ec2-metadata-token") > 0;
          if (r.method == "PUT" && r.target == "/latest/api/token") {
            if (!v2) return Reply{405, ""};
            if (Header(r, "x-aws-ec2-metadata-token-ttl-seconds") != "21600") {
              return Reply{400, "missing ttl"};
            }
            return Reply{200, "imds-session-token"};
          }
          if (v2 && (!has_token || Header(r, "x-aws-ec2-metadata-token") != "imds-session-token")) {
            return Reply{401, ""};
          }
          if (r.target == "/latest/meta-data/iam/security-credentials/") {
            return Reply{200, "dask-node"};
          }
          if (r.target == "/latest/meta-data/iam/security-credentials/dask-node") {
            return Reply{200, fmt::format(R"({{"Code": "Success", "AccessKeyId": "{}",
                "SecretAccessKey": "S", "Token": "T", "Expiration": "{}"}})",
                                          key, is::FormatIso8601(Clock::now() + lifetime))};
          }
          return Reply{404, ""};
        }) {}
  FakeHttpServer server;
};

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

// ---------------------------------------------------------------------------
// Refreshing.

TEST(AwsRefreshTest, LongLivedCredentialsAreKeptShortLivedOnesFetchedAgain) {
  HermeticAwsEnvironment env;
  ScopedEnv enabled("AWS_EC2_METADATA_DISABLED", nullptr);
  FakeImds hours(/*v2=*/true, std::chrono::hours(6));
  {
    ScopedEnv endpoint("AWS_EC2_METADATA_SERVICE_ENDPOINT", hours.server.endpoint().c_str());
    Result<std::shared_ptr<AwsCredentialProvider>> r = Resolve();
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    for (int i = 0; i < 5; ++i) ASSERT_TRUE((*r)->Get().ok());
    EXPECT_EQ(hours.server.requests().size(), 3u);  // token, role, credentials: once
  }
  // Expiring in 4 minutes, inside the 5-minute refresh window: every Get
  // walks the service again.
  FakeImds minutes(/*v2=*/true, std::chrono::minutes(4));
  ScopedEnv endpoint("AWS_EC2_METADATA_SERVICE_ENDPOINT", minutes.server.endpoint().c_str());
  Result<std::shared_ptr<AwsCredentialProvider>> r = Resolve();
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_TRUE((*r)->Get().ok());
  ASSERT_TRUE((*r)->Get().ok());
  EXPECT_EQ(minutes.server.requests().size(), 9u);
}

TEST(AwsRefreshTest, AFailedRefreshKeepsValidCredentialsAndReportsExpiredOnes) {
  HermeticAwsEnvironment env;
  // Serves credentials with the expiration in `*lifetime` until `*broken`,
  // then answers 500.
  auto broken = std::make_shared<std::atomic<bool>>(false);
  auto lifetime = std::make_shared<std::atomic<int>>(180);
  FakeHttpServer container([broken, lifetime](const Request&) {
    if (*broken) return Reply{500, "agent down"};
    return Reply{200, fmt::format(R"({{"AccessKeyId": "ASIAOLD", "SecretAccessKey": "S",
        "Token": "T", "Expiration": "{}"}})",
                                  is::FormatIso8601(Clock::now() +
                                                    std::chrono::seconds(lifetime->load())))};
  });
  const std::string url = container.endpoint() + "/creds";
  ScopedEnv full("AWS_CONTAINER_CREDENTIALS_FULL_URI", url.c_str());
  Result<std::shared_ptr<AwsCredentialProvider>> r = Resolve();
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  *broken = true;
  // Three minutes left: the refresh fails, the old credentials still work.
  Result<AwsCredentials> c = (*r)->Get();
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->access_key_id, "ASIAOLD");

  // Credentials that have expired and cannot be refreshed: the error says so.
  *broken = false;
  *lifetime = -60;
  ScopedEnv token("AWS_CONTAINER_AUTHORIZATION_TOKEN", "another-configuration");
  r = Resolve();
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  *broken = true;
  c = (*r)->Get();
  EXPECT_EQ(c.status().code(), StatusCode::kUnavailable);
  EXPECT_THAT(Message(c.status()), HasSubstr("refreshing the credentials that expired at "));
  EXPECT_THAT(Message(c.status()), HasSubstr(": container credentials: " + url +
                                             " answered 500: agent down"));
}

// ---------------------------------------------------------------------------
// S3Store with the chain.

S3Store::Options FakeS3Options(const FakeHttpServer& s3) {
  S3Store::Options options;
  options.bucket = "b";
  options.prefix = "p";
  options.endpoint = s3.endpoint();
  options.max_retries = 0;
  return options;
}

const char* kEmptyListing = "<ListBucketResult><IsTruncated>false</IsTruncated></ListBucketResult>";

TEST(S3StoreCredentialsTest, SessionTokenIsSentAndRequestsAreSigned) {
  HermeticAwsEnvironment env;
  FakeHttpServer s3([](const Request&) { return Reply{200, kEmptyListing}; });
  FakeHttpServer container(Container("ASIASIGNED", std::chrono::hours(1)));
  const std::string url = container.endpoint() + "/creds";
  ScopedEnv full("AWS_CONTAINER_CREDENTIALS_FULL_URI", url.c_str());
  Result<std::unique_ptr<S3Store>> store = S3Store::Open(FakeS3Options(s3));
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  EXPECT_EQ((*store)->credential_source(), "container credentials (" + url + ")");
  std::vector<Request> requests = s3.requests();
  ASSERT_EQ(requests.size(), 1u);
  EXPECT_EQ(requests[0].headers["x-amz-security-token"], "T-ASIASIGNED");
  EXPECT_THAT(requests[0].headers["authorization"],
              HasSubstr("AWS4-HMAC-SHA256 Credential=ASIASIGNED/"));
  EXPECT_THAT(requests[0].headers["authorization"], HasSubstr("x-amz-security-token"));
}

TEST(S3StoreCredentialsTest, AnonymousOnlyWhenAskedFor) {
  HermeticAwsEnvironment env;
  FakeHttpServer s3([](const Request&) { return Reply{200, kEmptyListing}; });
  S3Store::Options options = FakeS3Options(s3);
  Result<std::unique_ptr<S3Store>> store = S3Store::Open(options);
  EXPECT_EQ(store.status().code(), StatusCode::kPermissionDenied);
  const std::string m = Message(store.status());
  EXPECT_THAT(m, HasSubstr("s3://b/p: no AWS credentials found (looked at: environment"));
  EXPECT_THAT(m, HasSubstr("add ?anon=true to the s3:// URL"));
  EXPECT_EQ(m.find('\n'), std::string::npos);
  EXPECT_TRUE(s3.requests().empty());

  Result<S3Store::Options> parsed =
      S3Store::ParseUrl(fmt::format("s3://b/p?anon=true&endpoint={}", s3.endpoint()));
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  EXPECT_TRUE(parsed->anonymous);
  store = S3Store::Open(*parsed);
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  EXPECT_EQ((*store)->credential_source(), "anonymous");
  ASSERT_EQ(s3.requests().size(), 1u);
  EXPECT_EQ(s3.requests()[0].headers.count("authorization"), 0u);
  EXPECT_EQ(s3.requests()[0].headers.count("x-amz-security-token"), 0u);

  EXPECT_FALSE(S3Store::ParseUrl("s3://b/p?anon=false")->anonymous);
  EXPECT_EQ(Message(S3Store::ParseUrl("s3://b/p?anon=maybe").status()),
            "s3 URL option anon=maybe must be true or false");
}

TEST(S3StoreCredentialsTest, ProfileInTheUrlBringsItsKeysAndRegion) {
  HermeticAwsEnvironment env;
  WriteFile(env.config_file(), "[profile eu]\nregion = eu-central-1\n"
                               "aws_access_key_id = AKEU\naws_secret_access_key = SKEU\n");
  FakeHttpServer s3([](const Request&) { return Reply{200, kEmptyListing}; });
  Result<S3Store::Options> parsed =
      S3Store::ParseUrl(fmt::format("s3://b/p?profile=eu&endpoint={}", s3.endpoint()));
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  EXPECT_EQ(parsed->profile, "eu");
  EXPECT_EQ(parsed->region, "eu-central-1");
  EXPECT_EQ(S3Store::ParseUrl("s3://b/p?profile=eu&region=us-west-1")->region, "us-west-1");
  Result<std::unique_ptr<S3Store>> store = S3Store::Open(*parsed);
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  EXPECT_THAT(s3.requests()[0].headers["authorization"],
              HasSubstr("Credential=AKEU/" ));
  EXPECT_THAT(s3.requests()[0].headers["authorization"], HasSubstr("/eu-central-1/s3/"));
}

TEST(S3StoreCredentialsTest, ExpiredCredentialsThatCannotBeRefreshedFailTheRequest) {
  HermeticAwsEnvironment env;
  FakeHttpServer s3([](const Request&) { return Reply{200, kEmptyListing}; });
  auto calls = std::make_shared<std::atomic<int>>(0);
  FakeHttpServer container([calls](const Request&) {
    if ((*calls)++ > 0) return Reply{404, "no such task"};
    return Reply{200, fmt::format(R"({{"AccessKeyId": "A", "SecretAccessKey": "S",
        "Token": "T", "Expiration": "{}"}})",
                                  is::FormatIso8601(Clock::now() - std::chrono::minutes(1)))};
  });
  const std::string url = container.endpoint() + "/creds";
  ScopedEnv full("AWS_CONTAINER_CREDENTIALS_FULL_URI", url.c_str());
  Result<std::unique_ptr<S3Store>> store = S3Store::Open(FakeS3Options(s3));
  EXPECT_EQ(store.status().code(), StatusCode::kUnknown);
  EXPECT_THAT(Message(store.status()),
              HasSubstr("s3://b/p: credentials: refreshing the credentials that expired at "));
  EXPECT_THAT(Message(store.status()),
              HasSubstr("container credentials: " + url + " answered 404: no such task"));
  EXPECT_TRUE(s3.requests().empty());
}

TEST(S3StoreCredentialsTest, WebIdentityAgainstARealS3Server) {
  HermeticAwsEnvironment env;
  // STS hands out s3rver's account as temporary credentials.
  FakeHttpServer sts(Sts(S3TestServer::kAccessKeyId, std::chrono::hours(1)));
  WriteFile(env.dir() + "/token", "k8s-service-account-token");
  ScopedEnv token_file("AWS_WEB_IDENTITY_TOKEN_FILE", (env.dir() + "/token").c_str());
  ScopedEnv role("AWS_ROLE_ARN", "arn:aws:iam::123:role/s3rver");
  ScopedEnv endpoint("AWS_ENDPOINT_URL_STS", sts.endpoint().c_str());
  const S3TestServer& server = SharedS3TestServer();
  Result<StoreAndPrefix> at =
      OpenStoreUrl(fmt::format("s3://{}/{}/web.zarr?endpoint={}", kS3TestBucket,
                               UniqueS3Prefix(), server.endpoint()),
                   /*create=*/true);
  ASSERT_TRUE(at.ok()) << at.status().ToString();
  ASSERT_TRUE(at->store->Set("zarr.json", "{}").ok());
  EXPECT_EQ(*at->store->GetString("zarr.json"), "{}");
  EXPECT_EQ(sts.requests().size(), 1u);

  // The same bucket with a key s3rver does not know: the chain's keys were
  // what made the difference.
  ScopedEnv key("AWS_ACCESS_KEY_ID", "NOBODY");
  ScopedEnv secret("AWS_SECRET_ACCESS_KEY", "x");
  Result<StoreAndPrefix> refused = OpenStoreUrl(
      fmt::format("s3://{}/x?endpoint={}", kS3TestBucket, server.endpoint()), false);
  EXPECT_EQ(refused.status().code(), StatusCode::kPermissionDenied);
}

}  // namespace
}  // namespace strata
