// Sharded arrays (sharding_indexed): round trips over codecs, dtypes, index
// placements and ragged edges; reads that fetch only the bytes they need
// (counted by a store wrapper); missing inner chunks and empty shards;
// partial updates; shards built by hand from the spec's format; and corrupt
// indexes, which are errors naming the shard.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <random>

#include "strata/core/synthetic.h"
#include "strata/storage/codec/codec.h"
#include "strata/storage/local_store.h"
#include "strata/storage/memory_store.h"
#include "strata/storage/store.h"
#include "strata/storage/zarr/shard.h"
#include "strata/storage/zarr/zarr_array.h"

namespace strata {
namespace {

MemoryPool& Pool() { return *MemoryPool::Default(); }

// Forwards to a MemoryStore and counts what is read.
class CountingStore : public Store {
 public:
  CountingStore() : inner_(std::make_shared<MemoryStore>()) {}

  Result<Buffer> Get(std::string_view key, MemoryPool& pool) override {
    Result<Buffer> r = inner_->Get(key, pool);
    if (r.ok()) Count(r->size());
    return r;
  }
  Result<Buffer> GetRange(std::string_view key, int64_t offset, int64_t length,
                          MemoryPool& pool) override {
    Result<Buffer> r = inner_->GetRange(key, offset, length, pool);
    if (r.ok()) Count(r->size());
    return r;
  }
  Result<Suffix> GetSuffix(std::string_view key, int64_t length, MemoryPool& pool) override {
    Result<Suffix> r = inner_->GetSuffix(key, length, pool);
    if (r.ok()) Count(r->bytes.size());
    return r;
  }
  Status GetInto(std::string_view key, std::span<std::byte> out) override {
    Status s = inner_->GetInto(key, out);
    if (s.ok()) Count(static_cast<int64_t>(out.size()));
    return s;
  }
  Result<std::optional<int64_t>> Size(std::string_view key) override { return inner_->Size(key); }
  Status Set(std::string_view key, std::span<const std::byte> value) override {
    return inner_->Set(key, value);
  }
  using Store::Set;
  Status Erase(std::string_view key) override { return inner_->Erase(key); }
  Result<std::vector<std::string>> List(std::string_view prefix) override {
    return inner_->List(prefix);
  }
  std::string url() const override { return "counting://"; }

  int64_t bytes_read() const { return bytes_.load(); }
  int64_t reads() const { return reads_.load(); }
  void Reset() {
    bytes_ = 0;
    reads_ = 0;
  }
  MemoryStore& inner() { return *inner_; }

 private:
  void Count(int64_t n) {
    bytes_ += n;
    ++reads_;
  }
  std::shared_ptr<MemoryStore> inner_;
  std::atomic<int64_t> bytes_{0};
  std::atomic<int64_t> reads_{0};
};

ArrayMetadata Sharded(DType dtype, Shape shape, Shape shard, Shape inner,
                      std::vector<BytesCodecSpec> codecs = {}) {
  ArrayMetadata m;
  m.zarr_format = ZarrFormat::kV3;
  m.shape = std::move(shape);
  m.chunk_shape = std::move(shard);
  m.encoding.dtype = dtype;
  m.fill_value = ZeroFillValue(dtype);
  m.chunk_key_encoding = {ChunkKeyEncoding::Kind::kDefault, '/'};
  ShardingSpec s;
  s.inner_chunk_shape = std::move(inner);
  s.inner_encoding.dtype = dtype;
  s.inner_encoding.bytes_codecs = std::move(codecs);
  m.sharding = s;
  return m;
}

NDArray Synthetic(DType dtype, const Shape& shape, uint64_t seed) {
  NDArray a = *NDArray::Allocate(Pool(), dtype, shape);
  FillSynthetic(a.view(), Box::FromShape(shape), shape, seed);
  return a;
}

// Writes every shard of `data` into a new array at `store`.
std::shared_ptr<ZarrArray> WriteAll(std::shared_ptr<Store> store, const ArrayMetadata& m,
                                    const NDArray& data) {
  ZarrArray::CreateOptions create;
  create.deferred_metadata = false;
  auto a = ZarrArray::Create(std::move(store), "a", m, create);
  EXPECT_TRUE(a.ok()) << a.status().ToString();
  const ChunkGrid& grid = (*a)->grid();
  Shape block(grid.rank(), 0);
  do {
    Box box = grid.BlockBox(block);
    Status s = (*a)->WriteChunk(block, data.view().Slice(box), Pool());
    EXPECT_TRUE(s.ok()) << s.ToString();
  } while (NextIndex(block, grid.grid_shape()));
  return *a;
}

NDArray ReadAll(const ZarrArray& a) {
  NDArray out = *NDArray::Allocate(Pool(), a.dtype(), a.shape());
  Status s = a.ReadRegion(Box::FromShape(a.shape()), out.view(), Pool());
  EXPECT_TRUE(s.ok()) << s.ToString();
  return out;
}

struct Case {
  std::string name;
  DType dtype;
  std::vector<BytesCodecSpec> codecs;
};

class ShardRoundTripTest : public ::testing::TestWithParam<Case> {};

TEST_P(ShardRoundTripTest, EveryWayOfReadingGivesTheData) {
  const Case& c = GetParam();
  // Ragged against the shards (10, 12) and against the inner chunks (5, 4).
  const Shape shape = {23, 26};
  for (bool at_end : {true, false}) {
    for (bool crc : {true, false}) {
      SCOPED_TRACE(fmt::format("index at {}, crc32c {}", at_end ? "end" : "start", crc));
      ArrayMetadata m = Sharded(c.dtype, shape, {10, 12}, {5, 4}, c.codecs);
      m.sharding->index_at_end = at_end;
      m.sharding->index_crc32c = crc;
      if (!at_end) m.sharding->index_endian = Endian::kBig;
      if (c.dtype.component_size() > 1 && crc) m.sharding->inner_encoding.endian = Endian::kBig;
      if (!crc) m.sharding->inner_encoding.transpose = {1, 0};
      ASSERT_TRUE(m.Validate().ok()) << m.Validate().ToString();
      // The metadata survives its JSON.
      Result<ArrayMetadata> parsed = ParseZarrV3ArrayMetadata(m.Encode()[0].second);
      ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
      ASSERT_EQ(parsed->sharding, m.sharding);

      const NDArray data = Synthetic(c.dtype, shape, 7);
      auto store = std::make_shared<MemoryStore>();
      std::shared_ptr<ZarrArray> a = WriteAll(store, m, data);
      EXPECT_TRUE(ArraysEqual(ReadAll(*a).view(), data.view()));
      // Whole shards.
      const ChunkGrid& grid = a->grid();
      Shape block(2, 0);
      do {
        Box box = grid.BlockBox(block);
        NDArray shard = *NDArray::Allocate(Pool(), c.dtype, box.shape);
        ASSERT_TRUE(a->ReadChunk(block, shard.view(), Pool()).ok());
        EXPECT_TRUE(ArraysEqual(shard.view(), data.view().Slice(box)));
      } while (NextIndex(block, grid.grid_shape()));
      // Inner chunks one by one.
      const ChunkGrid& inner = a->read_grid();
      EXPECT_EQ(inner.chunk_shape(), (Shape{5, 4}));
      block.assign(2, 0);
      do {
        Box box = inner.BlockBox(block);
        NDArray chunk = *NDArray::Allocate(Pool(), c.dtype, box.shape);
        Result<bool> present = a->ReadBlock(block, chunk.view(), Pool());
        ASSERT_TRUE(present.ok()) << present.status().ToString();
        EXPECT_TRUE(ArraysEqual(chunk.view(), data.view().Slice(box)));
      } while (NextIndex(block, inner.grid_shape()));
      // Odd regions.
      std::mt19937 rng(3);
      for (int k = 0; k < 10; ++k) {
        Box region(Shape(2), Shape(2));
        for (int i = 0; i < 2; ++i) {
          region.origin[i] = std::uniform_int_distribution<Index>(0, shape[i] - 1)(rng);
          region.shape[i] =
              std::uniform_int_distribution<Index>(1, shape[i] - region.origin[i])(rng);
        }
        NDArray part = *NDArray::Allocate(Pool(), c.dtype, region.shape);
        ASSERT_TRUE(a->ReadRegion(region, part.view(), Pool()).ok());
        EXPECT_TRUE(ArraysEqual(part.view(), data.view().Slice(region))) << region.ToString();
      }
    }
  }
}

std::vector<Case> Cases() {
  std::vector<Case> cases;
  using K = Checksum32Spec::Kind;
  const std::vector<std::pair<std::string, std::vector<BytesCodecSpec>>> codecs = {
      {"raw", {}},
      {"blosc", {BloscSpec{}}},
      {"zstd_crc32c", {ZstdSpec{3, false}, Crc32cSpec{}}},
      {"gzip", {GzipSpec{5}}},
      {"zlib", {ZlibSpec{1}}},
      {"bz2", {Bz2Spec{1}}},
      {"lz4_fletcher32", {Lz4Spec{1}, Checksum32Spec{K::kFletcher32, false}}},
      {"shuffle_crc32", {ShuffleSpec{4}, Checksum32Spec{K::kCrc32, true}}},
  };
  const std::vector<DType> dtypes = {DTypeId::kBool,    DTypeId::kInt8,      DTypeId::kUInt16,
                                     DTypeId::kInt32,   DTypeId::kInt64,     DTypeId::kFloat16,
                                     DTypeId::kFloat32, DTypeId::kFloat64,   DTypeId::kComplex64,
                                     DTypeId::kComplex128};
  for (const auto& [name, list] : codecs) {
    for (DType t : dtypes) {
      // Shuffle's element size must divide the chunk's bytes: 4 suits all but
      // the 1- and 2-byte types.
      if (name == "shuffle_crc32" && t.size() < 4) continue;
      cases.push_back({fmt::format("{}_{}", name, t.name()), t, list});
    }
  }
  return cases;
}

INSTANTIATE_TEST_SUITE_P(CodecsAndDTypes, ShardRoundTripTest, ::testing::ValuesIn(Cases()),
                         [](const auto& info) { return info.param.name; });

TEST(ShardingTest, FixedLengthTypesRoundTrip) {
  for (DType t : {DType::FixedUnicode(3), DType::FixedBytes(5)}) {
    SCOPED_TRACE(t.ToString());
    ArrayMetadata m = Sharded(t, {9}, {4}, {2}, {ZstdSpec{1, false}});
    NDArray data = *NDArray::Allocate(Pool(), t, {9});
    for (Index i = 0; i < 9; ++i) {
      for (int b = 0; b < t.size(); ++b) {
        data.data()[i * t.size() + b] = std::byte(static_cast<uint8_t>((i * 7 + b) % 97 + 1));
      }
    }
    auto a = WriteAll(std::make_shared<MemoryStore>(), m, data);
    EXPECT_TRUE(ArraysEqual(ReadAll(*a).view(), data.view()));
  }
}

TEST(ShardingTest, PartialReadsFetchOnlyTheIndexAndTheInnerChunksNeeded) {
  // One shard (100, 100) of inner chunks (10, 10), float64, uncompressed:
  // 80 KB of data, 100 inner chunks of 800 bytes, an index of 1604 bytes.
  auto store = std::make_shared<CountingStore>();
  ArrayMetadata m = Sharded(DTypeId::kFloat64, {100, 100}, {100, 100}, {10, 10});
  const NDArray data = Synthetic(DTypeId::kFloat64, {100, 100}, 1);
  auto a = WriteAll(store, m, data);
  const int64_t index_bytes = a->shard_layout()->index_bytes();
  EXPECT_EQ(index_bytes, 100 * 16 + 4);
  // A 1% region inside one inner chunk: the index and that inner chunk only.
  store->Reset();
  NDArray part = *NDArray::Allocate(Pool(), DTypeId::kFloat64, {10, 10});
  ASSERT_TRUE(a->ReadRegion(Box({30, 40}, {10, 10}), part.view(), Pool()).ok());
  EXPECT_TRUE(ArraysEqual(part.view(), data.view().Slice(Box({30, 40}, {10, 10}))));
  EXPECT_EQ(store->bytes_read(), index_bytes + 800);
  EXPECT_EQ(store->reads(), 2);
  // The index is cached: another inner chunk of the same shard costs one read.
  store->Reset();
  ASSERT_TRUE(a->ReadRegion(Box({0, 0}, {10, 10}), part.view(), Pool()).ok());
  EXPECT_EQ(store->bytes_read(), 800);
  EXPECT_EQ(store->reads(), 1);
  // A region straddling four inner chunks reads only its part of each (raw
  // bytes decode runs): from the part's first byte to its last, 12 elements.
  store->Reset();
  NDArray straddle = *NDArray::Allocate(Pool(), DTypeId::kFloat64, {4, 4});
  ASSERT_TRUE(a->ReadRegion(Box({58, 18}, {4, 4}), straddle.view(), Pool()).ok());
  EXPECT_TRUE(ArraysEqual(straddle.view(), data.view().Slice(Box({58, 18}, {4, 4}))));
  EXPECT_EQ(store->bytes_read(), 4 * 12 * 8);
  // Blosc inner chunks (1.28 MB, in blosc blocks): the last ten rows of an
  // inner chunk read the last block, not the inner chunk.
  auto bstore = std::make_shared<CountingStore>();
  ArrayMetadata b = Sharded(DTypeId::kFloat64, {800, 400}, {800, 400}, {400, 400},
                            {BloscSpec{}});
  const NDArray bdata = Synthetic(DTypeId::kFloat64, {800, 400}, 5);
  auto ba = WriteAll(bstore, b, bdata);
  bstore->Reset();
  NDArray rows = *NDArray::Allocate(Pool(), DTypeId::kFloat64, {10, 400});
  ASSERT_TRUE(ba->ReadRegion(Box({790, 0}, {10, 400}), rows.view(), Pool()).ok());
  EXPECT_TRUE(ArraysEqual(rows.view(), bdata.view().Slice(Box({790, 0}, {10, 400}))));
  Buffer bshard = *bstore->inner().Get("a/c/0/0", Pool());
  uint64_t inner_bytes;
  std::memcpy(&inner_bytes,
              bshard.data() + bshard.size() - ba->shard_layout()->index_bytes() + 1 * 16 + 8, 8);
  EXPECT_LT(bstore->bytes_read(),
            ba->shard_layout()->index_bytes() + static_cast<int64_t>(inner_bytes) / 3)
      << "of an inner chunk of " << inner_bytes << " bytes";
  // Compressed inner chunks: the ranges read are exactly the index entries.
  auto zstore = std::make_shared<CountingStore>();
  ArrayMetadata z = Sharded(DTypeId::kFloat64, {100, 100}, {100, 100}, {10, 10},
                            {ZstdSpec{1, false}});
  z.sharding->index_at_end = false;
  auto za = WriteAll(zstore, z, data);
  zstore->Reset();
  ASSERT_TRUE(za->ReadRegion(Box({30, 40}, {10, 10}), part.view(), Pool()).ok());
  EXPECT_TRUE(ArraysEqual(part.view(), data.view().Slice(Box({30, 40}, {10, 10}))));
  Buffer shard = *zstore->inner().Get("a/c/0/0", Pool());
  uint64_t nbytes;
  const Index inner = 3 * 10 + 4;
  std::memcpy(&nbytes, shard.data() + inner * 16 + 8, 8);
  EXPECT_EQ(zstore->bytes_read(), index_bytes + static_cast<int64_t>(nbytes));
  EXPECT_LT(zstore->bytes_read(), shard.size() / 20);
}

TEST(ShardingTest, FillValueInnerChunksAreNotStoredAndEmptyShardsNotWritten) {
  auto store = std::make_shared<MemoryStore>();
  ArrayMetadata m = Sharded(DTypeId::kInt32, {8, 8}, {4, 8}, {2, 2}, {ZstdSpec{1, false}});
  m.fill_value = MakeFillValue(DTypeId::kInt32, -1);
  NDArray data = *NDArray::Allocate(Pool(), DTypeId::kInt32, {8, 8});
  FillArray(data.view(), m.fill_value.bytes);
  // Only inner chunk (1, 2) of shard (0, 0) holds data; shard (1, 0) is all fill.
  data.values<int32_t>()[2 * 8 + 5] = 42;
  auto a = WriteAll(store, m, data);
  EXPECT_TRUE(*store->Exists("a/c/0/0"));
  EXPECT_FALSE(*store->Exists("a/c/1/0"));
  auto layout = a->shard_layout();
  Buffer shard = *store->Get("a/c/0/0", Pool());
  ShardIndex index = *layout->DecodeIndex(
      shard.span().last(static_cast<size_t>(layout->index_bytes())), shard.size(), "shard");
  int stored = 0;
  for (Index j = 0; j < index.size(); ++j) stored += index.entry(j).missing() ? 0 : 1;
  EXPECT_EQ(stored, 1);
  EXPECT_FALSE(index.entry(1 * 4 + 2).missing());
  EXPECT_TRUE(ArraysEqual(ReadAll(*a).view(), data.view()));
  // Rewriting a shard of an existing array as all fill removes it. (An
  // array just created writes each shard once and sends no erase for an
  // empty one: nothing can be there yet.)
  NDArray fill = *NDArray::Allocate(Pool(), DTypeId::kInt32, {4, 8});
  FillArray(fill.view(), m.fill_value.bytes);
  const Index zero[] = {0, 0};
  auto existing = *ZarrArray::Open(store, "a");
  ASSERT_TRUE(existing->WriteChunk(zero, fill.view(), Pool()).ok());
  EXPECT_FALSE(*store->Exists("a/c/0/0"));
  NDArray back = ReadAll(*existing);
  for (int32_t v : back.values<int32_t>()) EXPECT_EQ(v, -1);
}

TEST(ShardingTest, RegionWritesKeepUntouchedInnerChunksAsStored) {
  auto store = std::make_shared<MemoryStore>();
  ArrayMetadata m = Sharded(DTypeId::kFloat32, {12, 12}, {12, 12}, {4, 4}, {BloscSpec{}});
  NDArray data = Synthetic(DTypeId::kFloat32, {12, 12}, 5);
  auto a = WriteAll(store, m, data);
  auto layout = a->shard_layout();
  auto entries = [&] {
    Buffer shard = *store->Get("a/c/0/0", Pool());
    ShardIndex index = *layout->DecodeIndex(
        shard.span().last(static_cast<size_t>(layout->index_bytes())), shard.size(), "shard");
    std::vector<std::string> bytes;
    for (Index j = 0; j < index.size(); ++j) {
      const ShardEntry& e = index.entry(j);
      bytes.emplace_back(reinterpret_cast<const char*>(shard.data() + e.offset), e.nbytes);
    }
    return bytes;
  };
  const std::vector<std::string> before = entries();
  // Rows 5..6, columns 1..9: touches inner chunks (1, 0), (1, 1), (1, 2).
  const Box region({5, 1}, {2, 9});
  NDArray patch = Synthetic(DTypeId::kFloat32, region.shape, 99);
  ASSERT_TRUE(a->WriteRegion(region, patch.view(), Pool()).ok());
  CopyArray(patch.view(), data.view().Slice(region));
  EXPECT_TRUE(ArraysEqual(ReadAll(*a).view(), data.view()));
  const std::vector<std::string> after = entries();
  for (Index j = 0; j < 9; ++j) {
    const bool touched = j == 3 || j == 4 || j == 5;
    EXPECT_EQ(before[j] == after[j], !touched) << j;
  }
}

// A shard built by hand from the spec's binary format (docs/v3/codecs/
// sharding-indexed): uint8 inner chunks of (2, 2) in a (4, 4) shard, bytes
// codec, index little-endian with crc32c at the end; inner chunk (1, 0)
// missing; chunks stored out of order with a gap.
std::string HandMadeShard() {
  std::string data;
  std::vector<std::pair<uint64_t, uint64_t>> index(4, {~uint64_t{0}, ~uint64_t{0}});
  auto put = [&](int inner, std::string bytes) {
    index[inner] = {data.size(), bytes.size()};
    data += bytes;
  };
  data += "gap!";  // unused space is allowed
  put(3, std::string("\x0d\x0e\x0f\x10", 4));
  put(0, std::string("\x01\x02\x03\x04", 4));
  put(1, std::string("\x05\x06\x07\x08", 4));
  std::string table(64, '\0');
  for (int i = 0; i < 4; ++i) {
    std::memcpy(table.data() + 16 * i, &index[i].first, 8);
    std::memcpy(table.data() + 16 * i + 8, &index[i].second, 8);
  }
  const uint32_t crc = Crc32c(std::as_bytes(std::span(table.data(), table.size())));
  return data + table + std::string(reinterpret_cast<const char*>(&crc), 4);
}

constexpr const char* kHandMadeMetadata = R"({
  "zarr_format": 3, "node_type": "array", "shape": [4, 4], "data_type": "uint8",
  "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [4, 4]}},
  "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
  "fill_value": 99,
  "codecs": [{"name": "sharding_indexed", "configuration": {
    "chunk_shape": [2, 2], "codecs": [{"name": "bytes"}],
    "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}}, {"name": "crc32c"}],
    "index_location": "end"}}],
  "attributes": {}})";

std::shared_ptr<Store> HandMadeStore(const std::string& shard) {
  auto store = std::make_shared<MemoryStore>();
  EXPECT_TRUE(store->Set("a/zarr.json", kHandMadeMetadata).ok());
  EXPECT_TRUE(store->Set("a/c/0/0", shard).ok());
  return store;
}

TEST(ShardingTest, ReadsAShardBuiltFromTheSpec) {
  auto a = ZarrArray::Open(HandMadeStore(HandMadeShard()), "a");
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  NDArray out = ReadAll(**a);
  EXPECT_EQ(out.values<uint8_t>()[0], 1);
  EXPECT_EQ(out.values<uint8_t>()[1], 2);
  EXPECT_EQ(out.values<uint8_t>()[2], 5);
  EXPECT_EQ(out.values<uint8_t>()[4], 3);
  EXPECT_EQ(out.values<uint8_t>()[8], 99);  // inner chunk (1, 0) is missing
  EXPECT_EQ(out.values<uint8_t>()[15], 16);
}

TEST(ShardingTest, BadIndexesAreErrorsNamingTheShard) {
  const std::string good = HandMadeShard();
  const size_t table = good.size() - 68;
  auto set_entry = [&](std::string shard, int inner, uint64_t offset, uint64_t nbytes,
                       bool fix_crc = true) {
    std::memcpy(shard.data() + table + 16 * inner, &offset, 8);
    std::memcpy(shard.data() + table + 16 * inner + 8, &nbytes, 8);
    if (fix_crc) {
      const uint32_t crc = Crc32c(std::as_bytes(std::span(shard.data() + table, 64)));
      std::memcpy(shard.data() + table + 64, &crc, 4);
    }
    return shard;
  };
  const std::pair<std::string, std::string> cases[] = {
      {set_entry(good, 0, 0, 4, /*fix_crc=*/false), "shard index checksum mismatch"},
      {set_entry(good, 0, 100, 4), "inner chunk (0, 0) at bytes [100, 104) reaches past the end"},
      {set_entry(good, 0, 14, 4), "inner chunk (0, 0) at bytes [14, 18) overlaps the shard index"},
      {set_entry(good, 1, 6, 4), "overlap"},
      {set_entry(good, 2, 0, ~uint64_t{0}), "is half missing"},
      {good.substr(0, 40), "too short for its 68-byte index"},
  };
  for (const auto& [shard, message] : cases) {
    SCOPED_TRACE(message);
    auto a = ZarrArray::Open(HandMadeStore(shard), "a");
    ASSERT_TRUE(a.ok()) << a.status().ToString();
    NDArray out = *NDArray::Allocate(Pool(), DTypeId::kUInt8, {4, 4});
    for (bool whole : {true, false}) {
      Status s = whole ? (*a)->ReadChunk(std::vector<Index>{0, 0}, out.view(), Pool()).status()
                       : (*a)->ReadRegion(Box({0, 0}, {1, 1}), out.view().Slice(Box({0, 0}, {1, 1})),
                                          Pool());
      EXPECT_EQ(s.code(), StatusCode::kDataLoss) << s.ToString();
      EXPECT_NE(s.message().find("shard c/0/0 of memory://"), std::string_view::npos)
          << s.message();
      EXPECT_NE(s.message().find(message), std::string_view::npos) << s.message();
    }
  }
}

TEST(ShardingTest, ShardWriterStreamsThroughALocalFile) {
  // LocalStore writers hold no shard buffer: WriterMemory is 0.
  auto local = LocalStore::Open(::testing::TempDir() + "/strata-shard-writer");
  ASSERT_TRUE(local.ok());
  EXPECT_EQ((*local)->WriterMemory(int64_t{1} << 30), 0);
  std::shared_ptr<Store> store = std::move(*local);
  ArrayMetadata m = Sharded(DTypeId::kInt16, {6, 6}, {6, 6}, {3, 3}, {GzipSpec{1}});
  m.sharding->index_at_end = false;
  NDArray data = Synthetic(DTypeId::kInt16, {6, 6}, 2);
  ZarrArray::CreateOptions create;
  create.overwrite = true;
  create.deferred_metadata = false;
  auto a = *ZarrArray::Create(store, "w", m, create);
  auto pool = MemoryPool::Default()->NewChild({"writer test", 0});
  const Index zero[] = {0, 0};
  auto writer = *a->BeginShard(zero, *pool);
  for (Index j = 3; j >= 0; --j) {
    ASSERT_TRUE(writer->Add(j, data.view().Slice(a->shard_layout()->InnerBox(j))).ok());
  }
  EXPECT_TRUE(*writer->Finish());
  EXPECT_TRUE(ArraysEqual(ReadAll(*a).view(), data.view()));
  // Never more than an inner chunk's encoding at a time.
  EXPECT_LT(pool->peak_bytes(), 4096);
}

}  // namespace
}  // namespace strata
