// to_zarr as datasets in the wild need it: into shards (a task per shard or,
// under threads, per part of one,
// within allowed_mem whatever the shard's size), into a region of an
// existing array and appended along an axis, and resumed after an
// interruption (complete chunks are not written again; the killed run's
// temporary files are removed).
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <fcntl.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "strata/api/api_test_util.h"
#include "strata/base/process_info.h"
#include "strata/base/temp_dir.h"
#include "strata/storage/memory_store.h"
#include "strata/storage/open_store.h"
#include "strata/storage/zarr/zarr_array.h"
#include "strata/strata.h"

namespace strata {
namespace {

using testing_util::RecordingCallback;
using testing_util::SmallSpec;

NDArray ReadBack(const std::string& path) {
  auto at = *OpenStoreUrl(path, false);
  auto a = ZarrArray::Open(at.store, at.prefix);
  EXPECT_TRUE(a.ok()) << a.status().ToString();
  NDArray out = *NDArray::Allocate(*MemoryPool::Default(), (*a)->dtype(), (*a)->shape());
  EXPECT_TRUE((*a)->ReadRegion(Box::FromShape((*a)->shape()), out.view(), *MemoryPool::Default()).ok());
  return out;
}

class ShardedToZarrTest : public testing::TestWithParam<ExecutorKind> {};

TEST_P(ShardedToZarrTest, ShardsFarLargerThanAllowedMemStayWithinIt) {
  TempDir dir("strata-shard-api");
  // 32 MB of float64 in source chunks of (4096, 128); shards of (4096, 1024)
  // (32 MB each) of inner chunks (256, 256) (512 KB); allowed_mem 12 MB (a
  // source chunk costs ~9.4 MB to read).
  Spec spec = SmallSpec(GetParam());
  spec.allowed_mem = "12MB";
  const Shape shape = {4096, 1024};
  Array src = random::random(shape, {4096, 128}, 3, SmallSpec());
  Status written = compute(to_zarr(src, dir.path() + "/src.zarr")).status();
  ASSERT_TRUE(written.ok()) << written.ToString();
  Array x = from_zarr(dir.path() + "/src.zarr", spec).rechunk({256, 256});
  ToZarrOptions to;
  to.zarr_format = ZarrFormat::kV3;
  to.shards = Shape{4096, 1024};
  Array out = to_zarr(x, dir.path() + "/sharded.zarr", to);
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  auto p = plan({out});
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  // One exchange from the source straight into shards. Under threads the one
  // shard is split into parts (16 tasks of (256, 1024): a quarter of the task
  // budget at most); other executors write it in one task.
  const bool parts = GetParam() == ExecutorKind::kThreads;
  for (const PlannedOp& op : (*p)->ops()) {
    if (op.node->kind == NodeKind::kStore) {
      EXPECT_EQ(op.num_tasks(), parts ? 16 : 1);
      EXPECT_EQ(op.node->grid.chunk_shape(), parts ? (Shape{256, 1024}) : (Shape{4096, 1024}));
    }
  }
  bool decided = false;
  for (const std::string& d : (*p)->decisions()) decided |= d.find("split into parts") != std::string::npos;
  EXPECT_EQ(decided, parts);
  auto recorder = std::make_shared<RecordingCallback>();
  ComputeOptions options;
  options.callbacks.push_back(recorder);
  ASSERT_TRUE(Execute(**p, options).ok());
  recorder->ExpectWithinBudget();
  NDArray expected = *compute(random::random(shape, {4096, 1024}, 3, SmallSpec()));
  EXPECT_TRUE(ArraysEqual(ReadBack(dir.path() + "/sharded.zarr").view(), expected.view()));
  auto at = *OpenStoreUrl(dir.path() + "/sharded.zarr", false);
  auto a = *ZarrArray::Open(at.store, at.prefix);
  EXPECT_TRUE(a->is_sharded());
  EXPECT_EQ(a->read_grid().chunk_shape(), (Shape{256, 256}));
  EXPECT_EQ(a->CountStoredChunks()->count, 1);
  // Nothing but the array's keys: no temporary of a part's writer is left.
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir.path() + "/sharded.zarr")) {
    EXPECT_EQ(e.path().filename().string().find("strata-tmp"), std::string::npos) << e.path();
  }
}

TEST_P(ShardedToZarrTest, PartsOfEdgeShardsFillOnlyInnerChunksAndRetries) {
  TempDir dir("strata-shard-parts");
  // Shards (400, 400) over (1000, 700): edge shards clipped to 200 rows and
  // 300 columns; inner chunks (100, 100); rows [300, 600) all zero (the fill
  // value), so some inner chunks are not stored and a whole part is empty.
  Spec spec = SmallSpec(GetParam());
  spec.allowed_mem = "4MB";
  spec.reserved_mem = "512KB";
  const Shape shape = {1000, 700};
  NDArray values = *compute(random::random(shape, {1000, 70}, 9, SmallSpec()));
  auto* v = reinterpret_cast<double*>(values.view().data());
  for (Index i = 300; i < 600; ++i) std::fill(v + i * 700, v + (i + 1) * 700, 0.0);
  Array x = asarray(testing_util::Copy(values), {1000, 70}, spec).rechunk({100, 100});
  ToZarrOptions to;
  to.zarr_format = ZarrFormat::kV3;
  to.shards = Shape{400, 400};
  Array out = to_zarr(x, dir.path() + "/sharded.zarr", to);
  auto rec = std::make_shared<RecordingCallback>();
  ComputeOptions options;
  options.callbacks.push_back(rec);
  // The first attempt of every other store task fails: a retried part is
  // added once.
  options.fault_injector = [](const PlannedOp& op, std::span<const Index> block, int attempt) {
    if (op.node->kind == NodeKind::kStore && attempt == 1 && block[0] % 2 == 0) {
      return UnavailableError("flaky disk");
    }
    return Status::Ok();
  };
  Status s = compute(out, options).status();
  ASSERT_TRUE(s.ok()) << s.ToString();
  rec->ExpectWithinBudget();
  EXPECT_TRUE(ArraysEqual(ReadBack(dir.path() + "/sharded.zarr").view(), values.view()));
  auto at = *OpenStoreUrl(dir.path() + "/sharded.zarr", false);
  auto a = *ZarrArray::Open(at.store, at.prefix);
  EXPECT_EQ(a->CountStoredChunks()->count, 6);
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir.path() + "/sharded.zarr")) {
    EXPECT_EQ(e.path().filename().string().find("strata-tmp"), std::string::npos) << e.path();
  }
}

// A source store whose first ranged read of each (key, offset) fails, as
// unavailable, or is slow: every part of a shard then reads some of its inner
// chunks' values in a later attempt than others (retries), or stalls in the
// middle (a straggler, backed up by another worker).
class FlakyRangesStore : public Store {
 public:
  enum class Mode { kFail, kStall };
  explicit FlakyRangesStore(Mode mode) : inner_(std::make_shared<MemoryStore>()), mode_(mode) {}

  Result<Buffer> Get(std::string_view key, MemoryPool& pool) override {
    return inner_->Get(key, pool);
  }
  Result<Buffer> GetRange(std::string_view key, int64_t offset, int64_t length,
                          MemoryPool& pool) override {
    STRATA_RETURN_IF_ERROR(FirstTime(key, offset));
    return inner_->GetRange(key, offset, length, pool);
  }
  Result<Suffix> GetRangeAndSize(std::string_view key, int64_t offset, int64_t length,
                                 MemoryPool& pool) override {
    STRATA_RETURN_IF_ERROR(FirstTime(key, offset));
    return inner_->GetRangeAndSize(key, offset, length, pool);
  }
  Status GetInto(std::string_view key, std::span<std::byte> out) override {
    return inner_->GetInto(key, out);
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
  // A memory location to the plan's location checks (never overlapping).
  std::string url() const override { return "memory://flaky"; }

  void Arm() { armed_ = true; }
  int64_t faults() const { return faults_.load(); }

 private:
  Status FirstTime(std::string_view key, int64_t offset) {
    if (!armed_) return Status::Ok();
    {
      std::lock_guard lock(mu_);
      if (!seen_.insert(fmt::format("{}@{}", key, offset)).second) return Status::Ok();
    }
    ++faults_;
    if (mode_ == Mode::kStall) {
      std::this_thread::sleep_for(std::chrono::milliseconds(40));
      return Status::Ok();
    }
    return UnavailableError(fmt::format("flaky://{} at {}: try again", key, offset));
  }

  std::shared_ptr<MemoryStore> inner_;
  const Mode mode_;
  std::atomic<bool> armed_{false};
  std::atomic<int64_t> faults_{0};
  std::mutex mu_;
  std::set<std::string> seen_;  // guarded by mu_
};

// A shard written in parts by several tasks took the inner chunks of a
// retried or backup attempt of a part a second time, past the shard's size
// bound: "writing shard 1.0: ... 1612370 bytes exceed the bound of 1600644".
// Every part's attempts here fail (or stall) after some of its inner chunks
// are in; the shards hold each inner chunk once and read back whole.
TEST(ShardedPartsTest, RetriedAndBackupPartsAddEachInnerChunkOnce) {
  for (FlakyRangesStore::Mode mode : {FlakyRangesStore::Mode::kFail,
                                      FlakyRangesStore::Mode::kStall}) {
    const bool fail = mode == FlakyRangesStore::Mode::kFail;
    SCOPED_TRACE(fail ? "retries" : "backups");
    TempDir dir("strata-shard-retries");
    // (2000, 800) float64 in raw source chunks (400, 100), rechunked to the
    // inner chunks (100, 100) of shards (500, 400): each inner chunk is one
    // contiguous ranged read of its own (a quarter of a source chunk, read
    // in place). Shard 1.1 is all fill value (zero): not stored.
    const Shape shape = {2000, 800};
    NDArray values = *compute(random::random(shape, {2000, 800}, 4, SmallSpec()));
    auto* v = reinterpret_cast<double*>(values.view().data());
    for (Index i = 500; i < 1000; ++i) std::fill(v + i * 800 + 400, v + (i + 1) * 800, 0.0);
    auto flaky = std::make_shared<FlakyRangesStore>(mode);
    ArrayMetadata m;
    m.zarr_format = ZarrFormat::kV2;
    m.shape = shape;
    m.chunk_shape = {400, 100};
    m.encoding.dtype = DTypeId::kFloat64;
    m.fill_value = MakeFillValue(DTypeId::kFloat64, 0.0);
    {
      auto src = *ZarrArray::Create(flaky, "src", m, {});
      ASSERT_TRUE(src->WriteRegion(Box::FromShape(shape), values.view(), *MemoryPool::Default())
                      .ok());
      ASSERT_TRUE(src->Commit().ok());
    }
    flaky->Arm();
    // 4 workers for 8 shards: each shard is split into parts.
    Spec spec = SmallSpec(ExecutorKind::kThreads, 4);
    spec.retries = 100;
    spec.backup_slowdown = 1.01;
    Array x = from_zarr(*ZarrArray::Open(flaky, "src"), spec).rechunk({100, 100});
    ToZarrOptions to;
    to.zarr_format = ZarrFormat::kV3;
    to.shards = Shape{500, 400};
    const std::string path = dir.path() + "/sharded.zarr";
    Array out = to_zarr(x, path, to);
    auto p = plan({out});
    ASSERT_TRUE(p.ok()) << p.status().ToString();
    // Shards are split into parts of several inner chunks (SplitShards).
    std::string decisions;
    for (const std::string& d : (*p)->decisions()) decisions += d + "\n";
    ASSERT_NE(decisions.find("split into parts"), std::string::npos) << decisions;
    auto rec = std::make_shared<RecordingCallback>();
    ComputeOptions options;
    options.callbacks.push_back(rec);
    Status s = Execute(**p, options).status();
    ASSERT_TRUE(s.ok()) << s.ToString();
    EXPECT_GT(flaky->faults(), 16);
    EXPECT_TRUE(ArraysEqual(ReadBack(path).view(), values.view()));
    auto at = *OpenStoreUrl(path, false);
    auto a = *ZarrArray::Open(at.store, at.prefix);
    EXPECT_EQ(a->CountStoredChunks()->count, 7);
    // Each shard holds its 20 inner chunks once: no unreferenced copies.
    const int64_t encoded = a->shard_layout()->inner_codec().max_encoded_bytes();
    for (Index i = 0; i < 4; ++i) {
      for (Index j = 0; j < 2; ++j) {
        if (i == 1 && j == 1) continue;
        std::optional<int64_t> size = *at.store->Size(a->ChunkStoreKey(Shape{i, j}));
        ASSERT_TRUE(size.has_value());
        EXPECT_LE(*size, 20 * encoded + a->shard_layout()->index_bytes()) << i << "." << j;
      }
    }
    for (const auto& e : std::filesystem::recursive_directory_iterator(path)) {
      EXPECT_EQ(e.path().filename().string().find("strata-tmp"), std::string::npos) << e.path();
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Executors, ShardedToZarrTest,
                         testing::Values(ExecutorKind::kThreads, ExecutorKind::kProcesses),
                         [](const auto& info) { return std::string(ExecutorName(info.param)); });

TEST(ShardedToZarrOptionsTest, ShardsNeedV3AndMultiplesOfTheChunks) {
  Array x = zeros({10, 10}, {5, 5});
  ToZarrOptions to;
  to.shards = Shape{10, 10};
  EXPECT_NE(to_zarr(x, "memory://a", to).status().message().find("needs Zarr format 3"),
            std::string_view::npos);
  to.zarr_format = ZarrFormat::kV3;
  to.shards = Shape{10, 7};
  EXPECT_NE(to_zarr(x, "memory://a", to).status().message().find("must be a multiple"),
            std::string_view::npos);
}

TEST(RegionToZarrTest, BackfillsARegionAndAppends) {
  TempDir dir("strata-region");
  const std::string path = dir.path() + "/a.zarr";
  Spec spec = SmallSpec();
  ASSERT_TRUE(compute(to_zarr(full({20, 12}, Scalar(-1.0), {6, 5}, {}, spec), path)).ok());
  // A region at (4, 3) of shape (9, 7): partly covering chunks on every side.
  Array patch = random::random({9, 7}, {4, 4}, 11, spec);
  ToZarrOptions region;
  region.region_origin = Shape{4, 3};
  Array w = to_zarr(patch, path, region);
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  auto recorder = std::make_shared<RecordingCallback>();
  ComputeOptions options;
  options.callbacks.push_back(recorder);
  auto p = *plan({w});
  ASSERT_TRUE(Execute(*p, options).ok());
  recorder->ExpectWithinBudget();
  NDArray got = ReadBack(path);
  NDArray values = *compute(patch);
  NDArray expected = *NDArray::Allocate(*MemoryPool::Default(), DTypeId::kFloat64, {20, 12});
  FillArray(expected.view(), MakeFillValue(DTypeId::kFloat64, -1.0).bytes);
  CopyArray(values.view(), expected.view().Slice(Box({4, 3}, {9, 7})));
  EXPECT_TRUE(ArraysEqual(got.view(), expected.view()));
  // Append 7 rows: the array grows to 27 rows.
  Array more = random::random({7, 12}, {7, 12}, 12, spec);
  ToZarrOptions append;
  append.append_dim = 0;
  ASSERT_TRUE(compute(to_zarr(more, path, append)).ok());
  NDArray grown = ReadBack(path);
  ASSERT_EQ(grown.shape(), (Shape{27, 12}));
  EXPECT_TRUE(ArraysEqual(grown.view().Slice(Box({0, 0}, {20, 12})), expected.view()));
  EXPECT_TRUE(ArraysEqual(grown.view().Slice(Box({20, 0}, {7, 12})), compute(more)->view()));
  // Out of bounds and mismatched appends are errors, nothing written.
  region.region_origin = Shape{25, 0};
  EXPECT_NE(to_zarr(patch, path, region).status().message().find("outside the array"),
            std::string_view::npos);
  append.append_dim = 1;
  EXPECT_NE(to_zarr(more, path, append).status().message().find("the other extents differ"),
            std::string_view::npos);
}

// A region whose end (origin + extent) passes 2^63 wrapped to a negative end
// that passed the bound check: the CLI wrote 2,940 cells at row 0 or freed a
// chunk buffer twice. Refused now, naming the region, with nothing written.
TEST(RegionToZarrTest, ARegionWhoseEndOverflowsIsRefused) {
  TempDir dir("strata-region-overflow");
  const std::string path = dir.path() + "/a.zarr";
  Spec spec = SmallSpec();
  ASSERT_TRUE(compute(to_zarr(full({400, 300}, Scalar(-1.0), {64, 64}, {}, spec), path)).ok());
  const NDArray before = ReadBack(path);
  Array patch = random::random({50, 70}, {50, 70}, 3, spec);
  for (const Shape& origin : {Shape{INT64_MAX - 7, 0}, Shape{0, INT64_MAX}}) {
    SCOPED_TRACE(ShapeToString(origin));
    ToZarrOptions region;
    region.region_origin = origin;
    Array w = to_zarr(patch, path, region);
    EXPECT_EQ(w.status().code(), StatusCode::kInvalidArgument) << w.status().ToString();
    EXPECT_NE(w.status().message().find(fmt::format("region at {} of shape (50, 70) ends past "
                                                    "the largest index",
                                                    ShapeToString(origin))),
              std::string_view::npos)
        << w.status().ToString();
  }
  EXPECT_TRUE(ArraysEqual(ReadBack(path).view(), before.view()));
  // An append whose new extent would pass 2^63 is refused the same way
  // (a virtual int8 array of 2^63 - 100 rows appended to 400).
  const std::string column = dir.path() + "/c.zarr";
  ASSERT_TRUE(compute(to_zarr(full({400, 1}, Scalar(-1.0), {64, 1}, {}, spec), column)).ok());
  ToZarrOptions append;
  append.append_dim = 0;
  Array huge = full({INT64_MAX - 99, 1}, Scalar(int64_t{1}), {Index{1} << 40, 1},
                    DType(DTypeId::kInt8), spec);
  ASSERT_TRUE(huge.ok()) << huge.status().ToString();
  Array a = to_zarr(huge, column, append);
  EXPECT_EQ(a.status().code(), StatusCode::kInvalidArgument) << a.status().ToString();
  EXPECT_NE(a.status().message().find("400 + 9223372036854775708 overflows int64"),
            std::string_view::npos)
      << a.status().ToString();
}

TEST(RegionToZarrTest, CastsOnlyWithinNumpysSameKind) {
  TempDir dir("strata-region-cast");
  const std::string ints = dir.path() + "/i.zarr", floats = dir.path() + "/f.zarr";
  Spec spec = SmallSpec();
  ASSERT_TRUE(compute(to_zarr(zeros({4, 4}, {2, 2}, DTypeId::kInt32, spec), ints)).ok());
  ASSERT_TRUE(compute(to_zarr(zeros({4, 4}, {2, 2}, DTypeId::kFloat32, spec), floats)).ok());
  ToZarrOptions region;
  region.region_origin = Shape{1, 1};
  // Within a kind or into a later one (numpy's same_kind): int8 into int32,
  // int64 into float32, float64 into float32.
  EXPECT_TRUE(compute(to_zarr(ones({2, 2}, {}, DTypeId::kInt8, spec), ints, region)).ok());
  EXPECT_TRUE(compute(to_zarr(ones({2, 2}, {}, DTypeId::kInt64, spec), floats, region)).ok());
  EXPECT_TRUE(compute(to_zarr(full({2, 2}, Scalar(1.5), {}, {}, spec), floats, region)).ok());
  NDArray f = ReadBack(floats);
  EXPECT_EQ(reinterpret_cast<const float*>(f.data())[5], 1.5f);
  // Back across kinds (float into int, complex into float, a number into
  // bool): refused before anything is written.
  Array w = to_zarr(full({2, 2}, Scalar(2.5), {}, {}, spec), ints, region);
  EXPECT_EQ(w.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(w.status().message().find("x has dtype float64, the array int32"),
            std::string_view::npos) << w.status().ToString();
  EXPECT_NE(w.status().message().find("same_kind"), std::string_view::npos);
  w = to_zarr(full({2, 2}, Scalar(1.0), {}, DType(DTypeId::kComplex64), spec), floats, region);
  EXPECT_EQ(w.status().code(), StatusCode::kInvalidArgument);
  const std::string bools = dir.path() + "/b.zarr";
  ASSERT_TRUE(compute(to_zarr(zeros({4, 4}, {2, 2}, DTypeId::kBool, spec), bools)).ok());
  w = to_zarr(ones({2, 2}, {}, DTypeId::kUInt8, spec), bools, region);
  EXPECT_EQ(w.status().code(), StatusCode::kInvalidArgument);
  NDArray i = ReadBack(ints);
  EXPECT_EQ(reinterpret_cast<const int32_t*>(i.data())[5], 1);
}

TEST(ToZarrFillValueTest, ANullFillValuePadsEdgeChunks) {
  // Zarr v2's null fill value, given as FillValue{{}, true} (as the Python
  // package gives fill_value="null"): edge chunks are padded with zeros, as
  // zarr-python pads them (FillArray's check aborted on the empty bytes).
  TempDir dir("strata-null-fill");
  const std::string path = dir.path() + "/a.zarr";
  ToZarrOptions options;
  options.fill_value.emplace().is_null = true;
  Array x = full({3, 5}, Scalar(7), {2, 2}, DType(DTypeId::kInt16), SmallSpec());
  ASSERT_TRUE(compute(to_zarr(x, path, options)).ok());
  EXPECT_TRUE(ArraysEqual(ReadBack(path).view(), compute(x)->view()));
}

// The names in an array's directory, sorted.
std::vector<std::string> Names(const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    out.push_back(e.path().filename().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

// Partial-chunk region writes lock each chunk on a file in the array's
// directory (kChunkLockFile): it is gone once no writer uses it, after a
// backfill that succeeded and after one that failed in the middle of a
// read-modify-write, so a finished array holds Zarr's keys alone.
TEST(RegionToZarrTest, NoChunkLockFileStaysInTheArray) {
  TempDir dir("strata-region-locks");
  const std::string path = dir.path() + "/a.zarr";
  Spec spec = SmallSpec();
  ASSERT_TRUE(compute(to_zarr(full({8, 8}, Scalar(2.0), {4, 4}, {}, spec), path)).ok());
  const std::vector<std::string> before = Names(path);
  EXPECT_EQ(before, (std::vector<std::string>{".zarray", "0.0", "0.1", "1.0", "1.1"}));
  // Rows [2, 6) x columns [1, 7): every chunk is covered only partly.
  ToZarrOptions region;
  region.region_origin = Shape{2, 1};
  ASSERT_TRUE(compute(to_zarr(full({4, 6}, Scalar(5.0), {4, 6}, {}, spec), path, region)).ok());
  EXPECT_EQ(Names(path), before);
  NDArray got = ReadBack(path);
  EXPECT_EQ(reinterpret_cast<const double*>(got.data())[2 * 8 + 1], 5.0);
  EXPECT_EQ(reinterpret_cast<const double*>(got.data())[0], 2.0);

  // A read-modify-write that fails: chunk 1.1 is corrupt.
  std::ofstream(path + "/1.1", std::ios::trunc) << "not blosc";
  Result<NDArray> failed =
      compute(to_zarr(full({4, 6}, Scalar(7.0), {4, 6}, {}, spec), path, region));
  ASSERT_FALSE(failed.ok());
  EXPECT_EQ(Names(path), before);

  // One a killed writer left is removed by the next backfill, even one that
  // covers whole chunks only; one a live writer holds a lock in stays.
  std::filesystem::remove(path + "/1.1");
  std::ofstream(path + "/" + std::string(kChunkLockFile)) << "";
  region.region_origin = Shape{0, 0};
  ASSERT_TRUE(compute(to_zarr(full({4, 4}, Scalar(1.0), {4, 4}, {}, spec), path, region)).ok());
  EXPECT_FALSE(std::filesystem::exists(path + "/" + std::string(kChunkLockFile)));
  const std::string lock_path = path + "/" + std::string(kChunkLockFile);
  const int fd = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  ASSERT_GE(fd, 0);
  struct flock held {};
  held.l_type = F_WRLCK;
  held.l_whence = SEEK_SET;
  held.l_start = 3;
  held.l_len = 1;
  ASSERT_EQ(::fcntl(fd, F_OFD_SETLK, &held), 0);
  ASSERT_TRUE(compute(to_zarr(full({4, 4}, Scalar(1.0), {4, 4}, {}, spec), path, region)).ok());
  EXPECT_TRUE(std::filesystem::exists(lock_path)) << "removed under a live writer";
  ::close(fd);
  ASSERT_TRUE(compute(to_zarr(full({4, 4}, Scalar(1.0), {4, 4}, {}, spec), path, region)).ok());
  EXPECT_FALSE(std::filesystem::exists(lock_path));
}

// Writers in several threads of one process, each read-modify-writing the
// same chunks (neighbouring column strips): none is lost, and the lock file
// is gone after.
TEST(RegionToZarrTest, ConcurrentPartialWritersLoseNothingAndLeaveNoLockFile) {
  TempDir dir("strata-region-concurrent");
  const std::string path = dir.path() + "/a.zarr";
  Spec spec = SmallSpec();
  ASSERT_TRUE(compute(to_zarr(zeros({16, 16}, {8, 8}, DType(DTypeId::kFloat64), spec), path)).ok());
  std::vector<std::thread> writers;
  std::atomic<int> failures{0};
  for (int k = 0; k < 8; ++k) {
    writers.emplace_back([&, k] {
      ToZarrOptions region;
      region.region_origin = Shape{0, 2 * k};
      Array strip = full({16, 2}, Scalar(k + 1.0), {16, 2}, {}, spec);
      if (!compute(to_zarr(strip, path, region)).ok()) ++failures;
    });
  }
  for (auto& t : writers) t.join();
  EXPECT_EQ(failures.load(), 0);
  NDArray got = ReadBack(path);
  const double* v = reinterpret_cast<const double*>(got.data());
  for (int r = 0; r < 16; ++r) {
    for (int c = 0; c < 16; ++c) ASSERT_EQ(v[r * 16 + c], c / 2 + 1.0) << r << "," << c;
  }
  EXPECT_FALSE(std::filesystem::exists(path + "/" + std::string(kChunkLockFile)));
}


TEST(RegionToZarrTest, ABackfillRemovesWhatAKilledBackfillLeftAndRefusesItsOwnSource) {
  TempDir dir("strata-region-litter");
  const std::string path = dir.path() + "/a.zarr";
  Spec spec = SmallSpec();
  ASSERT_TRUE(compute(to_zarr(full({8, 8}, Scalar(2.0), {4, 4}, {}, spec), path)).ok());
  // A temporary a killed writer left (its pid does not exist), as LocalStore names them.
  const std::string stale = path + "/.0.1.strata-tmp-999999999-1-3";
  std::ofstream(stale) << "partial";
  ToZarrOptions region;
  region.region_origin = Shape{0, 0};
  ASSERT_TRUE(compute(to_zarr(random::random({4, 4}, {4, 4}, 1, spec), path, region)).ok());
  EXPECT_FALSE(std::filesystem::exists(stale));
  // Backfilling an array from itself would read chunks while they change.
  Array self = from_zarr(path, spec);
  Array sub = getitem(self, {Slice{0, 4}, Slice{0, 4}});
  Array w = to_zarr(sub, path, region);
  ASSERT_FALSE(w.ok());
  EXPECT_EQ(w.status().code(), StatusCode::kInvalidArgument);
}

TEST(ResumeTest, ARerunSkipsCompleteChunksAndRemovesStaleTemporaries) {
  TempDir dir("strata-resume");
  const std::string path = dir.path() + "/r.zarr";
  Spec spec = SmallSpec(ExecutorKind::kInline, 1);
  Array x = random::random({40, 30}, {10, 10}, 5, spec);
  // The first run dies after 5 of the 12 store tasks.
  int stored = 0;
  ComputeOptions failing;
  failing.fault_injector = [&](const PlannedOp& op, std::span<const Index>, int) -> Status {
    if (op.node->kind != NodeKind::kStore) return Status::Ok();
    if (stored++ >= 5) return InvalidArgumentError("killed");
    return Status::Ok();
  };
  {
    auto p = *plan({to_zarr(x, path)});
    EXPECT_FALSE(Execute(*p, failing).ok());
  }
  EXPECT_TRUE(std::filesystem::exists(path + "/.strata-incomplete"));
  // A temporary a killed writer left (a pid that does not exist) and one of
  // a live process.
  // Names as LocalStore gives them: ".<key>.strata-tmp-<pid>-<start time>-<n>".
  const std::string stale = path + "/.1.1.strata-tmp-999999999-1-0";
  const std::string live = path + "/.1.2.strata-tmp-" + std::to_string(::getpid()) + "-" +
                           std::to_string(ThisProcessStartTime()) + "-77";
  std::ofstream(stale) << "partial";
  std::ofstream(live) << "in flight";
  auto recorder = std::make_shared<RecordingCallback>();
  ComputeOptions options;
  options.callbacks.push_back(recorder);
  auto p = *plan({to_zarr(x, path)});
  ASSERT_TRUE(Execute(*p, options).ok());
  int skipped = 0, written = 0;
  for (const TaskEndEvent& e : recorder->events) {
    if (e.op->node->kind != NodeKind::kStore) continue;
    (e.skipped ? skipped : written)++;
  }
  EXPECT_EQ(skipped, 5);
  EXPECT_EQ(written, 7);
  EXPECT_EQ(recorder->summary.tasks_skipped, 5);
  EXPECT_FALSE(std::filesystem::exists(stale));
  EXPECT_TRUE(std::filesystem::exists(live));
  std::filesystem::remove(live);
  EXPECT_FALSE(std::filesystem::exists(path + "/.strata-incomplete"));
  EXPECT_TRUE(ArraysEqual(ReadBack(path).view(), compute(x)->view()));
  // A complete array is not resumed: the same to_zarr is refused.
  EXPECT_EQ(compute(to_zarr(x, path)).status().code(), StatusCode::kAlreadyExists);
}

TEST(ResumeTest, ARerunOfARechunkSkipsItsCompleteWriteBlocks) {
  // A rechunk written to Zarr: its store tasks may each write several target
  // chunks (consolidated write chunks); one is skipped only when all are there.
  TempDir dir("strata-resume-rechunk");
  const std::string path = dir.path() + "/r.zarr";
  Spec spec = SmallSpec(ExecutorKind::kInline, 1);
  Array x = random::random({40, 40}, {40, 4}, 6, spec).rechunk({10, 10});
  int stored = 0;
  ComputeOptions failing;
  failing.fault_injector = [&](const PlannedOp& op, std::span<const Index>, int) -> Status {
    if (op.node->kind != NodeKind::kStore) return Status::Ok();
    if (stored++ >= 2) return InvalidArgumentError("killed");
    return Status::Ok();
  };
  int64_t store_tasks = 0;
  {
    auto p = *plan({to_zarr(x, path)});
    for (const PlannedOp& op : p->ops()) {
      if (op.node->kind == NodeKind::kStore) store_tasks = op.num_tasks();
    }
    EXPECT_FALSE(Execute(*p, failing).ok());
  }
  ASSERT_GT(store_tasks, 2);
  auto recorder = std::make_shared<RecordingCallback>();
  ComputeOptions options;
  options.callbacks.push_back(recorder);
  auto p = *plan({to_zarr(x, path)});
  ASSERT_TRUE(Execute(*p, options).ok());
  int skipped = 0, written = 0;
  for (const TaskEndEvent& e : recorder->events) {
    if (e.op->node->kind != NodeKind::kStore) continue;
    (e.skipped ? skipped : written)++;
  }
  EXPECT_EQ(skipped, 2);
  EXPECT_EQ(written, store_tasks - 2);
  EXPECT_TRUE(ArraysEqual(ReadBack(path).view(), compute(x)->view()));
}

// Chunks equal to the fill value are not stored (issue 13): a rerun must still
// know them done. Store tasks the first run finished are skipped, not redone,
// whether they wrote a chunk or found it all fill; the journal that says so
// is gone once the array is complete.
struct FillResumeCase {
  std::optional<Shape> shards;
  int64_t tasks;
};

class FillResumeTest : public ::testing::TestWithParam<FillResumeCase> {};

TEST_P(FillResumeTest, ARerunSkipsTheChunksTheFirstRunFoundAllFill) {
  TempDir dir("strata-resume-fill");
  const std::string path = dir.path() + "/f.zarr";
  Spec spec = SmallSpec(ExecutorKind::kInline, 1);
  // Half of it zeros (the fill value), half random, chunk by chunk: rows
  // [0, 20) are zeros.
  Array r = random::random({40, 40}, {10, 10}, 9, spec);
  Array rows = reshape(arange(0, 40, 1, {10}, DType(DTypeId::kInt64), spec), {40, 1});
  Array x = where(rows < 20, 0.0, r);
  ToZarrOptions options;
  options.zarr_format = ZarrFormat::kV3;
  options.shards = GetParam().shards;
  int stored = 0;
  ComputeOptions failing;
  failing.fault_injector = [&](const PlannedOp& op, std::span<const Index>, int) -> Status {
    if (op.node->kind != NodeKind::kStore) return Status::Ok();
    if (stored++ >= GetParam().tasks / 2) return InvalidArgumentError("killed");
    return Status::Ok();
  };
  {
    auto p = *plan({to_zarr(x, path, options)});
    EXPECT_FALSE(Execute(*p, failing).ok());
  }
  // The first half of the tasks wrote nothing (all zeros): their chunks are
  // in the journal only.
  EXPECT_TRUE(std::filesystem::exists(path + "/.strata-fill"));
  EXPECT_FALSE(std::filesystem::exists(path + "/c"));
  auto recorder = std::make_shared<RecordingCallback>();
  ComputeOptions again;
  again.callbacks.push_back(recorder);
  auto p = *plan({to_zarr(x, path, options)});
  ASSERT_TRUE(Execute(*p, again).ok());
  int skipped = 0, written = 0;
  for (const TaskEndEvent& e : recorder->events) {
    if (e.op->node->kind != NodeKind::kStore) continue;
    (e.skipped ? skipped : written)++;
  }
  EXPECT_EQ(skipped, GetParam().tasks / 2);
  EXPECT_EQ(written, GetParam().tasks - GetParam().tasks / 2);
  EXPECT_FALSE(std::filesystem::exists(path + "/.strata-fill"));
  EXPECT_FALSE(std::filesystem::exists(path + "/.strata-incomplete"));
  EXPECT_FALSE(std::filesystem::exists(path + "/c/0/0"));  // all fill: not stored
  EXPECT_TRUE(ArraysEqual(ReadBack(path).view(), compute(x)->view()));
}

INSTANTIATE_TEST_SUITE_P(Chunks, FillResumeTest,
                         ::testing::Values(FillResumeCase{std::nullopt, 16},
                                           FillResumeCase{Shape{20, 20}, 4}));

TEST(FillJournalTest, AnOverwriteRemovesTheJournalOfTheArrayItReplaces) {
  TempDir dir("strata-fill-overwrite");
  const std::string path = dir.path() + "/o.zarr";
  Spec spec = SmallSpec(ExecutorKind::kInline, 1);
  Array x = zeros({20, 20}, {10, 10}, DTypeId::kFloat64, spec);
  ComputeOptions failing;
  int stored = 0;
  failing.fault_injector = [&](const PlannedOp& op, std::span<const Index>, int) -> Status {
    if (op.node->kind == NodeKind::kStore && stored++ >= 2) return InvalidArgumentError("killed");
    return Status::Ok();
  };
  {
    auto p = *plan({to_zarr(x, path)});
    EXPECT_FALSE(Execute(*p, failing).ok());
  }
  ASSERT_TRUE(std::filesystem::exists(path + "/.strata-fill"));
  // Other metadata: not resumed but replaced, journal and all.
  ToZarrOptions replace;
  replace.overwrite = true;
  replace.codecs = {};
  replace.no_compression = true;
  ASSERT_TRUE(compute(to_zarr(ones({20, 20}, {10, 10}, DTypeId::kFloat64, spec), path, replace)).ok());
  EXPECT_FALSE(std::filesystem::exists(path + "/.strata-fill"));
  EXPECT_TRUE(ArraysEqual(ReadBack(path).view(),
                          compute(ones({20, 20}, {10, 10}, DTypeId::kFloat64, spec))->view()));
}

}  // namespace
}  // namespace strata
