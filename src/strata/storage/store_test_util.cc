#include "strata/storage/store_test_util.h"

#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <thread>
#include <vector>

namespace strata {

namespace {

std::span<const std::byte> Bytes(const std::string& s) {
  return std::as_bytes(std::span(s.data(), s.size()));
}

std::string ToString(const Buffer& b) {
  return std::string(reinterpret_cast<const char*>(b.data()), static_cast<size_t>(b.size()));
}

TEST_P(StoreConformanceTest, SetGetRoundTrip) {
  ASSERT_TRUE(store_->Set("a", Bytes("hello")).ok());
  Result<Buffer> got = store_->Get("a", *MemoryPool::Default());
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(ToString(*got), "hello");
  EXPECT_EQ(*store_->GetString("a"), "hello");
}

TEST_P(StoreConformanceTest, MissingKeyIsNotFound) {
  Result<Buffer> got = store_->Get("nope/0.0", *MemoryPool::Default());
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), StatusCode::kNotFound);
  EXPECT_FALSE(*store_->Exists("nope/0.0"));
  EXPECT_FALSE(store_->Size("nope/0.0")->has_value());
  std::byte out[4];
  EXPECT_EQ(store_->GetInto("nope", out).code(), StatusCode::kNotFound);
}

TEST_P(StoreConformanceTest, OverwriteReplaces) {
  ASSERT_TRUE(store_->Set("k", Bytes("first value")).ok());
  ASSERT_TRUE(store_->Set("k", Bytes("2nd")).ok());
  EXPECT_EQ(*store_->GetString("k"), "2nd");
  EXPECT_EQ(**store_->Size("k"), 3);
}

TEST_P(StoreConformanceTest, RenameMovesAValueOverAnother) {
  ASSERT_TRUE(store_->Set("staging/t/0.0", Bytes("new")).ok());
  ASSERT_TRUE(store_->Set("t/0.0", Bytes("old value")).ok());
  ASSERT_TRUE(store_->Rename("staging/t/0.0", "t/0.0").ok());
  EXPECT_EQ(*store_->GetString("t/0.0"), "new");
  EXPECT_FALSE(*store_->Exists("staging/t/0.0"));
  // Into a directory that does not exist yet; a missing source is NotFound.
  ASSERT_TRUE(store_->Set("a", Bytes("v")).ok());
  ASSERT_TRUE(store_->Rename("a", "deep/er/b").ok());
  EXPECT_EQ(*store_->GetString("deep/er/b"), "v");
  Status missing = store_->Rename("a", "c");
  EXPECT_EQ(missing.code(), StatusCode::kNotFound);
  EXPECT_FALSE(*store_->Exists("c"));
}

TEST_P(StoreConformanceTest, EmptyValue) {
  ASSERT_TRUE(store_->Set("empty", std::span<const std::byte>()).ok());
  EXPECT_TRUE(*store_->Exists("empty"));
  EXPECT_EQ(store_->Get("empty", *MemoryPool::Default())->size(), 0);
}

TEST_P(StoreConformanceTest, NestedKeysAndList) {
  for (const char* key : {"x.zarr/.zarray", "x.zarr/0.0", "x.zarr/0.1", "x.zarr/sub/1", "y/0",
                          "x.zarrother/0"}) {
    ASSERT_TRUE(store_->Set(key, Bytes("v")).ok()) << key;
  }
  std::vector<std::string> under_x = *store_->List("x.zarr/");
  EXPECT_EQ(under_x, (std::vector<std::string>{"x.zarr/.zarray", "x.zarr/0.0", "x.zarr/0.1",
                                               "x.zarr/sub/1"}));
  EXPECT_EQ(store_->List("")->size(), 6u);
  EXPECT_TRUE(store_->List("nothing/")->empty());
  ASSERT_TRUE(store_->ErasePrefix("x.zarr/").ok());
  EXPECT_TRUE(store_->List("x.zarr/")->empty());
  EXPECT_EQ(*store_->List(""), (std::vector<std::string>{"x.zarrother/0", "y/0"}));
}

TEST_P(StoreConformanceTest, EraseIsIdempotent) {
  ASSERT_TRUE(store_->Set("a/b", Bytes("v")).ok());
  EXPECT_TRUE(store_->Erase("a/b").ok());
  EXPECT_TRUE(store_->Erase("a/b").ok());
  EXPECT_FALSE(*store_->Exists("a/b"));
}

TEST_P(StoreConformanceTest, ByteRanges) {
  ASSERT_TRUE(store_->Set("r", Bytes("0123456789")).ok());
  EXPECT_EQ(ToString(*store_->GetRange("r", 2, 3, *MemoryPool::Default())), "234");
  EXPECT_EQ(ToString(*store_->GetRange("r", 8, 100, *MemoryPool::Default())), "89");
  EXPECT_EQ(ToString(*store_->GetRange("r", 10, 5, *MemoryPool::Default())), "");
  EXPECT_EQ(store_->GetRange("r", 11, 1, *MemoryPool::Default()).status().code(),
            StatusCode::kOutOfRange);
}

TEST_P(StoreConformanceTest, ByteRangesWithTheValuesSize) {
  ASSERT_TRUE(store_->Set("r", Bytes("0123456789")).ok());
  MemoryPool& pool = *MemoryPool::Default();
  Result<Store::Suffix> range = store_->GetRangeAndSize("r", 2, 3, pool);
  ASSERT_TRUE(range.ok()) << range.status().ToString();
  EXPECT_EQ(ToString(range->bytes), "234");
  EXPECT_EQ(range->total_size, 10);
  range = store_->GetRangeAndSize("r", 8, 100, pool);
  ASSERT_TRUE(range.ok()) << range.status().ToString();
  EXPECT_EQ(ToString(range->bytes), "89");
  EXPECT_EQ(range->total_size, 10);
  range = store_->GetRangeAndSize("r", 10, 0, pool);
  ASSERT_TRUE(range.ok()) << range.status().ToString();
  EXPECT_EQ(range->bytes.size(), 0);
  EXPECT_EQ(range->total_size, 10);
  EXPECT_EQ(store_->GetRangeAndSize("r", 11, 1, pool).status().code(), StatusCode::kOutOfRange);
  EXPECT_EQ(store_->GetRangeAndSize("missing", 0, 4, pool).status().code(),
            StatusCode::kNotFound);
}

TEST_P(StoreConformanceTest, Suffixes) {
  ASSERT_TRUE(store_->Set("s", Bytes("0123456789")).ok());
  Result<Store::Suffix> tail = store_->GetSuffix("s", 3, *MemoryPool::Default());
  ASSERT_TRUE(tail.ok()) << tail.status().ToString();
  EXPECT_EQ(ToString(tail->bytes), "789");
  EXPECT_EQ(tail->total_size, 10);
  tail = store_->GetSuffix("s", 100, *MemoryPool::Default());
  ASSERT_TRUE(tail.ok()) << tail.status().ToString();
  EXPECT_EQ(ToString(tail->bytes), "0123456789");
  EXPECT_EQ(tail->total_size, 10);
  tail = store_->GetSuffix("s", 0, *MemoryPool::Default());
  ASSERT_TRUE(tail.ok()) << tail.status().ToString();
  EXPECT_EQ(tail->bytes.size(), 0);
  EXPECT_EQ(tail->total_size, 10);
  EXPECT_EQ(store_->GetSuffix("missing", 4, *MemoryPool::Default()).status().code(),
            StatusCode::kNotFound);
}

TEST_P(StoreConformanceTest, WritersAppendPatchAndCommitAtomically) {
  ASSERT_TRUE(store_->Set("w/old", Bytes("previous")).ok());
  {
    Result<std::unique_ptr<StoreWriter>> w = store_->OpenWriter("w/old", 64, *MemoryPool::Default());
    ASSERT_TRUE(w.ok()) << w.status().ToString();
    ASSERT_TRUE((*w)->Append(Bytes("....body")).ok());
    ASSERT_TRUE((*w)->Append(Bytes("-tail")).ok());
    EXPECT_EQ((*w)->size(), 13);
    ASSERT_TRUE((*w)->PatchAt(0, Bytes("HEAD")).ok());
    // Until Commit the old value stays.
    EXPECT_EQ(*store_->GetString("w/old"), "previous");
    ASSERT_TRUE((*w)->Commit().ok());
  }
  EXPECT_EQ(*store_->GetString("w/old"), "HEADbody-tail");
  {
    // Abandoned: nothing appears, nothing is listed.
    Result<std::unique_ptr<StoreWriter>> w = store_->OpenWriter("w/new", 8, *MemoryPool::Default());
    ASSERT_TRUE(w.ok());
    ASSERT_TRUE((*w)->Append(Bytes("abc")).ok());
    EXPECT_EQ((*w)->Append(Bytes("too long!")).code(), StatusCode::kInvalidArgument);
  }
  EXPECT_FALSE(*store_->Exists("w/new"));
  EXPECT_EQ(*store_->List("w/"), std::vector<std::string>{"w/old"});
  EXPECT_EQ(store_->OpenWriter("../x", 8, *MemoryPool::Default()).status().code(),
            StatusCode::kInvalidArgument);
}

TEST_P(StoreConformanceTest, GetIntoChecksSize) {
  ASSERT_TRUE(store_->Set("c", Bytes("abcd")).ok());
  std::byte exact[4];
  ASSERT_TRUE(store_->GetInto("c", exact).ok());
  EXPECT_EQ(static_cast<char>(exact[3]), 'd');
  std::byte wrong[8];
  Status s = store_->GetInto("c", wrong);
  EXPECT_EQ(s.code(), StatusCode::kDataLoss);
  EXPECT_NE(s.message().find("holds 4 bytes, expected 8"), std::string_view::npos);
}

TEST_P(StoreConformanceTest, KeysThatEscapeAreRefused) {
  for (const char* bad : {"../x", "a/../../x", "/etc/passwd", "a//b", "./a", "a/.", "", "a\\b"}) {
    Status s = store_->Set(bad, Bytes("v"));
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << bad;
    EXPECT_EQ(store_->Get(bad, *MemoryPool::Default()).status().code(),
              StatusCode::kInvalidArgument)
        << bad;
    EXPECT_EQ(store_->Erase(bad).code(), StatusCode::kInvalidArgument) << bad;
  }
  EXPECT_NE(store_->Set("../x", Bytes("v")).message().find("escape"), std::string_view::npos);
}

TEST_P(StoreConformanceTest, LargeValue) {
  std::string big(5 << 20, 'z');
  big[12345] = 'q';
  ASSERT_TRUE(store_->Set("big", Bytes(big)).ok());
  Buffer got = *store_->Get("big", *MemoryPool::Default());
  ASSERT_EQ(got.size(), static_cast<int64_t>(big.size()));
  EXPECT_EQ(static_cast<char>(got.data()[12345]), 'q');
}

TEST_P(StoreConformanceTest, ConcurrentWritersAndReadersNeverSeeTornValues) {
  // Two values of different sizes and fillers; a reader must see one or the
  // other whole.
  std::string a(200'000, 'a'), b(100'000, 'b');
  ASSERT_TRUE(store_->Set("hot", Bytes(a)).ok());
  std::atomic<bool> stop{false};
  std::atomic<int> torn{0};
  std::thread reader([&] {
    while (!stop) {
      Result<Buffer> got = store_->Get("hot", *MemoryPool::Default());
      if (!got.ok()) continue;
      std::string s = ToString(*got);
      if (s != a && s != b) ++torn;
    }
  });
  std::vector<std::thread> writers;
  for (int w = 0; w < 2; ++w) {
    writers.emplace_back([&, w] {
      for (int i = 0; i < 30; ++i) ASSERT_TRUE(store_->Set("hot", Bytes((i + w) % 2 ? a : b)).ok());
    });
  }
  for (auto& t : writers) t.join();
  stop = true;
  reader.join();
  EXPECT_EQ(torn.load(), 0);
}

TEST_P(StoreConformanceTest, ManyKeysInParallel) {
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 50; ++i) {
        std::string key = "p/" + std::to_string(t) + "." + std::to_string(i);
        ASSERT_TRUE(store_->Set(key, Bytes(key)).ok());
      }
    });
  }
  for (auto& t : threads) t.join();
  std::vector<std::string> keys = *store_->List("p/");
  ASSERT_EQ(keys.size(), 200u);
  for (const std::string& k : keys) EXPECT_EQ(*store_->GetString(k), k);
}

}  // namespace
}  // namespace strata
