// Refreshing the AWS credential chain's credentials: long-lived ones kept,
// short-lived ones fetched again, a failed refresh reported only once the
// credentials expired.
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

}  // namespace
}  // namespace strata::testing_s3
