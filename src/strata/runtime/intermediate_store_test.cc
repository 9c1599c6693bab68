// The IntermediateStore conformance suite over the memory, spill, disk,
// shared-memory and object tiers (the mpi tier runs it in api/mpi_test.cc),
// and PreadRegion: slices of a raw block in a file, read straight into
// strided destinations, must equal the same slices copied in memory, whatever
// the shapes, the block's offset in the file and the layout of the
// destination.
#include "strata/runtime/intermediate_store.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <random>
#include <string>

#include "strata/base/temp_dir.h"
#include "strata/core/synthetic.h"
#include "strata/runtime/intermediate_store_test_util.h"
#include "strata/plan/rechunk_plan.h"
#include "strata/runtime/object_tier.h"
#include "strata/runtime/shm_store.h"
#include "strata/storage/memory_store.h"
#include "strata/storage/store.h"

namespace strata {
namespace {

using testing_util::IntermediateStoreConformance;
using testing_util::TierUnderTest;

std::shared_ptr<MemoryPool> TierPool() { return MemoryPool::Default()->NewChild({"tier", 0}); }

TierUnderTest MemoryTier() {
  TierUnderTest t;
  t.name = "memory";
  t.make = [](const std::string& dir, const ChunkGrid&, DType dtype)
      -> Result<std::unique_ptr<IntermediateStore>> {
    return std::unique_ptr<IntermediateStore>(std::make_unique<MemoryIntermediateStore>(
        "memory", dtype, TierPool(), std::make_shared<RamBudget>(int64_t{1} << 30),
        dir + "/spill"));
  };
  return t;
}

// RAM for two 48-byte blocks: the others spill, block by block.
TierUnderTest SpillTier() {
  TierUnderTest t = MemoryTier();
  t.name = "spill";
  t.make = [](const std::string& dir, const ChunkGrid&, DType dtype)
      -> Result<std::unique_ptr<IntermediateStore>> {
    return std::unique_ptr<IntermediateStore>(std::make_unique<MemoryIntermediateStore>(
        "spill", dtype, TierPool(), std::make_shared<RamBudget>(100), dir + "/spill"));
  };
  t.spills = true;
  return t;
}

// Stored chunks finer than the blocks, of irregular sizes (as a multistage
// rechunk stage stores them): chunks of 2 x 1 split to fit the blocks.
std::optional<ChunkGrid> Split(const ChunkGrid& grid, bool split) {
  if (!split || grid.rank() == 0) return std::nullopt;
  Shape finer(grid.rank(), 1);
  finer[0] = 2;
  return SplitGrid(grid.shape(), grid.chunk_shape(), finer);
}

TierUnderTest DiskTier(bool split = false) {
  TierUnderTest t;
  t.name = split ? "disk_stored_chunks" : "disk";
  t.make = [split](const std::string& dir, const ChunkGrid& grid, DType dtype)
      -> Result<std::unique_ptr<IntermediateStore>> {
    STRATA_ASSIGN_OR_RETURN(
        auto store, DiskIntermediateStore::Create(dir + "/int", grid, dtype, Split(grid, split)));
    return std::unique_ptr<IntermediateStore>(std::move(store));
  };
  t.counts_resident = false;
  t.writes_everything = true;
  return t;
}

// One ShmStore per test, as the processes executor keeps one per compute.
class ShmTierHolder : public testing_util::ForwardingStore {
 public:
  static Result<std::unique_ptr<IntermediateStore>> Make(const std::string& dir,
                                                         const ChunkGrid& grid, DType dtype) {
    ShmStoreOptions options;
    options.name = "conformance";
    options.capacity = int64_t{1} << 20;
    options.spill_dir = dir;
    STRATA_ASSIGN_OR_RETURN(std::unique_ptr<ShmStore> shm, ShmStore::Create(options));
    auto holder = std::unique_ptr<ShmTierHolder>(new ShmTierHolder());
    holder->shm_ = std::move(shm);
    holder->tier_ = std::make_unique<ShmIntermediateStore>("shm", 7, grid, dtype,
                                                           holder->shm_.get(), dir + "/fallback");
    holder->target_ = holder->tier_.get();
    return std::unique_ptr<IntermediateStore>(std::move(holder));
  }

 private:
  ShmTierHolder() = default;
  std::unique_ptr<ShmStore> shm_;
  std::unique_ptr<ShmIntermediateStore> tier_;  // destroyed before shm_
};

TierUnderTest ShmTier() {
  TierUnderTest t;
  t.name = "shm";
  t.make = &ShmTierHolder::Make;
  t.counts_resident = false;  // the whole ShmStore's usage, in pages
  return t;
}

// Objects in a MemoryStore (the S3Store suite covers S3 itself).
TierUnderTest ObjectTier(bool split = false) {
  auto store = std::make_shared<std::shared_ptr<Store>>();
  TierUnderTest t;
  t.name = split ? "object_stored_chunks" : "object";
  t.make = [store, split](const std::string&, const ChunkGrid& grid, DType dtype)
      -> Result<std::unique_ptr<IntermediateStore>> {
    *store = std::make_shared<MemoryStore>();
    return std::unique_ptr<IntermediateStore>(std::make_unique<ObjectIntermediateStore>(
        *store, "run/array-001", grid, dtype, Split(grid, split)));
  };
  t.counts_resident = false;
  t.writes_everything = true;
  t.leftovers = [store]() -> int64_t {
    Result<std::vector<std::string>> keys = (*store)->List("");
    return keys.ok() ? static_cast<int64_t>(keys->size()) : -1;
  };
  return t;
}

INSTANTIATE_TEST_SUITE_P(Tiers, IntermediateStoreConformance,
                         ::testing::Values(MemoryTier(), SpillTier(), DiskTier(),
                                           DiskTier(/*split=*/true), ShmTier(), ObjectTier(),
                                           ObjectTier(/*split=*/true)),
                         testing_util::TierName);

// The object tier stages in the pool it is given (the calling task's, so
// that the task's measured memory counts it), one object at a time: a block
// of (8, 6) kept as stored chunks of (2, 6) is put through one 96-byte
// buffer at a time, a block kept as one object without one; a region read
// stages one GET's byte range at a time.
TEST(ObjectTierTest, StagesOneObjectAtATimeInTheCallersPool) {
  auto store = std::make_shared<MemoryStore>();
  const ChunkGrid grid = *ChunkGrid::Regular({16, 6}, {8, 6});
  ObjectIntermediateStore split(store, "run/split", grid, DTypeId::kFloat64,
                                *ChunkGrid::Regular({16, 6}, {2, 6}));
  ObjectIntermediateStore whole(store, "run/whole", grid, DTypeId::kFloat64);
  auto pool = MemoryPool::Default()->NewChild({"task", 0});
  const Shape shape = {8, 6};
  NDArray block = *NDArray::Allocate(*pool, DTypeId::kFloat64, shape);
  FillSynthetic(block.view(), Box::FromShape(shape), shape, 5);
  const std::vector<Index> b = {1, 0};
  auto staged = [&](auto&& call) {
    auto staging = pool->NewChild({"staging", 0});
    EXPECT_TRUE(call(*staging).ok());
    EXPECT_EQ(staging->bytes_in_use(), 0);
    return staging->peak_bytes();
  };
  EXPECT_EQ(staged([&](MemoryPool& p) {
              return split.Put(b, *NDArray::CopyOf(*pool, block.view()), p);
            }),
            96);
  EXPECT_EQ(staged([&](MemoryPool& p) {
              return whole.Put(b, *NDArray::CopyOf(*pool, block.view()), p);
            }),
            0);
  // Rows 1..6, columns 2..4: four stored chunks, one GET each.
  const Box region({1, 2}, {6, 3});
  for (ObjectIntermediateStore* tier : {&split, &whole}) {
    NDArray part = *NDArray::Allocate(*pool, DTypeId::kFloat64, region.shape);
    const int64_t most =
        staged([&](MemoryPool& p) { return tier->GetRegion(b, region, part.view(), p); });
    // From the region's first element to its last, in one stored chunk or
    // across the block.
    EXPECT_EQ(most, tier == &split ? (6 + 3) * 8 : (5 * 6 + 3) * 8);
    NDArray want = *NDArray::CopyOf(*pool, block.view().Slice(region));
    EXPECT_EQ(std::memcmp(part.data(), want.data(), want.nbytes()), 0);
  }
}

// A file holding `junk` bytes and then the raw C-order bytes of `block`.
std::string WriteBlockFile(const std::string& path, const NDArray& block, int64_t junk) {
  std::string bytes(static_cast<size_t>(junk), '\x5a');
  bytes.append(reinterpret_cast<const char*>(block.data()), static_cast<size_t>(block.nbytes()));
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  EXPECT_GE(fd, 0);
  EXPECT_EQ(::write(fd, bytes.data(), bytes.size()), static_cast<ssize_t>(bytes.size()));
  ::close(fd);
  return path;
}

TEST(PreadRegionTest, RandomRegionsIntoStridedDestinationsMatchACopy) {
  TempDir dir;
  auto pool = MemoryPool::Default()->NewChild({"test", 0});
  std::mt19937 rng(11);
  for (int trial = 0; trial < 60; ++trial) {
    const int rank = 1 + static_cast<int>(rng() % 3);
    Shape layout(rank);
    for (Index& n : layout) n = 1 + static_cast<Index>(rng() % 9);
    NDArray block = *NDArray::Allocate(*pool, DTypeId::kInt32, layout);
    FillSynthetic(block.view(), Box::FromShape(layout), layout, trial);
    const int64_t offset = static_cast<int64_t>(rng() % 3) * 4093;
    const std::string path =
        WriteBlockFile(dir.path() + "/block" + std::to_string(trial), block, offset);
    // A region of the block, read into the middle of a larger array (so the
    // destination is strided on every axis whose size differs).
    Box region{Shape(rank), Shape(rank)};
    Shape outer(rank);
    Box place{Shape(rank), Shape(rank)};
    for (int i = 0; i < rank; ++i) {
      region.origin[i] = static_cast<Index>(rng() % layout[i]);
      region.shape[i] = 1 + static_cast<Index>(rng() % (layout[i] - region.origin[i]));
      const Index pad = static_cast<Index>(rng() % 3);
      outer[i] = region.shape[i] + pad;
      place.origin[i] = pad > 0 ? static_cast<Index>(rng() % (pad + 1)) : 0;
      place.shape[i] = region.shape[i];
    }
    NDArray got = *NDArray::Zeros(*pool, DTypeId::kInt32, outer);
    NDArray want = *NDArray::Zeros(*pool, DTypeId::kInt32, outer);
    int fd = ::open(path.c_str(), O_RDONLY);
    ASSERT_GE(fd, 0);
    Status s = PreadRegion(fd, offset, layout, region, got.view().Slice(place), path);
    ::close(fd);
    ASSERT_TRUE(s.ok()) << s.ToString();
    CopyArray(block.view().Slice(region), want.view().Slice(place));
    EXPECT_TRUE(ArraysEqual(got.view(), want.view()))
        << "trial " << trial << ": layout " << ShapeToString(layout) << ", region "
        << ShapeToString(region.origin) << " + " << ShapeToString(region.shape) << " into "
        << ShapeToString(outer);
  }
}

// Thousands of rows that follow each other in the file but not in the
// destination: more than one preadv's worth of pieces.
TEST(PreadRegionTest, ManyRowsBeyondOneBatch) {
  TempDir dir;
  auto pool = MemoryPool::Default()->NewChild({"test", 0});
  const Shape layout{3000, 4};
  NDArray block = *NDArray::Allocate(*pool, DTypeId::kFloat64, layout);
  FillSynthetic(block.view(), Box::FromShape(layout), layout, 5);
  const std::string path = WriteBlockFile(dir.path() + "/rows", block, 0);
  NDArray got = *NDArray::Zeros(*pool, DTypeId::kFloat64, {3000, 9});
  const Box place({0, 3}, {3000, 4});
  int fd = ::open(path.c_str(), O_RDONLY);
  ASSERT_GE(fd, 0);
  Status s = PreadRegion(fd, 0, layout, Box::FromShape(layout), got.view().Slice(place), path);
  ::close(fd);
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_TRUE(ArraysEqual(got.view().Slice(place), block.view()));
}

// Strided views written to a file are their C-order bytes, whatever their
// strides (runs gathered by writev, batches past IOV_MAX included).
TEST(WriteViewToFileTest, StridedViewsRoundTrip) {
  TempDir dir;
  auto pool = MemoryPool::Default()->NewChild({"test", 0});
  std::mt19937 rng(3);
  for (int trial = 0; trial < 40; ++trial) {
    const int rank = 1 + static_cast<int>(rng() % 3);
    Shape outer(rank);
    for (Index& n : outer) n = 1 + static_cast<Index>(rng() % 9);
    if (trial == 0) outer = {3000, 3};  // more rows than one writev takes
    NDArray whole = *NDArray::Allocate(*pool, DTypeId::kInt16, outer);
    FillSynthetic(whole.view(), Box::FromShape(outer), outer, trial);
    Box part{Shape(rank), Shape(rank)};
    for (int i = 0; i < rank; ++i) {
      part.origin[i] = static_cast<Index>(rng() % outer[i]);
      part.shape[i] = 1 + static_cast<Index>(rng() % (outer[i] - part.origin[i]));
    }
    if (trial == 0) part = Box({0, 1}, {3000, 1});
    const std::string path = dir.path() + "/view" + std::to_string(trial);
    ASSERT_TRUE(WriteViewToFile(path, whole.view().Slice(part)).ok());
    NDArray back = *NDArray::Zeros(*pool, DTypeId::kInt16, part.shape);
    ASSERT_TRUE(ReadRegionFromFile(path, part.shape, Box::FromShape(part.shape), back.view()).ok());
    EXPECT_TRUE(ArraysEqual(back.view(), whole.view().Slice(part))) << "trial " << trial;
  }
}

TEST(PreadRegionTest, ShortFileIsDataLossNamingIt) {
  TempDir dir;
  auto pool = MemoryPool::Default()->NewChild({"test", 0});
  NDArray block = *NDArray::Zeros(*pool, DTypeId::kFloat64, {4, 4});
  const std::string path = WriteBlockFile(dir.path() + "/short", block, 0);
  ASSERT_EQ(::truncate(path.c_str(), 50), 0);
  NDArray got = *NDArray::Zeros(*pool, DTypeId::kFloat64, {4, 4});
  int fd = ::open(path.c_str(), O_RDONLY);
  ASSERT_GE(fd, 0);
  Status s = PreadRegion(fd, 0, {4, 4}, Box::FromShape({4, 4}), got.view(), path);
  ::close(fd);
  EXPECT_EQ(s.code(), StatusCode::kDataLoss);
  EXPECT_NE(s.ToString().find(path), std::string::npos) << s.ToString();
}

}  // namespace
}  // namespace strata
