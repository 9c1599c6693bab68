// The AWS credential chain's parsers (s3_credentials.h), without a server:
// AWS ini files, ISO 8601 times, STS and JSON credential documents, and the
// hosts a credential URL may name. The chain's sources are tested in
// s3_credential_chain_test.cc, refreshing in s3_credential_refresh_test.cc,
// S3Store using the chain in s3_store_credentials_test.cc.
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

}  // namespace
}  // namespace strata::testing_s3
