#include "strata/runtime/intermediate_store_test_util.h"

#include <filesystem>
#include <random>

#include "strata/base/temp_dir.h"
#include "strata/core/synthetic.h"

namespace strata::testing_util {
namespace {

// A ragged grid of rank 2 and its data (value = f(flat index)).
struct Fixture {
  Shape shape{7, 5};
  ChunkGrid grid = *ChunkGrid::Regular({7, 5}, {3, 2});
  DType dtype = DTypeId::kFloat64;
  std::shared_ptr<MemoryPool> pool = MemoryPool::Default()->NewChild({"conformance", 0});
  NDArray whole;
  TempDir dir{"strata-tier-conformance"};

  Fixture() {
    whole = *NDArray::Allocate(*pool, dtype, shape);
    FillSynthetic(whole.view(), Box::FromShape(shape), shape, 17);
  }
  Shape Block(Index linear) const {
    Shape b(grid.rank());
    UnravelIndex(linear, grid.grid_shape(), b);
    return b;
  }
  ConstArrayView Expected(const Shape& block) const {
    return whole.view().Slice(grid.BlockBox(block));
  }
};

bool PutsHere(const TierUnderTest& t, Index linear) { return !t.puts_here || t.puts_here(linear); }
void Sync(const TierUnderTest& t) {
  if (t.sync) t.sync();
}

int64_t FilesUnder(const std::string& dir) {
  int64_t n = 0;
  std::error_code ec;
  if (!std::filesystem::exists(dir, ec)) return 0;
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir)) {
    if (e.is_regular_file()) ++n;
  }
  return n;
}

// Puts every block this process puts: even blocks through NewBlock (computed
// in place, as tasks do), odd ones as arrays from `pool`.
void PutAll(const TierUnderTest& t, Fixture& f, IntermediateStore& store) {
  for (Index b = 0; b < f.grid.num_blocks(); ++b) {
    if (!PutsHere(t, b)) continue;
    const Shape block = f.Block(b);
    const Shape block_shape = f.grid.BlockShape(block);
    Result<NDArray> a = b % 2 == 0 ? store.NewBlock(block, f.dtype, block_shape, *f.pool)
                                   : NDArray::Allocate(*f.pool, f.dtype, block_shape);
    ASSERT_TRUE(a.ok()) << a.status().ToString();
    CopyArray(f.Expected(block), a->view());
    Status s = store.Put(block, std::move(a).value(), *f.pool);
    ASSERT_TRUE(s.ok()) << "block " << ShapeToString(block) << ": " << s.ToString();
  }
}

TEST_P(IntermediateStoreConformance, EveryWayOfReadingGivesWhatWasPut) {
  const TierUnderTest& t = GetParam();
  Fixture f;
  auto store = t.make(f.dir.path(), f.grid, f.dtype);
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  PutAll(t, f, **store);
  Sync(t);
  std::mt19937 rng(5);
  for (Index b = 0; b < f.grid.num_blocks(); ++b) {
    const Shape block = f.Block(b);
    SCOPED_TRACE("block " + ShapeToString(block));
    Result<std::shared_ptr<const NDArray>> got = (*store)->Get(block, *f.pool);
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    EXPECT_TRUE(ArraysEqual((*got)->view(), f.Expected(block)));
    Result<BlockView> view = (*store)->View(block, *f.pool);
    ASSERT_TRUE(view.ok()) << view.status().ToString();
    EXPECT_TRUE(ArraysEqual(view->view, f.Expected(block)));
    // A random region into the middle of a larger (strided) destination.
    const Shape bs = f.grid.BlockShape(block);
    Box region{Shape(2), Shape(2)};
    for (int i = 0; i < 2; ++i) {
      region.origin[i] = static_cast<Index>(rng() % bs[i]);
      region.shape[i] = 1 + static_cast<Index>(rng() % (bs[i] - region.origin[i]));
    }
    NDArray out = *NDArray::Zeros(*f.pool, f.dtype, {region.shape[0] + 2, region.shape[1] + 3});
    const Box place({1, 2}, region.shape);
    Status s = (*store)->GetRegion(block, region, out.view().Slice(place), *f.pool);
    ASSERT_TRUE(s.ok()) << s.ToString();
    EXPECT_TRUE(ArraysEqual(out.view().Slice(place), f.Expected(block).Slice(region)));
  }
  // Every block's middle column in one batch, side by side.
  NDArray batch = *NDArray::Zeros(*f.pool, f.dtype, {f.grid.num_blocks() * 3, 1});
  std::vector<IntermediateStore::RegionRead> reads;
  for (Index b = 0; b < f.grid.num_blocks(); ++b) {
    const Shape block = f.Block(b);
    const Shape bs = f.grid.BlockShape(block);
    reads.push_back({block, Box({0, bs[1] / 2}, {bs[0], 1}),
                     batch.view().Slice(Box({3 * b, 0}, {bs[0], 1}))});
  }
  Status s = (*store)->GetRegions(reads, *f.pool);
  ASSERT_TRUE(s.ok()) << s.ToString();
  for (const auto& r : reads) {
    EXPECT_TRUE(ArraysEqual(r.out, f.Expected(r.block).Slice(r.region)))
        << "batched block " << ShapeToString(r.block);
  }
  Sync(t);
  EXPECT_TRUE((*store)->Cleanup().ok());
  Sync(t);
}

// Publish-once: a second Put of a block (a retry after an attempt that
// published and died, or the other attempt of a task with a backup) leaves
// the first copy as it was, and counts nothing twice. (Here the second copy
// differs, to tell them apart; two attempts of a task write the same bytes.)
TEST_P(IntermediateStoreConformance, SecondPutOfABlockKeepsTheFirst) {
  const TierUnderTest& t = GetParam();
  Fixture f;
  auto store = t.make(f.dir.path(), f.grid, f.dtype);
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  const Shape block = f.Block(1);
  const Shape bs = f.grid.BlockShape(block);
  int64_t resident = 0, written = 0;
  if (PutsHere(t, 1)) {
    NDArray first = *NDArray::CopyOf(*f.pool, f.Expected(block));
    ASSERT_TRUE((*store)->Put(block, std::move(first), *f.pool).ok());
    resident = (*store)->resident_bytes();
    written = (*store)->bytes_written();
    NDArray second = *NDArray::Zeros(*f.pool, f.dtype, bs);
    ASSERT_TRUE((*store)->Put(block, std::move(second), *f.pool).ok());
    EXPECT_EQ((*store)->resident_bytes(), resident);
    EXPECT_EQ((*store)->bytes_written(), written);
  }
  Sync(t);
  Result<std::shared_ptr<const NDArray>> got = (*store)->Get(block, *f.pool);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_TRUE(ArraysEqual((*got)->view(), f.Expected(block)));
  Sync(t);
  EXPECT_TRUE((*store)->Cleanup().ok());
  Sync(t);
}

// Two attempts of one task interleaved as a backup and its straggler can
// be: both take a buffer for the block (the first may be the tier's own, to
// compute in place), the second publishes first, then the first. Readers see
// the block throughout; it is held and counted once, and one Erase removes
// every copy.
TEST_P(IntermediateStoreConformance, InterleavedAttemptsPublishOnce) {
  const TierUnderTest& t = GetParam();
  Fixture f;
  auto store = t.make(f.dir.path(), f.grid, f.dtype);
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  const Shape block = f.Block(2);
  const Shape bs = f.grid.BlockShape(block);
  if (PutsHere(t, 2)) {
    Result<NDArray> straggler = (*store)->NewBlock(block, f.dtype, bs, *f.pool);
    ASSERT_TRUE(straggler.ok()) << straggler.status().ToString();
    Result<NDArray> backup = (*store)->NewBlock(block, f.dtype, bs, *f.pool);
    ASSERT_TRUE(backup.ok()) << backup.status().ToString();
    EXPECT_NE(straggler->data(), backup->data());
    CopyArray(f.Expected(block), backup->view());
    ASSERT_TRUE((*store)->Put(block, *std::move(backup), *f.pool).ok());
    Result<std::shared_ptr<const NDArray>> early = (*store)->Get(block, *f.pool);
    ASSERT_TRUE(early.ok()) << early.status().ToString();
    EXPECT_TRUE(ArraysEqual((*early)->view(), f.Expected(block)));
    CopyArray(f.Expected(block), straggler->view());
    ASSERT_TRUE((*store)->Put(block, *std::move(straggler), *f.pool).ok());
    if (t.counts_resident) {
      EXPECT_EQ((*store)->resident_bytes(), NumElements(bs) * 8);
    }
  }
  Sync(t);
  {
    Result<std::shared_ptr<const NDArray>> got = (*store)->Get(block, *f.pool);
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    EXPECT_TRUE(ArraysEqual((*got)->view(), f.Expected(block)));
  }
  Sync(t);
  if (PutsHere(t, 2)) {
    EXPECT_TRUE((*store)->Erase(block).ok());
    if (t.counts_resident) {
      EXPECT_EQ((*store)->resident_bytes(), 0);
    }
  }
  Sync(t);
  if (!t.leftovers) {
    EXPECT_EQ(FilesUnder(f.dir.path() + "/int") + FilesUnder(f.dir.path() + "/fallback") +
                  FilesUnder(f.dir.path() + "/spill"),
              0)
        << "a copy survived the erase";
  }
  EXPECT_TRUE((*store)->Cleanup().ok());
  Sync(t);
}

TEST_P(IntermediateStoreConformance, EraseFreesAndCleanupLeavesNothing) {
  const TierUnderTest& t = GetParam();
  Fixture f;
  auto store = t.make(f.dir.path(), f.grid, f.dtype);
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  PutAll(t, f, **store);
  Sync(t);
  int64_t put_bytes = 0;
  for (Index b = 0; b < f.grid.num_blocks(); ++b) {
    if (PutsHere(t, b)) put_bytes += NumElements(f.grid.BlockShape(f.Block(b))) * 8;
  }
  const int64_t resident = (*store)->resident_bytes();
  if (t.counts_resident && !t.spills) {
    EXPECT_EQ(resident, put_bytes);
  }
  if (t.writes_everything) {
    EXPECT_GE((*store)->bytes_written(), put_bytes);
  }
  if (t.spills) {
    EXPECT_GT((*store)->bytes_written(), 0);
  }
  if (!t.writes_everything && !t.spills) {
    EXPECT_EQ((*store)->bytes_written(), 0);
  }
  // Erase the even blocks (each by one process: its putter); the odd ones
  // still read right.
  for (Index b = 0; b < f.grid.num_blocks(); b += 2) {
    if (!PutsHere(t, b)) continue;
    Status s = (*store)->Erase(f.Block(b));
    EXPECT_TRUE(s.ok()) << s.ToString();
  }
  Sync(t);
  if (t.counts_resident) {
    EXPECT_LT((*store)->resident_bytes(), std::max<int64_t>(resident, 1));
  }
  for (Index b = 1; b < f.grid.num_blocks(); b += 2) {
    const Shape block = f.Block(b);
    NDArray out = *NDArray::Zeros(*f.pool, f.dtype, f.grid.BlockShape(block));
    Status s = (*store)->GetRegion(block, Box::FromShape(out.shape()), out.view(), *f.pool);
    ASSERT_TRUE(s.ok()) << s.ToString();
    EXPECT_TRUE(ArraysEqual(out.view(), f.Expected(block)));
  }
  // Erasing twice (a retried bookkeeping step) is harmless.
  if (PutsHere(t, 0)) {
    EXPECT_TRUE((*store)->Erase(f.Block(0)).ok());
  }
  Sync(t);
  EXPECT_TRUE((*store)->Cleanup().ok());
  Sync(t);
  if (t.counts_resident) {
    EXPECT_EQ((*store)->resident_bytes(), 0);
  }
  store->reset();
  EXPECT_EQ(t.leftovers ? t.leftovers() : FilesUnder(f.dir.path()), 0) << "left behind";
}

TEST_P(IntermediateStoreConformance, RankZeroBlock) {
  const TierUnderTest& t = GetParam();
  TempDir dir("strata-tier-conformance");
  auto pool = MemoryPool::Default()->NewChild({"conformance", 0});
  const ChunkGrid grid = *ChunkGrid::Regular({}, {});
  auto store = t.make(dir.path(), grid, DTypeId::kInt32);
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  if (PutsHere(t, 0)) {
    NDArray a = *NDArray::Allocate(*pool, DTypeId::kInt32, {});
    *a.data_as<int32_t>() = 42;
    ASSERT_TRUE((*store)->Put({}, std::move(a), *pool).ok());
  }
  Sync(t);
  Result<std::shared_ptr<const NDArray>> got = (*store)->Get({}, *pool);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(*(*got)->data_as<int32_t>(), 42);
  Sync(t);
  EXPECT_TRUE((*store)->Cleanup().ok());
  Sync(t);
}

}  // namespace
}  // namespace strata::testing_util
