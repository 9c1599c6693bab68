// S3Store: the protocol pieces without a server, then the Store conformance
// suite and S3-specific behaviour (pagination, multipart, retries, errors)
// against a real S3 server (s3rver) on 127.0.0.1.
#include "strata/storage/open_store.h"
#include "strata/storage/s3/s3_store.h"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "strata/storage/s3/s3_protocol.h"
#include "strata/storage/s3/s3_test_util.h"
#include "strata/storage/store_test_util.h"

namespace strata {
namespace {

using ::testing::HasSubstr;
namespace is = internal_storage;

std::span<const std::byte> Bytes(const std::string& s) {
  return std::as_bytes(std::span(s.data(), s.size()));
}

std::string ToString(const Buffer& b) {
  return std::string(reinterpret_cast<const char*>(b.data()), static_cast<size_t>(b.size()));
}

// A store under a fresh prefix of the shared server's bucket.
std::shared_ptr<S3Store> NewStore(S3Store::Options options) {
  Result<std::unique_ptr<S3Store>> store = S3Store::Open(std::move(options));
  STRATA_CHECK(store.ok()) << store.status().ToString();
  return std::move(store).value();
}

std::shared_ptr<S3Store> NewStore() {
  return NewStore(SharedS3TestServer().StoreOptions(kS3TestBucket, UniqueS3Prefix()));
}

// ---------------------------------------------------------------------------
// The protocol, without a server.

TEST(S3ProtocolTest, UriEncodeKeepsOnlyUnreserved) {
  EXPECT_EQ(is::UriEncode("a.zarr/0.0", true), "a.zarr/0.0");
  EXPECT_EQ(is::UriEncode("a.zarr/0.0", false), "a.zarr%2F0.0");
  EXPECT_EQ(is::UriEncode("a b+c=d&e~f_g-h(i)!*'", true),
            "a%20b%2Bc%3Dd%26e~f_g-h%28i%29%21%2A%27");
  EXPECT_EQ(is::UriEncode("\xC3\xBC", true), "%C3%BC");
}

TEST(S3ProtocolTest, UriDecode) {
  EXPECT_EQ(*is::UriDecode("http%3A%2F%2F127.0.0.1%3a9000", false), "http://127.0.0.1:9000");
  EXPECT_EQ(*is::UriDecode("a+b", true), "a b");
  EXPECT_EQ(*is::UriDecode("a+b", false), "a+b");
  EXPECT_EQ(is::UriDecode("bad%2", false).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(is::UriDecode("bad%zz", false).status().code(), StatusCode::kInvalidArgument);
}

TEST(S3ProtocolTest, CanonicalQueryIsSortedAndEncoded) {
  EXPECT_EQ(is::CanonicalQuery({{"prefix", "a/b c"},
                                {"list-type", "2"},
                                {"max-keys", "7"},
                                {"continuation-token", "1x+/ab=="}}),
            "continuation-token=1x%2B%2Fab%3D%3D&list-type=2&max-keys=7&prefix=a%2Fb%20c");
  EXPECT_EQ(is::CanonicalQuery({{"uploads", ""}}), "uploads=");
  EXPECT_EQ(is::CanonicalQuery({{"uploadId", "x"}, {"partNumber", "3"}}),
            "partNumber=3&uploadId=x");
}

TEST(S3ProtocolTest, XmlUnescapeDecodesEntities) {
  EXPECT_EQ(*is::XmlUnescape("a&amp;b&lt;c&gt;d&quot;e&apos;f"), "a&b<c>d\"e'f");
  EXPECT_EQ(*is::XmlUnescape("&#65;&#x42;&#x1F600;&#xfc;"), "AB\xF0\x9F\x98\x80\xC3\xBC");
  EXPECT_EQ(*is::XmlUnescape("no entities"), "no entities");
  EXPECT_EQ(*is::XmlUnescape("&amp;amp;"), "&amp;");  // decoded once only
  for (const char* bad : {"&nbsp;", "&#;", "&#xZZ;", "&#0;", "&#xD800;", "&#x110000;", "a & b"}) {
    Result<std::string> r = is::XmlUnescape(bad);
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << bad;
  }
}

TEST(S3ProtocolTest, XmlElementsMatchWholeNames) {
  std::string_view xml =
      "<R><KeyCount>2</KeyCount><Key>a</Key><Key attr=\"1\">b&amp;c</Key><Key/><Keys>x</Keys></R>";
  std::vector<std::string_view> keys = is::XmlElements(xml, "Key");
  ASSERT_EQ(keys.size(), 3u);
  EXPECT_EQ(keys[0], "a");
  EXPECT_EQ(keys[1], "b&amp;c");
  EXPECT_EQ(keys[2], "");
  EXPECT_EQ(**is::XmlFirst(xml, "KeyCount"), "2");
  EXPECT_FALSE(is::XmlFirst(xml, "Missing")->has_value());
}

TEST(S3ProtocolTest, ParseListObjectsV2) {
  // As AWS S3 writes it (entities in keys and in the token).
  std::string_view xml =
      R"(<?xml version="1.0" encoding="UTF-8"?>
<ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Name>b</Name><Prefix>p/</Prefix>
<KeyCount>3</KeyCount><MaxKeys>3</MaxKeys><IsTruncated>true</IsTruncated>
<Contents><Key>p/a&amp;b</Key><LastModified>2024-01-01T00:00:00.000Z</LastModified>
<ETag>&quot;abc&quot;</ETag><Size>5</Size><StorageClass>STANDARD</StorageClass></Contents>
<Contents><Key>p/&lt;x&gt; &#x00FC;</Key><Size>1</Size></Contents>
<Contents><Key>p/plain</Key><Size>0</Size></Contents>
<NextContinuationToken>1ueGcxLPRx1Tr/XYExHnhbYLgveDs2J/wm36Hy4vbOwM=&amp;</NextContinuationToken>
</ListBucketResult>)";
  Result<is::ListPage> page = is::ParseListObjectsV2(xml);
  ASSERT_TRUE(page.ok()) << page.status().ToString();
  EXPECT_EQ(page->keys, (std::vector<std::string>{"p/a&b", "p/<x> \xC3\xBC", "p/plain"}));
  EXPECT_TRUE(page->truncated);
  EXPECT_EQ(page->next_continuation_token, "1ueGcxLPRx1Tr/XYExHnhbYLgveDs2J/wm36Hy4vbOwM=&");

  Result<is::ListPage> last = is::ParseListObjectsV2(
      "<ListBucketResult><IsTruncated>false</IsTruncated></ListBucketResult>");
  ASSERT_TRUE(last.ok());
  EXPECT_TRUE(last->keys.empty());
  EXPECT_FALSE(last->truncated);

  EXPECT_THAT(std::string(is::ParseListObjectsV2("<Error/>").status().message()),
              HasSubstr("not a ListObjectsV2 response"));
  EXPECT_THAT(std::string(is::ParseListObjectsV2("<ListBucketResult><IsTruncated>true</IsTruncated>"
                                                 "</ListBucketResult>")
                              .status()
                              .message()),
              HasSubstr("no NextContinuationToken"));
}

TEST(S3ProtocolTest, ParseErrorBody) {
  is::S3ErrorBody e = is::ParseErrorBody(
      "<?xml version=\"1.0\"?><Error><Code>NoSuchKey</Code><Message>The key &apos;k&apos; "
      "does not\nexist</Message></Error>");
  EXPECT_EQ(e.code, "NoSuchKey");
  EXPECT_EQ(e.message, "The key 'k' does not exist");
  EXPECT_EQ(is::ParseErrorBody("").code, "");
}

TEST(S3ProtocolTest, RetryableResponses) {
  EXPECT_TRUE(is::IsRetryableResponse(500, "InternalError"));
  EXPECT_TRUE(is::IsRetryableResponse(503, "SlowDown"));
  EXPECT_TRUE(is::IsRetryableResponse(429, ""));
  EXPECT_TRUE(is::IsRetryableResponse(400, "RequestTimeout"));
  EXPECT_FALSE(is::IsRetryableResponse(403, "SignatureDoesNotMatch"));
  EXPECT_FALSE(is::IsRetryableResponse(404, "NoSuchKey"));
}

TEST(S3ProtocolTest, MultipartBodyAndPartSize) {
  EXPECT_EQ(is::CompleteMultipartUploadBody({"\"a\"", "\"b\""}),
            "<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>&quot;a&quot;</ETag>"
            "</Part><Part><PartNumber>2</PartNumber><ETag>&quot;b&quot;</ETag></Part>"
            "</CompleteMultipartUpload>");
  const int64_t MiB = 1 << 20;
  EXPECT_EQ(is::MultipartPartSize(100 * MiB, 16 * MiB), 16 * MiB);
  EXPECT_EQ(is::MultipartPartSize(100 * MiB, 1 * MiB), 5 * MiB);  // S3's minimum
  // 1 TB in at most 10,000 parts.
  const int64_t tb = int64_t{1} << 40;
  EXPECT_LE((tb + is::MultipartPartSize(tb, 16 * MiB) - 1) / is::MultipartPartSize(tb, 16 * MiB),
            10000);
}

TEST(S3UrlTest, ParsesBucketPrefixAndOptions) {
  ScopedEnv endpoint("AWS_ENDPOINT_URL", "http://127.0.0.1:1");
  ScopedEnv endpoint_s3("AWS_ENDPOINT_URL_S3", nullptr);
  ScopedEnv region("AWS_REGION", "eu-west-1");
  ScopedEnv key("AWS_ACCESS_KEY_ID", "AK");
  ScopedEnv secret("AWS_SECRET_ACCESS_KEY", "SK");
  Result<S3Store::Options> o = S3Store::ParseUrl("s3://bkt/a/b.zarr");
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  EXPECT_EQ(o->bucket, "bkt");
  EXPECT_EQ(o->prefix, "a/b.zarr");
  EXPECT_EQ(o->endpoint, "http://127.0.0.1:1");
  EXPECT_EQ(o->region, "eu-west-1");
  // Credentials are the chain's business at Open (s3_credentials_test.cc),
  // never the URL's.
  EXPECT_EQ(o->access_key_id, "");
  EXPECT_FALSE(o->anonymous);
  EXPECT_EQ(o->profile, "");

  o = S3Store::ParseUrl(
      "s3://bkt?endpoint=http%3A%2F%2F127.0.0.1%3A4568&region=us-west-2&max_concurrency=3&"
      "max_retries=0&multipart_threshold=10MiB&part_size=5MiB&list_page_size=7");
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  EXPECT_EQ(o->prefix, "");
  EXPECT_EQ(o->endpoint, "http://127.0.0.1:4568");
  EXPECT_EQ(o->region, "us-west-2");
  EXPECT_EQ(o->max_concurrency, 3);
  EXPECT_EQ(o->max_retries, 0);
  EXPECT_EQ(o->multipart_threshold, 10 << 20);
  EXPECT_EQ(o->part_size, 5 << 20);
  EXPECT_EQ(o->list_page_size, 7);
}

TEST(S3UrlTest, BadUrlsAreInvalidArgument) {
  Result<S3Store::Options> r = S3Store::ParseUrl("s3:///prefix");
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("names no bucket"));
  r = S3Store::ParseUrl("s3://b/p?secret_access_key=x");
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("unknown s3 URL option"));
  r = S3Store::ParseUrl("s3://b/p?max_retries=lots");
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("max_retries=lots is not an integer"));

  S3Store::Options options;
  options.bucket = "b";
  options.endpoint = "ftp://127.0.0.1:1";
  EXPECT_THAT(std::string(S3Store::Open(options).status().message()),
              HasSubstr("must start with http:// or https://"));
  options.endpoint = "http://127.0.0.1:1";
  options.prefix = "a/../b";
  EXPECT_EQ(S3Store::Open(options).status().code(), StatusCode::kInvalidArgument);
  options.prefix = "";
  options.part_size = 1 << 20;
  EXPECT_THAT(std::string(S3Store::Open(options).status().message()),
              HasSubstr("part_size must be at least 5 MiB"));
}

// ---------------------------------------------------------------------------
// Against the server.

INSTANTIATE_TEST_SUITE_P(S3Store, StoreConformanceTest,
                         testing::Values(StoreFactory{
                             "S3Store", [] { return std::shared_ptr<Store>(NewStore()); }}));

TEST(S3StoreTest, UrlNamesBucketAndPrefix) {
  auto store = NewStore(SharedS3TestServer().StoreOptions(kS3TestBucket, "/x/y.zarr/"));
  EXPECT_EQ(store->url(), "s3://strata-test/x/y.zarr");
  ASSERT_TRUE(store->Set("0.0", "v").ok());
  // The object is "x/y.zarr/0.0" in the bucket: a store at the bucket root sees it there.
  auto root = NewStore(SharedS3TestServer().StoreOptions(kS3TestBucket, ""));
  EXPECT_EQ(root->url(), "s3://strata-test");
  EXPECT_EQ(*root->GetString("x/y.zarr/0.0"), "v");
  EXPECT_EQ(*root->List("x/"), std::vector<std::string>{"x/y.zarr/0.0"});
  ASSERT_TRUE(root->ErasePrefix("x/").ok());
}

TEST(S3StoreTest, GetRangeOfALargeObject) {
  auto store = NewStore();
  std::string value(3 << 20, '\0');
  for (size_t i = 0; i < value.size(); ++i) value[i] = static_cast<char>(i * 7 + i / 4096);
  ASSERT_TRUE(store->Set("big", Bytes(value)).ok());
  Result<Buffer> mid = store->GetRange("big", 1'000'001, 123'457, *MemoryPool::Default());
  ASSERT_TRUE(mid.ok()) << mid.status().ToString();
  EXPECT_EQ(ToString(*mid), value.substr(1'000'001, 123'457));
  EXPECT_EQ(ToString(*store->GetRange("big", value.size() - 3, 10, *MemoryPool::Default())),
            value.substr(value.size() - 3));
  EXPECT_EQ(store->GetRange("big", 0, 0, *MemoryPool::Default())->size(), 0);
  Result<Buffer> past = store->GetRange("big", value.size() + 1, 1, *MemoryPool::Default());
  EXPECT_EQ(past.status().code(), StatusCode::kOutOfRange);
  EXPECT_THAT(std::string(past.status().message()), HasSubstr("s3://strata-test/"));
  EXPECT_EQ(store->GetRange("absent", 0, 1, *MemoryPool::Default()).status().code(),
            StatusCode::kNotFound);
}

TEST(S3StoreTest, GetIntoReportsSizeWithoutReadingAWrongSizedObject) {
  auto store = NewStore();
  ASSERT_TRUE(store->Set("c", Bytes(std::string(1000, 'x'))).ok());
  std::vector<std::byte> small(10);
  Status s = store->GetInto("c", small);
  EXPECT_EQ(s.code(), StatusCode::kDataLoss);
  EXPECT_THAT(std::string(s.message()), HasSubstr("/c holds 1000 bytes, expected 10"));
}

TEST(S3StoreTest, GetAllocatesFromTheCallersPool) {
  auto store = NewStore();
  ASSERT_TRUE(store->Set("k", Bytes(std::string(100'000, 'x'))).ok());
  auto pool = MemoryPool::NewRoot({"capped", 50'000});
  Result<Buffer> got = store->Get("k", *pool);
  EXPECT_EQ(got.status().code(), StatusCode::kResourceExhausted);
  auto roomy = MemoryPool::NewRoot({"roomy", 200'000});
  got = store->Get("k", *roomy);
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(roomy->bytes_in_use(), got->charged());
}

TEST(S3StoreTest, KeysThatNeedEscaping) {
  auto store = NewStore();
  const std::vector<std::string> keys = {
      "a b/c+d=e",  "x&y<z>'q\"", "paren(1)!*~.txt", "percent%20sign", "\xC3\xBC/\xE2\x82\xAC",
      "semi;colon,"};
  for (const std::string& key : keys) {
    ASSERT_TRUE(store->Set(key, Bytes("v:" + key)).ok()) << key;
  }
  for (const std::string& key : keys) {
    Result<std::string> got = store->GetString(key);
    ASSERT_TRUE(got.ok()) << key << ": " << got.status().ToString();
    EXPECT_EQ(*got, "v:" + key);
    EXPECT_EQ(**store->Size(key), static_cast<int64_t>(key.size() + 2));
  }
  std::vector<std::string> sorted = keys;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(*store->List(""), sorted);
  EXPECT_EQ(*store->List("a b/"), std::vector<std::string>{"a b/c+d=e"});
}

// A page size below the server's 1000 makes continuation tokens testable
// without writing thousands of objects (s3rver takes ~12 ms per PUT).
TEST(S3StoreTest, ListFollowsContinuationTokens) {
  S3Store::Options options = SharedS3TestServer().StoreOptions(kS3TestBucket, UniqueS3Prefix());
  options.list_page_size = 7;
  auto store = NewStore(options);
  std::vector<std::string> expected;
  for (int i = 0; i < 45; ++i) expected.push_back(fmt::format("arr/{}.0", i));
  std::vector<std::thread> writers;
  for (int t = 0; t < 3; ++t) {
    writers.emplace_back([&, t] {
      for (size_t i = t; i < expected.size(); i += 3) {
        ASSERT_TRUE(store->Set(expected[i], "v").ok());
      }
    });
  }
  for (auto& w : writers) w.join();
  ASSERT_TRUE(store->Set("arrother/0", "v").ok());
  std::sort(expected.begin(), expected.end());
  int64_t before = store->requests_sent();
  EXPECT_EQ(*store->List("arr/"), expected);
  EXPECT_EQ(store->requests_sent() - before, 7);  // ceil(45 / 7) pages
}

TEST(S3StoreTest, MultipartUploadRoundTrip) {
  S3Store::Options options = SharedS3TestServer().StoreOptions(kS3TestBucket, UniqueS3Prefix());
  options.multipart_threshold = 6 << 20;
  options.part_size = 5 << 20;
  auto store = NewStore(options);
  std::string value((12 << 20) + 12345, '\0');
  for (size_t i = 0; i < value.size(); ++i) value[i] = static_cast<char>((i * 131) >> 3);
  int64_t before = store->requests_sent();
  Status s = store->Set("multi", Bytes(value));
  ASSERT_TRUE(s.ok()) << s.ToString();
  // Initiate, three parts (5 + 5 + 2 MiB), complete.
  EXPECT_EQ(store->requests_sent() - before, 5);
  Result<Buffer> got = store->Get("multi", *MemoryPool::Default());
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_TRUE(ToString(*got) == value);
  EXPECT_EQ(**store->Size("multi"), static_cast<int64_t>(value.size()));
  // A value at the threshold goes up in one PUT.
  before = store->requests_sent();
  ASSERT_TRUE(store->Set("single", Bytes(std::string(6 << 20, 's'))).ok());
  EXPECT_EQ(store->requests_sent() - before, 1);
  // Overwriting a multipart object with a small one replaces it.
  ASSERT_TRUE(store->Set("multi", "small").ok());
  EXPECT_EQ(*store->GetString("multi"), "small");
}

TEST(S3StoreTest, ManyThreadsThroughFewConnections) {
  S3Store::Options options = SharedS3TestServer().StoreOptions(kS3TestBucket, UniqueS3Prefix());
  options.max_concurrency = 2;
  auto store = NewStore(options);
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 4; ++i) {
        std::string key = fmt::format("{}/{}", t, i);
        if (!store->Set(key, key).ok() || *store->GetString(key) != key) ++failures;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(store->List("")->size(), 32u);
}

TEST(S3StoreTest, WrongSecretKeyIsAClearError) {
  S3Store::Options options = SharedS3TestServer().StoreOptions(kS3TestBucket, "p");
  options.secret_access_key = "not-the-secret";
  Result<std::unique_ptr<S3Store>> store = S3Store::Open(options);
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.status().code(), StatusCode::kPermissionDenied);
  const std::string message(store.status().message());
  EXPECT_THAT(message, HasSubstr("s3://strata-test/p: GET " + SharedS3TestServer().endpoint() +
                                 " returned 403 SignatureDoesNotMatch"));
  EXPECT_EQ(message.find('\n'), std::string::npos);
}

TEST(S3StoreTest, UnknownAccessKeyIsAClearError) {
  S3Store::Options options = SharedS3TestServer().StoreOptions(kS3TestBucket, "");
  options.access_key_id = "NOBODY";
  Result<std::unique_ptr<S3Store>> store = S3Store::Open(options);
  EXPECT_EQ(store.status().code(), StatusCode::kPermissionDenied);
  EXPECT_THAT(std::string(store.status().message()), HasSubstr("returned 403 InvalidAccessKeyId"));
}

TEST(S3StoreTest, MissingBucketIsNotFound) {
  S3Store::Options options = SharedS3TestServer().StoreOptions("no-such-bucket", "a.zarr");
  Result<std::unique_ptr<S3Store>> store = S3Store::Open(options);
  EXPECT_EQ(store.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(store.status().message(),
            "bucket 'no-such-bucket' does not exist at " + SharedS3TestServer().endpoint());
}

TEST(S3StoreTest, OpenStoreUrlAcceptsS3) {
  const S3TestServer& server = SharedS3TestServer();
  ScopedEnv key("AWS_ACCESS_KEY_ID", S3TestServer::kAccessKeyId);
  ScopedEnv secret("AWS_SECRET_ACCESS_KEY", S3TestServer::kSecretAccessKey);
  ScopedEnv endpoint("AWS_ENDPOINT_URL", nullptr);
  ScopedEnv endpoint_s3("AWS_ENDPOINT_URL_S3", nullptr);
  const std::string prefix = UniqueS3Prefix();
  Result<StoreAndPrefix> at = OpenStoreUrl(
      fmt::format("s3://{}/{}/a.zarr?endpoint={}", kS3TestBucket, prefix, server.endpoint()),
      /*create=*/true);
  ASSERT_TRUE(at.ok()) << at.status().ToString();
  EXPECT_EQ(at->prefix, "");
  EXPECT_EQ(at->store->url(), fmt::format("s3://{}/{}/a.zarr", kS3TestBucket, prefix));
  ASSERT_TRUE(at->store->Set(".zgroup", "{}").ok());
  EXPECT_EQ(*at->store->GetString(".zgroup"), "{}");

  // The endpoint from the environment.
  ScopedEnv from_env("AWS_ENDPOINT_URL", server.endpoint().c_str());
  at = OpenStoreUrl(fmt::format("s3://{}/{}/a.zarr", kS3TestBucket, prefix), false);
  ASSERT_TRUE(at.ok()) << at.status().ToString();
  EXPECT_EQ(*at->store->GetString(".zgroup"), "{}");

  Result<StoreAndPrefix> missing = OpenStoreUrl("s3://no-such-bucket/x", false);
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
}

// ---------------------------------------------------------------------------
// Faults.

TEST(S3StoreFaultTest, ServerStoppedMidRunRetriesThenNamesTheEndpoint) {
  Result<std::unique_ptr<S3TestServer>> server = S3TestServer::Start({"fault"});
  ASSERT_TRUE(server.ok()) << server.status().ToString();
  const std::string endpoint = (*server)->endpoint();
  auto store = NewStore((*server)->StoreOptions("fault", "run"));
  std::atomic<int> written{0};
  Status failure;
  std::thread writer([&] {
    for (int i = 0; i < 100'000; ++i) {
      Status s = store->Set(fmt::format("chunk/{}", i), std::string(10'000, 'c'));
      if (!s.ok()) {
        failure = s;
        return;
      }
      ++written;
    }
  });
  while (written < 5) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  int64_t before = store->requests_sent();
  (*server)->Stop();
  writer.join();
  ASSERT_FALSE(failure.ok());
  EXPECT_EQ(failure.code(), StatusCode::kUnavailable) << failure.ToString();
  const std::string message(failure.message());
  EXPECT_THAT(message, HasSubstr("s3://fault/run/chunk/"));
  EXPECT_THAT(message, HasSubstr("PUT " + endpoint + " failed after 3 attempts"));
  EXPECT_EQ(message.find('\n'), std::string::npos);
  EXPECT_GE(store->requests_sent() - before, 3);  // the first attempt and two retries

  // Reads and opening fail the same way.
  Result<Buffer> got = store->Get("chunk/0", *MemoryPool::Default());
  EXPECT_EQ(got.status().code(), StatusCode::kUnavailable);
  EXPECT_THAT(std::string(got.status().message()), HasSubstr("GET " + endpoint));
  Result<std::unique_ptr<S3Store>> reopened = S3Store::Open((*server)->StoreOptions("fault", ""));
  EXPECT_EQ(reopened.status().code(), StatusCode::kUnavailable);
  EXPECT_THAT(std::string(reopened.status().message()), HasSubstr(endpoint));
}

// An HTTP server on 127.0.0.1 (s3_test_util's FakeHttpServer) that answers
// every request with the next canned reply (the last one repeats), for the
// server behaviours s3rver cannot be made to show (throttling, 5xx).
class CannedHttpServer {
 public:
  explicit CannedHttpServer(std::vector<FakeHttpServer::Reply> replies)
      : replies_(std::move(replies)), server_([this](const FakeHttpServer::Request&) {
          const size_t i = served_++;
          return replies_[std::min(i, replies_.size() - 1)];
        }) {}
  std::string endpoint() const { return server_.endpoint(); }
  int requests() const { return static_cast<int>(served_.load()); }

 private:
  const std::vector<FakeHttpServer::Reply> replies_;
  std::atomic<size_t> served_{0};
  FakeHttpServer server_;  // last: its thread serves from the members above
};

S3Store::Options CannedOptions(const CannedHttpServer& server) {
  S3Store::Options options;
  options.bucket = "canned";
  options.endpoint = server.endpoint();
  options.access_key_id = "AK";
  options.secret_access_key = "SK";
  options.max_retries = 2;
  options.initial_backoff_seconds = 0.001;
  options.max_backoff_seconds = 0.01;
  return options;
}

const char* kEmptyListing = "<ListBucketResult><IsTruncated>false</IsTruncated></ListBucketResult>";
const char* kSlowDown =
    "<Error><Code>SlowDown</Code><Message>Please reduce your request rate."
    "</Message></Error>";

TEST(S3StoreFaultTest, ThrottlingIsRetried) {
  CannedHttpServer server({FakeHttpServer::Reply{200, kEmptyListing},
                           FakeHttpServer::Reply{503, kSlowDown},
                           FakeHttpServer::Reply{500, ""},
                           FakeHttpServer::Reply{200, "payload"}});
  auto store = NewStore(CannedOptions(server));
  Result<Buffer> got = store->Get("k", *MemoryPool::Default());
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(ToString(*got), "payload");
  EXPECT_EQ(server.requests(), 4);
}

TEST(S3StoreFaultTest, PersistentThrottlingGivesUpWithTheStatus) {
  CannedHttpServer server({FakeHttpServer::Reply{200, kEmptyListing},
                           FakeHttpServer::Reply{503, kSlowDown}});
  auto store = NewStore(CannedOptions(server));
  Status s = store->Set("a.zarr/0.0", "v");
  EXPECT_EQ(s.code(), StatusCode::kUnavailable);
  EXPECT_EQ(s.message(), "s3://canned/a.zarr/0.0: PUT " + server.endpoint() +
                             " returned 503 SlowDown (Please reduce your request rate.) after 3 "
                             "attempts");
  EXPECT_EQ(server.requests(), 4);  // the bucket check, then three attempts
}

TEST(S3StoreFaultTest, ClientErrorsAreNotRetried) {
  CannedHttpServer server(
      {FakeHttpServer::Reply{200, kEmptyListing},
       FakeHttpServer::Reply{403, "<Error><Code>AccessDenied</Code><Message>Access Denied</Message>"
                                  "</Error>"}});
  auto store = NewStore(CannedOptions(server));
  Status s = store->Set("k", "v");
  EXPECT_EQ(s.code(), StatusCode::kPermissionDenied);
  EXPECT_EQ(s.message(), "s3://canned/k: PUT " + server.endpoint() +
                             " returned 403 AccessDenied (Access Denied)");
  EXPECT_EQ(server.requests(), 2);
}

TEST(S3StoreFaultTest, ConnectionRefusedIsUnavailable) {
  const int port = FakeHttpServer::ClosedPort();
  S3Store::Options options;
  options.bucket = "b";
  options.endpoint = fmt::format("http://127.0.0.1:{}", port);
  options.max_retries = 1;
  options.initial_backoff_seconds = 0.001;
  options.anonymous = true;
  Result<std::unique_ptr<S3Store>> store = S3Store::Open(options);
  EXPECT_EQ(store.status().code(), StatusCode::kUnavailable);
  EXPECT_THAT(std::string(store.status().message()),
              HasSubstr("s3://b: GET " + options.endpoint + " failed after 2 attempts"));
}

}  // namespace
}  // namespace strata
