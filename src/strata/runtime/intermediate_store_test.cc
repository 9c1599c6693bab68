// PreadRegion: slices of a raw block in a file, read straight into strided
// destinations, must equal the same slices copied in memory, whatever the
// shapes, the block's offset in the file and the layout of the destination.
#include "strata/runtime/intermediate_store.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <random>
#include <string>

#include "strata/base/temp_dir.h"
#include "strata/core/synthetic.h"

namespace strata {
namespace {

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
