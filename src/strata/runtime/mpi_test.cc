// The mpi executor. Run under mpirun (`mpirun -np 3 mpi_test`, registered
// with CTest so): every rank runs every test, and each compute with
// executor mpi is collective. Sources and the threads reference are written
// by rank 0 alone, in a directory every rank sees.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "strata/api/api_test_util.h"
#include "strata/base/mpi.h"
#include "strata/base/temp_dir.h"
#include "strata/core/synthetic.h"
#include "strata/runtime/intermediate_store.h"
#include "strata/runtime/intermediate_store_test_util.h"
#include "strata/runtime/mpi_tier.h"
#include "strata/storage/zarr/zarr_array.h"
#include "strata/strata.h"

namespace strata {
namespace {

using testing_util::IntermediateStoreConformance;
using testing_util::RecordingCallback;
using testing_util::Snapshot;

int Rank() { return mpi::Rank(); }

void Barrier() { ASSERT_TRUE(mpi::Barrier().ok()); }

// A temporary directory shared by all ranks: rank 0's, removed by rank 0
// after every rank is done with it.
class SharedDir {
 public:
  SharedDir() {
    std::array<char, 4096> path{};
    if (Rank() == 0) {
      dir_ = std::make_unique<TempDir>("strata-mpi-test");
      std::memcpy(path.data(), dir_->path().data(), dir_->path().size());
    }
    EXPECT_TRUE(mpi::Broadcast(std::as_writable_bytes(std::span(path)), 0).ok());
    path_ = path.data();
  }
  ~SharedDir() { mpi::Barrier().IgnoreError(); }
  const std::string& path() const { return path_; }

 private:
  std::unique_ptr<TempDir> dir_;
  std::string path_;
};

// Tasks here take microseconds: without a pause the first rank to start
// could run them all, and a test of what happens between ranks would not
// see any.
void SlowDown() { std::this_thread::sleep_for(std::chrono::milliseconds(5)); }

Spec MpiSpec(TierChoice tier, const std::string& work_dir) {
  Spec spec;
  spec.allowed_mem = "16MB";
  spec.reserved_mem = "1MB";
  spec.executor = ExecutorKind::kMpi;
  spec.tier = tier;
  spec.work_dir = work_dir;
  return spec;
}

// The same spec on the threads executor with 2 workers (the reference).
Spec ThreadsSpec(Spec spec) {
  spec.executor = ExecutorKind::kThreads;
  spec.workers = 2;
  return spec;
}

// Rank 0 writes synthetic data of `shape` in `chunks` at `path`.
void WriteSource(const std::string& path, const Shape& shape, const Shape& chunks, uint64_t seed) {
  if (Rank() == 0) {
    Spec spec;
    spec.allowed_mem = "400MB";
    Result<NDArray> r = compute(to_zarr(random::random(shape, chunks, seed, spec), path));
    EXPECT_TRUE(r.ok()) << r.status().ToString();
  }
  Barrier();
}

TEST(MpiTest, RunsOnSeveralRanks) {
  ASSERT_TRUE(mpi::Built());
  Spec spec = MpiSpec(TierChoice::kAuto, "");
  ASSERT_TRUE(ResolveSpec(spec).ok());
  EXPECT_GE(mpi::Size(), 2) << "run this test under mpirun -np 3";
  EXPECT_EQ(ResolveSpec(spec)->workers, mpi::Size());
}

// Under one mpirun on one machine every rank shares one host, named by its
// hostname (tests/interop/test_mpi_hosts.py runs ranks on several hosts).
TEST(MpiTest, LayoutPutsRanksOfOneMachineOnOneNamedHost) {
  ASSERT_TRUE(mpi::Init().ok());
  Result<mpi::HostLayout> layout = mpi::Layout();
  ASSERT_TRUE(layout.ok()) << layout.status().ToString();
  char name[256] = {};
  ASSERT_EQ(gethostname(name, sizeof name - 1), 0);
  EXPECT_EQ(layout->hosts, 1);
  EXPECT_EQ(layout->host_names, std::vector<std::string>{name});
  EXPECT_EQ(layout->host_of_rank, std::vector<int>(mpi::Size(), 0));
  EXPECT_EQ(layout->ranks_on_host, std::vector<int>(mpi::Size(), mpi::Size()));
}

struct TierCase {
  TierChoice tier;
  const char* name;
};

class MpiRechunkTest : public ::testing::TestWithParam<TierCase> {};

// Random shapes and chunkings: identical chunk files to the threads
// executor's, the data generated directly in the target chunks, the memory
// contract, and nothing left in work_dir.
TEST_P(MpiRechunkTest, MatchesThreadsByteForByte) {
  std::mt19937 rng(777 + static_cast<int>(GetParam().tier));
  SharedDir dir;
  int64_t spilled = 0;
  int staged = 0;
  for (int trial = 0; trial < 6; ++trial) {
    const int rank = 1 + trial % 3;
    Shape shape(rank);
    for (int i = 0; i < rank; ++i) {
      shape[i] = std::uniform_int_distribution<Index>(1, rank <= 2 ? 60 : 12)(rng);
    }
    Shape from = testing_util::RandomChunks(shape, rng);
    Shape to = testing_util::RandomChunks(shape, rng);
    SCOPED_TRACE(fmt::format("shape {} chunks {} -> {}", ShapeToString(shape),
                             ShapeToString(from), ShapeToString(to)));
    const std::string src = fmt::format("{}/src{}.zarr", dir.path(), trial);
    WriteSource(src, shape, from, trial);
    const std::string work = dir.path() + "/work";
    Spec spec = MpiSpec(GetParam().tier, work);
    // On disk, a rechunk that fits one block of rechunker's max_mem needs no
    // intermediate: a budget of ~50 kB makes most of these arrays stage.
    if (GetParam().tier == TierChoice::kDisk) spec.allowed_mem = "1.05MB";
    const std::string dst = fmt::format("{}/mpi{}.zarr", dir.path(), trial);
    auto rec = std::make_shared<RecordingCallback>();
    ComputeOptions options;
    options.callbacks.push_back(rec);
    Array out = to_zarr(from_zarr(src, spec).rechunk(to), dst);
    Result<std::shared_ptr<const Plan>> p = plan({out});  // collective
    ASSERT_TRUE(p.ok()) << p.status().ToString();
    int disk_ops = 0;
    for (const PlannedOp& op : (*p)->ops()) disk_ops += op.tier == Tier::kDisk;
    Result<NDArray> r = compute(out, options);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    if (Rank() != 0) continue;
    rec->ExpectWithinBudget();
    const int64_t written = rec->summary.intermediate_bytes_written;
    spilled += written;
    staged += disk_ops > 0;
    if (GetParam().tier == TierChoice::kMemory) {
      EXPECT_EQ(written, 0);
    }
    if (GetParam().tier == TierChoice::kDisk) {
      EXPECT_EQ(written > 0, disk_ops > 0) << (*p)->ToText();
    }
    const std::string ref = fmt::format("{}/threads{}.zarr", dir.path(), trial);
    Spec threads = ThreadsSpec(spec);
    ASSERT_TRUE(compute(to_zarr(from_zarr(src, threads).rechunk(to), ref)).ok());
    EXPECT_EQ(Snapshot(dst), Snapshot(ref));
    Result<NDArray> got = compute(from_zarr(dst, threads));
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    NDArray want = *NDArray::Allocate(*MemoryPool::Default(), DTypeId::kFloat64, shape);
    FillSynthetic(want.view(), Box::FromShape(shape), shape, trial);
    EXPECT_EQ(std::memcmp(got->data(), want.data(), want.nbytes()), 0);
    EXPECT_TRUE(Snapshot(work).empty()) << "intermediates left behind";
    EXPECT_FALSE(std::filesystem::exists(dst + "/.strata-incomplete"));
  }
  // Whether one small case spills depends on when blocks are read and freed;
  // over all of them, some must.
  if (Rank() == 0 && GetParam().tier == TierChoice::kSpill) {
    EXPECT_GT(spilled, 0);
  }
  if (Rank() == 0 && GetParam().tier == TierChoice::kDisk) {
    EXPECT_GT(staged, 0) << "no case went through the disk tier";
  }
}

INSTANTIATE_TEST_SUITE_P(Tiers, MpiRechunkTest,
                         ::testing::Values(TierCase{TierChoice::kMemory, "memory"},
                                           TierCase{TierChoice::kSpill, "spill"},
                                           TierCase{TierChoice::kDisk, "disk"},
                                           TierCase{TierChoice::kAuto, "auto"}),
                         [](const auto& info) { return std::string(info.param.name); });

// A memory-tier rechunk moves its blocks between ranks as messages: nothing
// is written to disk (no spill, no files), and bytes did travel.
TEST(MpiTest, MemoryTierNeverTouchesDisk) {
  SharedDir dir;
  const Shape shape = {600, 800};
  WriteSource(dir.path() + "/src.zarr", shape, {600, 40}, 3);
  const std::string work = dir.path() + "/work";
  Spec spec = MpiSpec(TierChoice::kMemory, work);
  auto rec = std::make_shared<RecordingCallback>();
  ComputeOptions options;
  options.callbacks.push_back(rec);
  options.fault_injector = [](const PlannedOp&, std::span<const Index>, int) {
    SlowDown();
    return Status::Ok();
  };
  Result<NDArray> r = compute(
      to_zarr(from_zarr(dir.path() + "/src.zarr", spec).rechunk({40, 800}),
              dir.path() + "/dst.zarr"),
      options);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  if (Rank() != 0) return;
  EXPECT_EQ(rec->summary.intermediate_bytes_written, 0);
  EXPECT_GT(rec->summary.bytes_between_ranks, 0);
  EXPECT_FALSE(std::filesystem::exists(work)) << "the memory tier made a directory";
  // Every rank ran tasks.
  std::map<int, int> per_rank;
  for (const TaskEndEvent& e : rec->events) ++per_rank[e.worker];
  EXPECT_EQ(static_cast<int>(per_rank.size()), mpi::Size());
}

// total_system_mem is split between the ranks; each rank's measured peak
// stays within its share even when the memory tier must spill.
TEST(MpiTest, PeakMemoryPerRankStaysWithinItsShare) {
  SharedDir dir;
  const Shape shape = {1200, 1200};  // 11.5 MB
  WriteSource(dir.path() + "/src.zarr", shape, {1200, 60}, 5);
  Spec spec = MpiSpec(TierChoice::kAuto, dir.path() + "/work");
  spec.allowed_mem = "8MB";
  spec.total_system_mem = fmt::format("{}", int64_t{9'000'000} * mpi::Size());
  auto rec = std::make_shared<RecordingCallback>();
  ComputeOptions options;
  options.callbacks.push_back(rec);
  Result<NDArray> r = compute(
      to_zarr(from_zarr(dir.path() + "/src.zarr", spec).rechunk({60, 1200}),
              dir.path() + "/dst.zarr"),
      options);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  if (Rank() != 0) return;
  rec->ExpectWithinBudget();
  const ComputeSummary& s = rec->summary;
  ASSERT_EQ(static_cast<int>(s.rank_peak_pool_bytes.size()), mpi::Size());
  for (int k = 0; k < mpi::Size(); ++k) {
    EXPECT_EQ(s.rank_memory_share[k], 9'000'000);
    EXPECT_LE(s.rank_peak_pool_bytes[k], s.rank_memory_share[k]) << "rank " << k;
  }
  Result<NDArray> got = compute(from_zarr(dir.path() + "/dst.zarr"));
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  NDArray want = *NDArray::Allocate(*MemoryPool::Default(), DTypeId::kFloat64, shape);
  FillSynthetic(want.view(), Box::FromShape(shape), shape, 5);
  EXPECT_EQ(std::memcmp(got->data(), want.data(), want.nbytes()), 0);
}

// Reductions (several rounds, with intermediates on other ranks) return the
// same bytes on every rank as on threads.
TEST(MpiTest, ReductionsMatchThreadsByteForByte) {
  Spec spec = MpiSpec(TierChoice::kAuto, "");
  spec.allowed_mem = "4MB";
  auto expr = [](const Spec& s) {
    Array a = random::random({900, 700}, {50, 70}, 11, s);
    return std::vector<Array>{sum(a * 3 + 1, {0}), mean(a, {}), max(a.rechunk({900, 10}), {1})};
  };
  Result<std::vector<NDArray>> got = compute(expr(spec));
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  Result<std::vector<NDArray>> want = compute(expr(ThreadsSpec(spec)));
  ASSERT_TRUE(want.ok()) << want.status().ToString();
  ASSERT_EQ(got->size(), want->size());
  for (size_t i = 0; i < got->size(); ++i) {
    ASSERT_EQ((*got)[i].shape(), (*want)[i].shape()) << i;
    EXPECT_EQ(std::memcmp((*got)[i].data(), (*want)[i].data(), (*want)[i].nbytes()), 0)
        << "result " << i;
  }
}

// A straggler on rank 1 (its first task of the producer past the half
// sleeps) is backed up on another rank; the backup wins, the straggler's
// result (a memory-tier block on its rank, or nothing once told) is
// discarded, and the result is the threads executor's, on every rank.
TEST(MpiTest, StragglerOnARankIsBackedUpOnAnother) {
  SharedDir dir;
  const std::string work = dir.path() + "/work";
  Spec spec = MpiSpec(TierChoice::kMemory, work);
  auto expr = [](const Spec& s) {
    return rechunk(random::random({400, 40}, {20, 40}, 7, s) * 2.0, {400, 2});
  };
  auto rec = std::make_shared<RecordingCallback>();
  ComputeOptions options;
  options.callbacks.push_back(rec);
  options.fault_injector = [](const PlannedOp& op, std::span<const Index> block, int attempt) {
    static std::atomic<bool> slept{false};
    if (mpi::Rank() == 1 && attempt == 1 && op.depth == 0 && block[0] >= 12 &&
        !slept.exchange(true)) {
      std::this_thread::sleep_for(std::chrono::seconds(2));
    }
    SlowDown();
    return Status::Ok();
  };
  Result<NDArray> got = compute(expr(spec), options);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  Barrier();  // every rank is past the mpi run's cleanup
  EXPECT_FALSE(std::filesystem::exists(work)) << "the memory tier made a directory";
  // The reference, on every rank at once: in a work_dir of its own (ranks
  // sharing one would race to create and remove it).
  Spec reference = ThreadsSpec(spec);
  reference.work_dir.clear();
  Result<NDArray> want = compute(expr(reference));
  ASSERT_TRUE(want.ok()) << want.status().ToString();
  EXPECT_EQ(std::memcmp(got->data(), want->data(), want->nbytes()), 0);
  if (Rank() != 0) return;  // callbacks run on rank 0
  EXPECT_GE(rec->summary.backups_won, 1);
  rec->ExpectWithinBudget();
  int producers = 0, backups = 0;
  for (size_t i = 0; i < rec->events.size(); ++i) {
    const TaskEndEvent& e = rec->events[i];
    if (rec->depths[i] != 0) continue;
    ++producers;
    backups += e.backup ? 1 : 0;
  }
  EXPECT_EQ(producers, 20) << "each task once";
  EXPECT_GE(backups, 1);
}

// A task that fails (transiently) on one rank is retried on another.
TEST(MpiTest, FailingTaskIsRetriedOnAnotherRank) {
  Spec spec = MpiSpec(TierChoice::kAuto, "");
  Array a = random::random({400, 100}, {20, 100}, 2, spec);
  auto rec = std::make_shared<RecordingCallback>();
  ComputeOptions options;
  options.callbacks.push_back(rec);
  options.fault_injector = [](const PlannedOp&, std::span<const Index>, int attempt) {
    if (mpi::Rank() == 1 && attempt == 1) return UnavailableError("injected flaky rank 1");
    SlowDown();
    return Status::Ok();
  };
  Result<NDArray> got = compute(a + 1, options);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  Result<NDArray> want = compute(random::random({400, 100}, {20, 100}, 2, ThreadsSpec(spec)) + 1);
  ASSERT_TRUE(want.ok());
  EXPECT_EQ(std::memcmp(got->data(), want->data(), want->nbytes()), 0);
  if (Rank() != 0) return;
  int retried = 0;
  for (const TaskEndEvent& e : rec->events) {
    if (e.attempts > 1) {
      ++retried;
      EXPECT_NE(e.worker, 1) << "a retry ran on the rank that failed";
    }
    if (e.worker == 1) {
      EXPECT_GT(e.attempts, 1);
    }
  }
  EXPECT_GT(retried, 0);
}

// A task that fails for good fails the compute on every rank with the same
// error, and the store stays visibly incomplete.
TEST(MpiTest, FatalErrorReachesEveryRankAndLeavesStoreIncomplete) {
  SharedDir dir;
  Spec spec = MpiSpec(TierChoice::kAuto, "");
  Array a = random::random({40, 10}, {5, 10}, 2, spec);
  ComputeOptions options;
  options.fault_injector = testing_util::FailStoreRow(5);
  Result<NDArray> r = compute(to_zarr(a, dir.path() + "/out.zarr"), options);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(r.status().message().find("task 5.0 of to_zarr"), std::string_view::npos)
      << r.status().ToString();
  EXPECT_TRUE(std::filesystem::exists(dir.path() + "/out.zarr/.strata-incomplete"));
  EXPECT_FALSE(std::filesystem::exists(dir.path() + "/out.zarr/.zarray"));
}

// The block exchange on its own. Block b (of six 2x6 blocks) lives on rank
// b % size, except block 4, which its owner never got. Every rank reads, in
// one GetRegions, a slice of every other block into a strided destination:
// the owners answer each batch region after region. A batch whose first
// region is block 4 fails naming it and its owner, and the owner stops at the
// same region as the reader: the next batch from it still reads right.
TEST(MpiTest, BlockServerAnswersBatchesAndStopsAtAMissingBlock) {
  ASSERT_TRUE(mpi::Init().ok());
  const int size = mpi::Size();
  const Shape shape{12, 6};
  const ChunkGrid grid = *ChunkGrid::Regular(shape, {2, 6});
  auto pool = MemoryPool::Default()->NewChild({"test", 0});
  MpiIntermediateStore store(
      0, grid, DTypeId::kFloat64,
      std::make_unique<MemoryIntermediateStore>("blocks", DTypeId::kFloat64, pool),
      [size](Index linear) { return static_cast<int>(linear % size); }, pool);
  NDArray whole = *NDArray::Allocate(*pool, DTypeId::kFloat64, shape);
  FillSynthetic(whole.view(), Box::FromShape(shape), shape, 3);
  for (Index b = 0; b < 6; ++b) {
    if (b % size != Rank() || b == 4) continue;
    NDArray a = *NDArray::CopyOf(*pool, whole.view().Slice(Box({2 * b, 0}, {2, 6})));
    ASSERT_TRUE(store.Put(std::vector<Index>{b, 0}, std::move(a), *pool).ok());
  }
  BlockServer server({&store}, pool);
  server.Start();
  Barrier();

  // Columns `first`..`first`+3 of each block's rows, side by side in a 12x4
  // array.
  auto read = [&](std::vector<Index> blocks, Index first, NDArray& got) {
    std::vector<IntermediateStore::RegionRead> reads;
    for (Index b : blocks) {
      reads.push_back(
          {Shape{b, 0}, Box({0, first}, {2, 4}), got.view().Slice(Box({2 * b, 0}, {2, 4}))});
    }
    return store.GetRegions(reads, *pool);
  };
  auto expect_rows = [&](const NDArray& got, Index b, Index first) {
    EXPECT_TRUE(ArraysEqual(got.view().Slice(Box({2 * b, 0}, {2, 4})),
                            whole.view().Slice(Box({2 * b, first}, {2, 4}))))
        << "block " << b << " on rank " << Rank();
  };
  NDArray got = *NDArray::Zeros(*pool, DTypeId::kFloat64, {12, 4});
  Status s = read({0, 1, 2, 3, 5}, 1, got);
  ASSERT_TRUE(s.ok()) << s.ToString();
  for (Index b : {0, 1, 2, 3, 5}) expect_rows(got, b, 1);

  const int owner = 4 % size;
  if (Rank() != owner && size > 1) {
    NDArray again = *NDArray::Zeros(*pool, DTypeId::kFloat64, {12, 4});
    s = read({4, 4 - size}, 1, again);  // both held by `owner`, the missing one first
    EXPECT_FALSE(s.ok());
    EXPECT_NE(s.message().find(fmt::format("fetching block 4.0 from rank {}", owner)),
              std::string_view::npos)
        << s.ToString();
    s = read({4 - size}, 2, again);  // not the region after the missing one
    ASSERT_TRUE(s.ok()) << s.ToString();
    expect_rows(again, 4 - size, 2);
  }
  Barrier();
  if (Rank() == 0) ASSERT_TRUE(BlockServer::StopAll().ok());
  EXPECT_TRUE(server.Join().ok());
}

// The IntermediateStore conformance suite over the mpi tier: block b lives
// on rank b % size (which alone puts and erases it), every rank reads every
// block, the ones held elsewhere as MPI messages through their owner's
// BlockServer.
class ServedMpiTier : public testing_util::ForwardingStore {
 public:
  static Result<std::unique_ptr<IntermediateStore>> Make(const std::string& dir,
                                                         const ChunkGrid& grid, DType dtype) {
    STRATA_RETURN_IF_ERROR(mpi::Init());
    auto t = std::unique_ptr<ServedMpiTier>(new ServedMpiTier());
    const int size = mpi::Size();
    t->pool_ = MemoryPool::Default()->NewChild({"mpi tier", 0});
    t->store_ = std::make_unique<MpiIntermediateStore>(
        0, grid, dtype,
        std::make_unique<MemoryIntermediateStore>("mpi", dtype, t->pool_, nullptr,
                                                  dir + "/spill"),
        [size](Index linear) { return static_cast<int>(linear % size); }, t->pool_);
    t->target_ = t->store_.get();
    t->server_ = std::make_unique<BlockServer>(std::vector<MpiIntermediateStore*>{t->store_.get()},
                                               t->pool_);
    t->server_->Start();
    return std::unique_ptr<IntermediateStore>(std::move(t));
  }
  ~ServedMpiTier() override {
    mpi::Barrier().IgnoreError();
    if (Rank() == 0) BlockServer::StopAll().IgnoreError();
    server_->Join().IgnoreError();
  }

 private:
  ServedMpiTier() = default;
  std::shared_ptr<MemoryPool> pool_;
  std::unique_ptr<MpiIntermediateStore> store_;
  std::unique_ptr<BlockServer> server_;
};

testing_util::TierUnderTest MpiTier() {
  testing_util::TierUnderTest t;
  t.name = "mpi";
  t.make = &ServedMpiTier::Make;
  t.puts_here = [](Index linear) { return linear % mpi::Size() == Rank(); };
  t.sync = [] { Barrier(); };
  return t;
}

INSTANTIATE_TEST_SUITE_P(Mpi, IntermediateStoreConformance, ::testing::Values(MpiTier()),
                         testing_util::TierName);

// Ranks that build different plans are told so, on every rank.
TEST(MpiTest, DifferentPlansOnRanksAreAnError) {
  Spec spec = MpiSpec(TierChoice::kAuto, "");
  Array a = random::random({40, 10}, {5 + (Rank() == 1 ? 1 : 0), 10}, 2, spec);
  Result<NDArray> r = compute(a + 1);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("different plan"), std::string_view::npos)
      << r.status().ToString();
}

}  // namespace
}  // namespace strata
