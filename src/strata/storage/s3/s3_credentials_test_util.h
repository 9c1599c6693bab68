// Helpers of the AWS credential chain's tests (s3_credential*_test.cc,
// s3_store_credentials_test.cc): files and messages, the chain resolved as
// a test resolves it, and fake STS, container and instance metadata
// endpoints (FakeHttpServer handlers on 127.0.0.1).
#ifndef STRATA_STORAGE_S3_S3_CREDENTIALS_TEST_UTIL_H_
#define STRATA_STORAGE_S3_S3_CREDENTIALS_TEST_UTIL_H_

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <memory>
#include <string>

#include "strata/base/check.h"
#include "strata/storage/s3/s3_credentials.h"
#include "strata/storage/s3/s3_credentials_internal.h"
#include "strata/storage/s3/s3_test_util.h"

namespace strata::testing_s3 {

using ::testing::HasSubstr;
using ::testing::Not;
namespace is = internal_storage;
using Clock = std::chrono::system_clock;
using Reply = FakeHttpServer::Reply;
using Request = FakeHttpServer::Request;

inline void WriteFile(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  STRATA_CHECK(out.good()) << path;
}

inline std::string Message(const Status& s) { return std::string(s.message()); }

inline std::string Header(const Request& r, const std::string& name) {
  auto it = r.headers.find(name);
  return it == r.headers.end() ? std::string() : it->second;
}

// The chain as the tests resolve it (STS answers within 5 s).
inline Result<std::shared_ptr<AwsCredentialProvider>> Resolve(std::string profile = "") {
  AwsCredentialChainOptions options;
  options.profile = std::move(profile);
  options.sts_timeout_seconds = 5;
  return ResolveAwsCredentialChain(options);
}

// A fake STS: answers AssumeRoleWithWebIdentity with `key` (and a token and
// an expiration `lifetime` from now).
inline FakeHttpServer::Handler Sts(std::string key, std::chrono::seconds lifetime) {
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

// A fake container credentials endpoint at /creds.
inline FakeHttpServer::Handler Container(std::string key, std::chrono::seconds lifetime) {
  return [key, lifetime](const Request& request) {
    if (request.target != "/creds") return Reply{404, "{}"};
    return Reply{200, fmt::format(R"({{"AccessKeyId": "{}", "SecretAccessKey": "S",
                                      "Token": "T-{}", "Expiration": "{}"}})",
                                  key, key, is::FormatIso8601(Clock::now() + lifetime))};
  };
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

}  // namespace strata::testing_s3

#endif  // STRATA_STORAGE_S3_S3_CREDENTIALS_TEST_UTIL_H_
