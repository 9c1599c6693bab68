// Partial reads (ZarrArray::ReadChunkPart, ReadRegion): a part of a chunk
// reads the same values as the whole chunk, over every encoding that decodes
// runs (raw bytes, blosc, byte-swapped) and those that do not (zstd, a
// transposed layout); it fetches only the stored bytes holding it; a missing
// chunk reads as fill and a truncated one is DataLoss naming the chunk.
#include <gtest/gtest.h>

#include <filesystem>
#include <random>

#include <fmt/format.h>

#include "strata/core/synthetic.h"
#include "strata/storage/local_store.h"
#include "strata/storage/memory_store.h"
#include "strata/storage/zarr/zarr_array.h"

namespace strata {
namespace {

struct Encoding {
  const char* name;
  std::vector<BytesCodecSpec> codecs;
  Endian endian = kNativeEndian;
  bool fortran = false;
  bool reads_runs = true;
};

std::vector<Encoding> Encodings() {
  return {
      {"raw", {}},
      {"blosc_lz4_small_blocks", {BloscSpec{"lz4", 5, 1, 1024, 0}}},
      {"blosc_zstd_bitshuffle", {BloscSpec{"zstd", 3, 2, 2048, 0}}},
      {"blosc_uncompressed", {BloscSpec{"lz4", 0, 1, 0, 0}}},
      {"blosc_big_endian", {BloscSpec{"lz4", 5, 1, 1024, 0}}, Endian::kBig},
      {"raw_big_endian", {}, Endian::kBig},
      {"zstd", {ZstdSpec{3, false}}, kNativeEndian, false, false},
      {"blosc_fortran_order", {BloscSpec{"lz4", 5, 1, 1024, 0}}, kNativeEndian, true, false},
  };
}

ArrayMetadata Meta(const Encoding& e, DTypeId dtype, Shape shape, Shape chunks) {
  ArrayMetadata m;
  m.zarr_format = ZarrFormat::kV2;
  m.shape = std::move(shape);
  m.chunk_shape = std::move(chunks);
  m.encoding.dtype = dtype;
  m.encoding.endian = e.endian;
  m.encoding.bytes_codecs = e.codecs;
  if (e.fortran) {
    for (int i = static_cast<int>(m.shape.size()); i-- > 0;) m.encoding.transpose.push_back(i);
  }
  m.fill_value = MakeFillValue(dtype, 7.0);
  return m;
}

std::shared_ptr<ZarrArray> Write(std::shared_ptr<Store> store, const ArrayMetadata& m,
                                 uint64_t seed) {
  ZarrArray::CreateOptions options;
  options.overwrite = true;
  auto a = *ZarrArray::Create(store, "a", m, options);
  MemoryPool& pool = *MemoryPool::Default();
  const ChunkGrid& grid = a->grid();
  for (Index b = 0; b < grid.num_blocks(); ++b) {
    Shape block(grid.rank());
    UnravelIndex(b, grid.grid_shape(), block);
    const Box box = grid.BlockBox(block);
    NDArray chunk = *NDArray::Allocate(pool, m.dtype(), box.shape);
    FillSynthetic(chunk.view(), box, m.shape, seed);
    EXPECT_TRUE(a->WriteChunk(block, chunk.view(), pool).ok());
  }
  EXPECT_TRUE(a->Commit().ok());
  return *ZarrArray::Open(store, "a");
}

Box RandomBox(const Shape& shape, std::mt19937_64& rng) {
  Box b(Shape(shape.size()), Shape(shape.size()));
  for (size_t i = 0; i < shape.size(); ++i) {
    const Index lo = static_cast<Index>(rng() % shape[i]);
    b.origin[i] = lo;
    b.shape[i] = 1 + static_cast<Index>(rng() % (shape[i] - lo));
  }
  return b;
}

TEST(PartialReadTest, PartsReadTheValuesOfTheWholeChunkOverEveryEncoding) {
  std::mt19937_64 rng(17);
  for (const Encoding& e : Encodings()) {
    for (DTypeId dtype : {DTypeId::kFloat64, DTypeId::kInt16, DTypeId::kUInt8}) {
      SCOPED_TRACE(::testing::Message() << e.name << " " << DType(dtype).name());
      const Shape shape = {37, 29, 11};
      const ArrayMetadata m = Meta(e, dtype, shape, {16, 10, 11});
      auto store = std::make_shared<MemoryStore>();
      auto a = Write(store, m, 3);
      EXPECT_EQ(a->codec().reads_runs(), e.reads_runs);
      MemoryPool& pool = *MemoryPool::Default();
      for (int i = 0; i < 30; ++i) {
        const Box region = RandomBox(shape, rng);
        NDArray got = *NDArray::Allocate(pool, dtype, region.shape);
        NDArray want = *NDArray::Allocate(pool, dtype, region.shape);
        ASSERT_TRUE(a->ReadRegion(region, got.view(), pool).ok()) << region.ToString();
        FillSynthetic(want.view(), region, shape, 3);
        ASSERT_TRUE(ArraysEqual(got.view(), want.view())) << region.ToString();
      }
    }
  }
}

TEST(PartialReadTest, APartFetchesOnlyTheStoredBytesHoldingIt) {
  // Rows 100..109 of a (256, 256) float64 chunk (2 KB a row), in blosc
  // blocks (libblosc makes the 4 KiB asked for 64 KiB when it compresses
  // each byte of the elements apart: 32 rows): one block of eight.
  const Encoding blosc{"blosc", {BloscSpec{"lz4", 5, 1, 4096, 0}}};
  for (const Encoding& e : {blosc, Encoding{"raw", {}}}) {
    SCOPED_TRACE(e.name);
    const Shape shape = {256, 512};
    auto store = std::make_shared<MemoryStore>();
    auto a = Write(store, Meta(e, DTypeId::kFloat64, shape, {256, 256}), 5);
    MemoryPool& pool = *MemoryPool::Default();
    const Box part({100, 256}, {10, 256});
    NDArray got = *NDArray::Allocate(pool, DTypeId::kFloat64, part.shape);
    const int64_t before = ThreadZarrBytesRead();
    Result<bool> present = a->ReadChunkPart(std::vector<Index>{0, 1}, part, got.view(), pool);
    const int64_t read = ThreadZarrBytesRead() - before;
    ASSERT_TRUE(present.ok()) << present.status().ToString();
    EXPECT_TRUE(*present);
    NDArray want = *NDArray::Allocate(pool, DTypeId::kFloat64, part.shape);
    FillSynthetic(want.view(), part, shape, 5);
    EXPECT_TRUE(ArraysEqual(got.view(), want.view()));
    const int64_t stored =
        *(*store->Size(a->ChunkStoreKey(std::vector<Index>{0, 1})));
    if (e.codecs.empty()) {
      EXPECT_EQ(a->PartialReadUnit(), std::optional<int64_t>(1));
      EXPECT_EQ(read, 10 * 256 * 8);
    } else {
      ASSERT_EQ(a->PartialReadUnit(), std::optional<int64_t>(65536));
      EXPECT_LE(read, 16 + 4 * 8 + 20 + 65536 + 64);
      EXPECT_LT(read, stored / 4);  // one block of eight, and the header
    }
  }
}

// A whole blosc chunk of 8 MiB or more read as a task reads its input
// (ReadBlock) decodes its stored bytes a few blosc blocks at a time where
// ranged reads are cheap: the pool never holds the encoded chunk beside the
// decoded one. A smaller chunk is one read.
TEST(PartialReadTest, AWholeBloscChunkIsReadInRunsNotBesideItsEncoding) {
  // 8 KiB asked: 64 KiB blocks (libblosc's split streams), 256 of them.
  const Encoding e{"blosc", {BloscSpec{"lz4", 5, 1, 8192, 0}}};
  const Shape shape = {1100, 2048};  // chunks of 16 MB, the second one clipped
  auto store = std::make_shared<MemoryStore>();
  auto a = Write(store, Meta(e, DTypeId::kFloat64, shape, {1024, 2048}), 11);
  for (Index b : {0, 1}) {
    SCOPED_TRACE(b);
    const std::vector<Index> block = {b, 0};
    const Box box = a->grid().BlockBox(block);
    NDArray got = *NDArray::Allocate(*MemoryPool::Default(), DTypeId::kFloat64, box.shape);
    std::shared_ptr<MemoryPool> pool = MemoryPool::Default()->NewChild({"read"});
    Result<bool> present = a->ReadBlock(block, got.view(), *pool);
    ASSERT_TRUE(present.ok()) << present.status().ToString();
    EXPECT_TRUE(*present);
    NDArray want = *NDArray::Allocate(*MemoryPool::Default(), DTypeId::kFloat64, box.shape);
    FillSynthetic(want.view(), box, shape, 11);
    EXPECT_TRUE(ArraysEqual(got.view(), want.view()));
    // At most one read of 8 blocks and one decoded block of scratch (the
    // edge chunk was decoded whole into a 16 MB temporary before).
    const int64_t bound = 9 * 65536 + 4096;
    EXPECT_LE(pool->peak_bytes(), bound) << "the encoded chunk was held whole";
    if (b == 0) {
      EXPECT_GT(*(*store->Size(a->ChunkStoreKey(block))), 4 * bound);
    }
  }
}

TEST(PartialReadTest, MissingChunksReadAsFillAndTruncatedOnesAreDataLoss) {
  const Encoding e{"blosc", {BloscSpec{"lz4", 5, 1, 1024, 0}}};
  auto store = std::make_shared<MemoryStore>();
  auto a = Write(store, Meta(e, DTypeId::kFloat64, {64, 64}, {32, 32}), 9);
  MemoryPool& pool = *MemoryPool::Default();
  const Box part({40, 0}, {4, 32});
  NDArray got = *NDArray::Allocate(pool, DTypeId::kFloat64, part.shape);
  const std::string key = a->ChunkStoreKey(std::vector<Index>{1, 0});
  Buffer stored = *store->Get(key, pool);
  ASSERT_TRUE(store->Erase(key).ok());
  Result<bool> missing = a->ReadChunkPart(std::vector<Index>{1, 0}, part, got.view(), pool);
  ASSERT_TRUE(missing.ok()) << missing.status().ToString();
  EXPECT_FALSE(*missing);
  for (Index i = 0; i < part.shape[0]; ++i) {
    EXPECT_EQ(*reinterpret_cast<const double*>(got.view().data() + i * 32 * 8), 7.0);
  }
  ASSERT_TRUE(store->Set(key, stored.span().first(stored.size() / 2)).ok());
  Result<bool> truncated = a->ReadChunkPart(std::vector<Index>{1, 0}, part, got.view(), pool);
  EXPECT_EQ(truncated.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(truncated.status().message().find("of chunk 1.0 of"), std::string_view::npos)
      << truncated.status().ToString();
}

// A stored chunk of the wrong length is corrupt on every read path: a part
// of it (ranged reads), the whole chunk and a region, over memory and a
// local directory. Uncompressed chunks were once read in ranges without a
// look at their length, so a rechunk used the first bytes of a chunk a byte
// too long, twice as long, or 1000 bytes too long.
TEST(PartialReadTest, AChunkOfTheWrongStoredLengthIsDataLossOnEveryReadPath) {
  const std::string dir = ::testing::TempDir() + "/partial_read_wrong_length";
  std::filesystem::remove_all(dir);
  std::vector<std::pair<std::string, std::shared_ptr<Store>>> stores = {
      {"memory", std::make_shared<MemoryStore>()},
      {"local", std::shared_ptr<Store>(*LocalStore::Open(dir))}};
  const Encoding blosc{"blosc", {BloscSpec{"lz4", 5, 1, 1024, 0}}};
  for (const Encoding& e : {Encoding{"raw", {}}, Encoding{"raw_big_endian", {}, Endian::kBig},
                            blosc}) {
    for (auto& [store_name, store] : stores) {
      // Chunks of 40 x 30 float64: 9,600 bytes.
      const Shape shape = {100, 60};
      auto a = Write(store, Meta(e, DTypeId::kFloat64, shape, {40, 30}), 4);
      MemoryPool& pool = *MemoryPool::Default();
      const std::vector<Index> block = {1, 0};
      const std::string key = a->ChunkStoreKey(block);
      const Buffer good = *store->Get(key, pool);
      const int64_t n = good.size();
      if (e.codecs.empty()) {
        ASSERT_EQ(n, 9600);
      }
      for (int64_t size : {n + 1, n + 1000, 2 * n}) {
        SCOPED_TRACE(::testing::Message() << e.name << " " << store_name << " " << size);
        std::vector<std::byte> bad(static_cast<size_t>(size));
        for (int64_t i = 0; i < size; ++i) bad[i] = good.data()[i % n];
        ASSERT_TRUE(store->Set(key, bad).ok());
        const std::string sizes = e.codecs.empty()
                                      ? fmt::format("{} bytes, expected {}", size, n)
                                      : fmt::format("a {}-byte frame but the encoded chunk has {} "
                                                    "bytes",
                                                    n, size);
        auto expect_data_loss = [&](const Status& s, const char* path) {
          SCOPED_TRACE(path);
          EXPECT_EQ(s.code(), StatusCode::kDataLoss) << s.ToString();
          EXPECT_NE(s.message().find("chunk 1.0 of"), std::string_view::npos) << s.ToString();
          EXPECT_NE(s.message().find(sizes), std::string_view::npos) << s.ToString();
        };
        const Box part({45, 3}, {4, 20});
        NDArray got = *NDArray::Allocate(pool, DTypeId::kFloat64, part.shape);
        expect_data_loss(a->ReadChunkPart(block, part, got.view(), pool).status(),
                         "ReadChunkPart");
        expect_data_loss(a->ReadRegion(part, got.view(), pool), "ReadRegion");
        NDArray whole = *NDArray::Allocate(pool, DTypeId::kFloat64, {40, 30});
        expect_data_loss(a->ReadChunk(block, whole.view(), pool).status(), "ReadChunk");
        expect_data_loss(a->ReadBlock(block, whole.view(), pool).status(), "ReadBlock");
      }
      ASSERT_TRUE(store->Set(key, good.span()).ok());
    }
  }
}

// What a planner projects for a part read (PartReadScratch) bounds what the
// read holds, over every encoding that decodes runs (a copied blosc frame,
// read run by run, too), and is far below the chunk; parts that may be read
// through the whole chunk have no such bound.
TEST(PartialReadTest, APartsScratchIsWithinWhatThePlannerProjects) {
  std::mt19937_64 rng(29);
  const Shape shape = {300, 2000};
  const Shape chunks = {300, 1000};  // 2.4 MB float64 chunks
  const Shape max_part = {60, 250};
  for (const Encoding& e : Encodings()) {
    if (!e.reads_runs) continue;
    SCOPED_TRACE(e.name);
    auto store = std::make_shared<MemoryStore>();
    auto a = Write(store, Meta(e, DTypeId::kFloat64, shape, chunks), 7);
    const std::optional<int64_t> projected = a->PartReadScratch(max_part);
    ASSERT_TRUE(projected.has_value());
    // Raw runs are fetched up to 4 MB at a time; blosc's a few blocks.
    EXPECT_LT(*projected, e.codecs.empty() ? a->chunk_bytes() + 4096 : a->chunk_bytes() / 2);
    int64_t most = 0;
    for (int i = 0; i < 40; ++i) {
      const std::vector<Index> block = {0, static_cast<Index>(rng() % 2)};
      const Box box = a->grid().BlockBox(block);
      Box part(Shape(2), Shape(2));
      for (int d = 0; d < 2; ++d) {
        part.shape[d] = 1 + static_cast<Index>(rng() % max_part[d]);
        part.origin[d] = box.origin[d] + static_cast<Index>(rng() % (box.shape[d] - part.shape[d] + 1));
      }
      NDArray got = *NDArray::Allocate(*MemoryPool::Default(), DTypeId::kFloat64, part.shape);
      std::shared_ptr<MemoryPool> pool = MemoryPool::Default()->NewChild({"part"});
      ASSERT_TRUE(a->ReadChunkPart(block, part, got.view(), *pool).ok()) << part.ToString();
      most = std::max(most, pool->peak_bytes());
      NDArray want = *NDArray::Allocate(*MemoryPool::Default(), DTypeId::kFloat64, part.shape);
      FillSynthetic(want.view(), part, shape, 7);
      ASSERT_TRUE(ArraysEqual(got.view(), want.view())) << part.ToString();
    }
    EXPECT_GT(most, 0);
    EXPECT_LE(most, *projected);
  }
  // Through the whole chunk: a codec that decodes no runs; a part as large
  // as a chunk under 8 MiB (one request); a part of 65536 runs or more.
  const Encoding z{"zstd", {ZstdSpec{3, false}}};
  EXPECT_EQ(Write(std::make_shared<MemoryStore>(), Meta(z, DTypeId::kFloat64, shape, chunks), 1)
                ->PartReadScratch(max_part),
            std::nullopt);
  auto raw = Write(std::make_shared<MemoryStore>(),
                   Meta(Encoding{"raw", {}}, DTypeId::kFloat64, shape, chunks), 1);
  EXPECT_EQ(raw->PartReadScratch(chunks), std::nullopt);
  EXPECT_NE(raw->PartReadScratch({300, 999}), std::nullopt);
  auto tall = Write(std::make_shared<MemoryStore>(),
                    Meta(Encoding{"raw", {}}, DTypeId::kUInt8, {70000, 4}, {70000, 2}), 1);
  EXPECT_EQ(tall->PartReadScratch({70000, 1}), std::nullopt);
  EXPECT_NE(tall->PartReadScratch({60000, 1}), std::nullopt);
}

TEST(PartialReadTest, TheUnitIsTheBloscBlockOrNoneWhereChunksDecodeWhole) {
  MemoryPool& pool = *MemoryPool::Default();
  (void)pool;
  auto raw = Write(std::make_shared<MemoryStore>(),
                   Meta(Encoding{"raw", {}}, DTypeId::kInt16, {10, 10}, {5, 5}), 1);
  EXPECT_EQ(raw->PartialReadUnit(), std::optional<int64_t>(1));
  const Encoding z{"zstd", {ZstdSpec{3, false}}};
  auto zstd = Write(std::make_shared<MemoryStore>(), Meta(z, DTypeId::kInt16, {10, 10}, {5, 5}), 1);
  EXPECT_EQ(zstd->PartialReadUnit(), std::nullopt);
  // No chunk stored among the first ones: nothing to tell the unit by.
  const Encoding b{"blosc", {BloscSpec{"lz4", 5, 1, 0, 0}}};
  ArrayMetadata m = Meta(b, DTypeId::kFloat64, {10, 10}, {5, 5});
  auto store = std::make_shared<MemoryStore>();
  ZarrArray::CreateOptions options;
  auto empty = *ZarrArray::Create(store, "e", m, options);
  ASSERT_TRUE(empty->Commit().ok());
  EXPECT_EQ((*ZarrArray::Open(store, "e"))->PartialReadUnit(), std::nullopt);
}

}  // namespace
}  // namespace strata
