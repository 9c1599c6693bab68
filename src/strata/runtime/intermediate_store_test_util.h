// One conformance suite for every IntermediateStore (as TensorStore's
// kvstore/test_util and Arrow's filesystem/test_util do for their
// interfaces): blocks put in every way a task puts them read back equal by
// every way a task reads them (Get, View, GetRegion, GetRegions into strided
// destinations), Put is publish-once (a second Put keeps the first copy,
// counts nothing twice, and interleaved attempts leave one), Erase frees, Cleanup
// leaves nothing behind, and the byte counters say what moved.
//
// A test binary instantiates it with the tiers it can make:
//
//   INSTANTIATE_TEST_SUITE_P(Memory, IntermediateStoreConformance,
//                            ::testing::Values(MemoryTier()), TierName);
//
// (the suite's tests live in intermediate_store_test_util.cc, compiled into
// each binary that instantiates it).
#ifndef STRATA_RUNTIME_INTERMEDIATE_STORE_TEST_UTIL_H_
#define STRATA_RUNTIME_INTERMEDIATE_STORE_TEST_UTIL_H_

#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <string>

#include "strata/runtime/intermediate_store.h"

namespace strata::testing_util {

struct TierUnderTest {
  std::string name;
  // A store for blocks of `grid` and `dtype`; `dir` is an empty directory
  // for whatever files it writes (it may create subdirectories).
  std::function<Result<std::unique_ptr<IntermediateStore>>(const std::string& dir,
                                                           const ChunkGrid& grid, DType dtype)>
      make;
  // Whether this process puts block `linear` (under mpi, only its owner
  // does). Null: every block.
  std::function<bool(Index linear)> puts_here;
  // Called between the puts and the reads, and before erases (under mpi, a
  // barrier). Null: nothing.
  std::function<void()> sync;
  // resident_bytes() counts every block Put and not erased (false for tiers
  // that keep nothing in RAM, or count a shared store's usage).
  bool counts_resident = true;
  // bytes_written() counts at least every byte Put (disk and object tiers);
  // false: it counts only what spilled.
  bool writes_everything = false;
  // Some blocks are expected to spill (bytes_written() > 0).
  bool spills = false;
  // Files or objects the store left after Cleanup (must be 0). Null: the
  // suite counts the files under `dir`.
  std::function<int64_t()> leftovers;
};

// A tier under test that owns what keeps it working (a ShmStore, a
// BlockServer) beside the store it forwards every call to.
class ForwardingStore : public IntermediateStore {
 public:
  Status Put(std::span<const Index> b, NDArray data, MemoryPool& p) override {
    return target_->Put(b, std::move(data), p);
  }
  Result<std::shared_ptr<const NDArray>> Get(std::span<const Index> b, MemoryPool& p) override {
    return target_->Get(b, p);
  }
  Result<BlockView> View(std::span<const Index> b, MemoryPool& p) override {
    return target_->View(b, p);
  }
  Status GetRegion(std::span<const Index> b, const Box& r, const ArrayView& out,
                   MemoryPool& p) override {
    return target_->GetRegion(b, r, out, p);
  }
  Status GetRegions(std::span<const RegionRead> reads, MemoryPool& p) override {
    return target_->GetRegions(reads, p);
  }
  Result<NDArray> NewBlock(std::span<const Index> b, DType d, Shape s, MemoryPool& p) override {
    return target_->NewBlock(b, d, std::move(s), p);
  }
  Status Erase(std::span<const Index> b) override { return target_->Erase(b); }
  int64_t resident_bytes() const override { return target_->resident_bytes(); }
  int64_t bytes_written() const override { return target_->bytes_written(); }
  Status Cleanup() override { return target_->Cleanup(); }

 protected:
  IntermediateStore* target_ = nullptr;  // owned by the subclass
};

inline void PrintTo(const TierUnderTest& t, std::ostream* os) { *os << t.name; }

inline std::string TierName(const ::testing::TestParamInfo<TierUnderTest>& info) {
  return info.param.name;
}

class IntermediateStoreConformance : public ::testing::TestWithParam<TierUnderTest> {};

}  // namespace strata::testing_util

#endif  // STRATA_RUNTIME_INTERMEDIATE_STORE_TEST_UTIL_H_
