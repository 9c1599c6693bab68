// ZarrArray against bad or changing storage: metadata of the wrong JSON type,
// overwrite that replaces only its own node, chunks of the fill value, and a
// source rewritten while it is read.
#include "strata/storage/zarr/zarr_array.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>

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

}  // namespace
}  // namespace strata
