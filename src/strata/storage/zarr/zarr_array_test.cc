// ZarrArray against bad or changing storage: metadata of the wrong JSON type,
// overwrite that replaces only its own node, chunks of the fill value, and a
// source rewritten while it is read; large blosc chunks written piece by
// piece into a local file.
#include "strata/storage/local_store.h"
#include "strata/storage/memory_store.h"
#include "strata/storage/zarr/zarr_array.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <utility>

#include <unistd.h>

#include "strata/base/process_info.h"
#include "strata/base/temp_dir.h"
#include "strata/core/synthetic.h"

namespace strata {
namespace {

ArrayMetadata Meta(ZarrFormat format = ZarrFormat::kV2, Shape shape = {8, 6},
                   Shape chunks = {4, 3}) {
  ArrayMetadata m;
  m.zarr_format = format;
  m.shape = std::move(shape);
  m.chunk_shape = std::move(chunks);
  m.encoding.dtype = DTypeId::kFloat64;
  m.fill_value = MakeFillValue(DTypeId::kFloat64, -1.0);
  if (format == ZarrFormat::kV3) m.chunk_key_encoding = {ChunkKeyEncoding::Kind::kDefault, '/'};
  return m;
}

std::shared_ptr<ZarrArray> CreateFilled(std::shared_ptr<Store> store, const std::string& path,
                                        ArrayMetadata m, uint64_t seed = 1) {
  ZarrArray::CreateOptions options;
  options.overwrite = true;
  auto a = *ZarrArray::Create(store, path, m, options);
  auto pool = MemoryPool::Default();
  const ChunkGrid& grid = a->grid();
  for (Index b = 0; b < grid.num_blocks(); ++b) {
    Shape block(grid.rank());
    UnravelIndex(b, grid.grid_shape(), block);
    Box box = grid.BlockBox(block);
    NDArray chunk = *NDArray::Allocate(*pool, m.dtype(), box.shape);
    FillSynthetic(chunk.view(), box, m.shape, seed);
    EXPECT_TRUE(a->WriteChunk(block, chunk.view(), *pool).ok());
  }
  EXPECT_TRUE(a->Commit().ok());
  return a;
}

TEST(ZarrArrayReliabilityTest, NodeTypeOfTheWrongTypeIsAnError) {
  auto store = std::make_shared<MemoryStore>();
  for (const char* node_type : {"null", "1", "[1]", "{\"a\": 1}"}) {
    ASSERT_TRUE(store
                    ->Set("a/zarr.json",
                          std::string(R"({"zarr_format": 3, "node_type": )") + node_type + "}")
                    .ok());
    Result<NodeInfo> node = InspectNode(*store, "a");
    EXPECT_EQ(node.status().code(), StatusCode::kInvalidArgument) << node_type;
    EXPECT_NE(node.status().message().find("node_type"), std::string_view::npos)
        << node.status().ToString();
    EXPECT_FALSE(ZarrArray::Open(store, "a").ok());
  }
  ASSERT_TRUE(store->Set("b/.strata-incomplete", "[" + std::string(100000, '[')).ok());
  EXPECT_EQ(InspectNode(*store, "b").status().code(), StatusCode::kInvalidArgument);
}

TEST(ZarrArrayReliabilityTest, OverwriteErasesOnlyTheArraysOwnKeys) {
  auto store = std::make_shared<MemoryStore>();
  ASSERT_TRUE(store->Set("g/.zgroup", R"({"zarr_format": 2})").ok());
  CreateFilled(store, "g/x", Meta());
  CreateFilled(store, "g/y", Meta());
  ASSERT_TRUE(store->Set("g/x/notes.txt", "mine").ok());
  ASSERT_TRUE(store->Set("g/xy/0.0", "a sibling's").ok());
  CreateFilled(store, "g/x", Meta(ZarrFormat::kV3, {4}, {2}), 2);
  std::vector<std::string> keys = *store->List("g/");
  std::vector<std::string> want = {"g/.zgroup",     "g/x/c/0",       "g/x/c/1",
                                   "g/x/notes.txt", "g/x/zarr.json", "g/xy/0.0"};
  for (Index i = 0; i < 2; ++i) {
    for (Index j = 0; j < 2; ++j) want.push_back(fmt::format("g/y/{}.{}", i, j));
  }
  want.push_back("g/y/.zarray");
  std::sort(want.begin(), want.end());
  EXPECT_EQ(keys, want);
}

// A worker process killed while it wrote a chunk leaves its temporary file;
// the retry writes the chunk, and Commit removes the dead writer's file
// before the array is finished (Create only removed what earlier runs left).
// A live writer's temporary stays.
TEST(ZarrArrayReliabilityTest, CommitRemovesTheTemporariesOfDeadWriters) {
  TempDir dir("strata-dead-writer");
  std::shared_ptr<Store> store = *LocalStore::Open(dir.path());
  auto a = *ZarrArray::Create(store, "a", Meta(), {});
  MemoryPool& pool = *MemoryPool::Default();
  NDArray chunk = *NDArray::Zeros(pool, DTypeId::kFloat64, {4, 3});
  for (Index i = 0; i < 2; ++i) {
    for (Index j = 0; j < 2; ++j) ASSERT_TRUE(a->WriteChunk(Shape{i, j}, chunk.view(), pool).ok());
  }
  // This process under another start time: a writer with this pid that died.
  const std::string dead = fmt::format(".1.0.strata-tmp-{}-1-7", ::getpid());
  const std::string live =
      fmt::format(".1.1.strata-tmp-{}-{}-8", ::getpid(), ThisProcessStartTime());
  for (const std::string& name : {dead, live}) {
    std::ofstream(dir.path() + "/a/" + name) << "half a chunk";
  }
  ASSERT_TRUE(a->Commit().ok());
  EXPECT_FALSE(std::filesystem::exists(dir.path() + "/a/" + dead));
  EXPECT_TRUE(std::filesystem::exists(dir.path() + "/a/" + live));
  EXPECT_TRUE(ZarrArray::Open(store, "a").ok());
}

// Replacing a group erased every key under it, a photo kept in the group's
// directory too; only its members (arrays and groups, at any depth) and its
// own documents go now, as an array keeps files that are no chunk of it.
TEST(ZarrArrayReliabilityTest, OverwriteOfAGroupErasesOnlyItsMembers) {
  auto store = std::make_shared<MemoryStore>();
  ASSERT_TRUE(store->Set("grp/.zgroup", R"({"zarr_format": 2})").ok());
  ASSERT_TRUE(store->Set("grp/.zattrs", R"({"title": "old"})").ok());
  ASSERT_TRUE(store->Set("grp/.zmetadata", R"({"metadata": {}, "zarr_consolidated_format": 1})")
                  .ok());
  CreateFilled(store, "grp/x", Meta());
  ASSERT_TRUE(store->Set("grp/sub/.zgroup", R"({"zarr_format": 2})").ok());
  CreateFilled(store, "grp/sub/y", Meta(ZarrFormat::kV3, {4}, {2}));
  ASSERT_TRUE(store->Set("grp/photos/cat.jpg", "a cat").ok());
  ASSERT_TRUE(store->Set("grp/sub/readme.txt", "notes").ok());
  ASSERT_TRUE(store->Set("grp/x/notes.txt", "mine").ok());
  ASSERT_TRUE(store->Set("grp/list.txt", "kept").ok());
  // A member whose metadata cannot be read is still a member: its documents
  // and chunk keys go.
  ASSERT_TRUE(store->Set("grp/bad/.zarray", "{").ok());
  ASSERT_TRUE(store->Set("grp/bad/0.0", "chunk").ok());
  NodeInfo group = *InspectNode(*store, "grp");
  ASSERT_EQ(group.kind, NodeInfo::Kind::kGroup);
  ASSERT_TRUE(EraseZarrNode(*store, "grp/", &group).ok());
  EXPECT_EQ(*store->List(""),
            (std::vector<std::string>{"grp/list.txt", "grp/photos/cat.jpg", "grp/sub/readme.txt",
                                      "grp/x/notes.txt"}));
}

// A region whose end passes 2^63 wrapped to a negative end: WriteRegion then
// wrote its values at row 0, or past the chunk buffer. Now it is refused and
// nothing is written.
TEST(ZarrArrayReliabilityTest, ARegionWhoseEndOverflowsIsRefused) {
  auto store = std::make_shared<MemoryStore>();
  auto a = CreateFilled(store, "a", Meta(ZarrFormat::kV2, {400, 300}, {64, 64}));
  MemoryPool& pool = *MemoryPool::Default();
  const std::vector<std::string> before = *store->List("");
  std::vector<std::string> bytes_before;
  for (const std::string& key : before) bytes_before.push_back(*store->GetString(key));
  NDArray patch = *NDArray::Zeros(pool, DTypeId::kFloat64, {50, 70});
  for (const Box& region : {Box({INT64_MAX - 7, 0}, {50, 70}), Box({0, INT64_MAX}, {50, 70})}) {
    SCOPED_TRACE(region.origin[0]);
    Status w = a->WriteRegion(region, patch.view(), pool);
    EXPECT_EQ(w.code(), StatusCode::kInvalidArgument) << w.ToString();
    EXPECT_NE(w.message().find("region of memory://a at "), std::string_view::npos)
        << w.ToString();
    EXPECT_NE(w.message().find("of shape (50, 70) ends past the largest index"),
              std::string_view::npos)
        << w.ToString();
    Status r = a->ReadRegion(region, patch.view(), pool);
    EXPECT_EQ(r.code(), StatusCode::kInvalidArgument) << r.ToString();
  }
  EXPECT_EQ(*store->List(""), before);
  for (size_t i = 0; i < before.size(); ++i) EXPECT_EQ(*store->GetString(before[i]), bytes_before[i]);
}

TEST(ZarrArrayReliabilityTest, FillChunksAreNotStoredAndReadBack) {
  auto store = std::make_shared<MemoryStore>();
  ArrayMetadata m = Meta();
  auto a = *ZarrArray::Create(store, "a", m, {});
  auto pool = MemoryPool::Default();
  NDArray fill = *NDArray::Allocate(*pool, m.dtype(), {4, 3});
  FillArray(fill.view(), m.fill_value.bytes);
  NDArray data = *NDArray::Allocate(*pool, m.dtype(), {4, 3});
  FillSynthetic(data.view(), Box::FromShape({4, 3}), m.shape, 1);
  ASSERT_TRUE(a->WriteChunk(std::vector<Index>{0, 0}, fill.view(), *pool).ok());
  ASSERT_TRUE(a->WriteChunk(std::vector<Index>{1, 1}, data.view(), *pool).ok());
  ASSERT_TRUE(a->Commit().ok());
  EXPECT_FALSE(*store->Exists("a/0.0"));
  EXPECT_TRUE(*store->Exists("a/1.1"));
  auto opened = *ZarrArray::Open(store, "a");
  EXPECT_EQ(opened->CountStoredChunks()->count, 1);
  NDArray back = *NDArray::Allocate(*pool, m.dtype(), {4, 3});
  EXPECT_FALSE(*opened->ReadChunk(std::vector<Index>{0, 0}, back.view(), *pool));
  EXPECT_TRUE(ArraysEqual(back.view(), fill.view()));
  // Rewriting a stored chunk with the fill value removes it.
  ASSERT_TRUE(opened->WriteChunk(std::vector<Index>{1, 1}, fill.view(), *pool).ok());
  EXPECT_FALSE(*store->Exists("a/1.1"));
  // A null fill value (v2) is always written, as zarr-python does.
  ArrayMetadata null_fill = Meta();
  null_fill.fill_value = FillValue{{}, true};
  auto b = *ZarrArray::Create(store, "b", null_fill, {});
  NDArray zeros = *NDArray::Zeros(*pool, m.dtype(), {4, 3});
  ASSERT_TRUE(b->WriteChunk(std::vector<Index>{0, 0}, zeros.view(), *pool).ok());
  EXPECT_TRUE(*store->Exists("b/0.0"));
}

TEST(ZarrArrayReliabilityTest, RewrittenSourceIsNoticed) {
  auto store = std::make_shared<MemoryStore>();
  CreateFilled(store, "a", Meta());
  auto a = *ZarrArray::Open(store, "a");
  EXPECT_TRUE(a->CheckUnchanged().ok());
  auto pool = MemoryPool::Default();
  NDArray out = *NDArray::Allocate(*pool, DTypeId::kFloat64, {4, 3});
  // A rewriter erases the metadata first, then chunks: a missing chunk is
  // then an error, not the fill value.
  ASSERT_TRUE(store->Erase("a/.zarray").ok());
  ASSERT_TRUE(store->Erase("a/0.1").ok());
  Result<bool> r = a->ReadChunk(std::vector<Index>{0, 1}, out.view(), *pool);
  EXPECT_EQ(r.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(r.status().message().find("was removed while this run read it"), std::string_view::npos)
      << r.status().ToString();
  // Replaced by other metadata: CheckUnchanged says so.
  for (const auto& [key, text] : Meta(ZarrFormat::kV2, {8, 6}, {2, 3}).Encode()) {
    ASSERT_TRUE(store->Set("a/" + key, text).ok());
  }
  Status s = a->CheckUnchanged();
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(s.message().find("was replaced"), std::string_view::npos) << s.message();
}

// A MemoryStore on which a rewriter acts when the metadata's version is
// asked for: what happens between Open's read of the metadata and its
// version, or between reads.
class RewrittenStore : public MemoryStore {
 public:
  std::function<void(MemoryStore&)> on_version;

  Result<std::optional<std::string>> Version(std::string_view key) override {
    if (on_version) std::exchange(on_version, nullptr)(*this);
    return MemoryStore::Version(key);
  }
};

// A rewriter erases the metadata, then the chunks. Open read the metadata
// just before it went: the array must not open with no version to check, or
// every chunk would read as the fill value and the run would finish.
TEST(ZarrArrayReliabilityTest, MetadataRemovedWhileOpeningIsNotTakenAsUnchanged) {
  auto store = std::make_shared<RewrittenStore>();
  CreateFilled(store, "a", Meta());
  store->on_version = [](MemoryStore& s) { ASSERT_TRUE(s.ErasePrefix("a/").ok()); };
  Result<std::shared_ptr<ZarrArray>> a = ZarrArray::Open(store, "a");
  EXPECT_TRUE(IsNotFound(a.status())) << a.status().ToString();
  // The rewriter already wrote its marker: the array is incomplete.
  CreateFilled(store, "b", Meta());
  store->on_version = [store](MemoryStore&) {
    ZarrArray::CreateOptions overwrite;
    overwrite.overwrite = true;
    ASSERT_TRUE(ZarrArray::Create(store, "b", Meta(), overwrite).ok());
  };
  EXPECT_EQ(ZarrArray::Open(store, "b").status().code(), StatusCode::kFailedPrecondition);
  // Replaced by other metadata between the read and the version: the array
  // opens as the new one, and the version it checks at the end is the new
  // metadata's.
  CreateFilled(store, "c", Meta());
  store->on_version = [](MemoryStore& s) {
    for (const auto& [key, text] : Meta(ZarrFormat::kV2, {8, 6}, {2, 3}).Encode()) {
      ASSERT_TRUE(s.Set("c/" + key, text).ok());
    }
  };
  Result<std::shared_ptr<ZarrArray>> c = ZarrArray::Open(store, "c");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ((*c)->metadata().chunk_shape, (Shape{2, 3}));
  EXPECT_TRUE((*c)->CheckUnchanged().ok());
}

// Chunks of 16 MiB or more with blosc go to a local file segment by segment
// (BytesCodec::EncodeTo): the stored bytes are those the whole encoding
// stores, they read back, and the writing task holds the chunk and a few
// MiB, not the chunk and its encoding. A codec whose blocks are too large to
// stream is encoded whole, with the same result.
TEST(ZarrArrayStreamedWriteTest, LargeBloscChunksAreWrittenPieceByPiece) {
  TempDir dir("strata-streamed-write");
  std::shared_ptr<Store> store = *LocalStore::Open(dir.path());
  for (int64_t blocksize : {int64_t{0}, int64_t{16} << 20}) {
    SCOPED_TRACE(::testing::Message() << "blosc blocksize " << blocksize);
    // float64 chunks of (1024, 2048): 16 MiB; the second row of chunks is
    // ragged (padded at the edge).
    ArrayMetadata m = Meta(ZarrFormat::kV2, {1100, 2048}, {1024, 2048});
    m.encoding.bytes_codecs = {BloscSpec{.cname = "zstd", .clevel = 1, .blocksize = blocksize}};
    ZarrArray::CreateOptions options;
    options.overwrite = true;
    auto a = *ZarrArray::Create(store, "a", m, options);
    auto pool = MemoryPool::Default();
    for (Index row : {0, 1}) {
      const std::vector<Index> block = {row, 0};
      const Box box = a->grid().BlockBox(block);
      NDArray chunk = *NDArray::Allocate(*pool, m.dtype(), box.shape);
      FillSynthetic(chunk.view(), box, m.shape, 7);
      auto task = pool->NewChild({.name = "task"});
      ASSERT_TRUE(a->WriteChunk(block, chunk.view(), *task).ok());
      const int64_t chunk_bytes = a->chunk_bytes();
      if (blocksize == 0 && row == 0) {
        EXPECT_LT(task->peak_bytes(), int64_t{12} << 20);
      } else if (blocksize == 0) {
        // The padded chunk, and segments.
        EXPECT_LT(task->peak_bytes(), chunk_bytes + (int64_t{12} << 20));
      } else {
        EXPECT_GE(task->peak_bytes(), chunk_bytes / 2);  // encoded whole
      }
      // The bytes the whole encoding stores.
      NDArray full = *NDArray::Allocate(*pool, m.dtype(), m.chunk_shape);
      FillArray(full.view(), m.fill_value.bytes);
      CopyArray(chunk.view(), full.view().Slice(Box::FromShape(box.shape)));
      Buffer whole = *a->codec().Encode(full.view(), *pool);
      Buffer stored = *store->Get(fmt::format("a/{}.0", row), *pool);
      ASSERT_EQ(stored.size(), whole.size());
      EXPECT_EQ(std::memcmp(stored.data(), whole.data(), whole.size()), 0);
      NDArray back = *NDArray::Allocate(*pool, m.dtype(), box.shape);
      ASSERT_TRUE(*a->ReadChunk(block, back.view(), *pool));
      EXPECT_TRUE(ArraysEqual(back.view(), chunk.view()));
    }
    // No temporary file is left behind.
    for (const auto& entry : std::filesystem::directory_iterator(dir.path() + "/a")) {
      EXPECT_EQ(entry.path().filename().string().find(".strata-tmp-"), std::string::npos)
          << entry.path();
    }
  }
}

}  // namespace
}  // namespace strata
