// S3Store using what the AWS credential chain found, against a fake S3 and
// s3rver on 127.0.0.1: signed requests with session tokens, anonymous access,
// profiles in the URL, expired credentials, web identity.
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
}  // namespace strata::testing_s3
