// Helpers for API tests: a callback that records every task, reference
// computations on NDArrays, and random chunkings.
#ifndef STRATA_API_API_TEST_UTIL_H_
#define STRATA_API_API_TEST_UTIL_H_

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "strata/strata.h"

namespace strata::testing_util {

// The spec most tests use: a 64 MB task budget, 1 MB reserved, 2 workers.
inline Spec SmallSpec(ExecutorKind executor = ExecutorKind::kThreads, int workers = 2) {
  Spec spec;
  spec.allowed_mem = "64MB";
  spec.reserved_mem = "1MB";
  spec.workers = workers;
  spec.executor = executor;
  return spec;
}

// A deep copy of `a` (asarray takes its array by value).
inline NDArray Copy(const NDArray& a) {
  return *NDArray::CopyOf(*MemoryPool::Default(), a.view());
}

// A copy of `a` as a lazy array of chunks `chunks`, under SmallSpec().
inline Array Lazy(const NDArray& a, Shape chunks) {
  return asarray(Copy(a), std::move(chunks), SmallSpec());
}

// Records task events; checks measured <= projected <= allowed.
class RecordingCallback : public Callback {
 public:
  void OnTaskEnd(const TaskEndEvent& e) override {
    events.push_back(e);
    depths.push_back(e.op->depth);  // e.op is valid only during the callback
  }
  void OnComputeEnd(const Plan& plan, const Status& status, const ComputeSummary& s) override {
    summary = s;
    allowed = plan.spec().allowed_mem;
  }
  // Every task's measured peak within its projection, and the projection
  // within allowed_mem.
  void ExpectWithinBudget() const {
    ASSERT_FALSE(events.empty());
    for (const TaskEndEvent& e : events) {
      EXPECT_LE(e.measured_peak, e.projected_mem)
          << e.op_name << " block " << ShapeToString(e.block);
      EXPECT_LE(e.projected_mem, allowed) << e.op_name;
    }
  }
  std::vector<TaskEndEvent> events;
  std::vector<int> depths;  // of each event's op
  ComputeSummary summary;
  int64_t allowed = 0;
};

// The array's values computed whole, as one chunk (the reference).
inline NDArray Whole(const Array& a) {
  Spec spec = *a.spec();
  Result<NDArray> r = compute(a);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? std::move(r).value() : NDArray();
}

// Random chunk shape for `shape`: each axis 1..extent (ragged edges likely).
inline Shape RandomChunks(const Shape& shape, std::mt19937& rng) {
  Shape c(shape.size());
  for (size_t i = 0; i < shape.size(); ++i) {
    Index hi = std::max<Index>(1, shape[i]);
    c[i] = std::uniform_int_distribution<Index>(1, hi)(rng);
  }
  return c;
}

// Computes `a` (on the executor of its spec); with fuse false, without the
// planner's fusion passes (PlanOptions::fuse).
inline NDArray Compute(const Array& a, bool fuse = true) {
  EXPECT_TRUE(a.ok()) << a.status().ToString();
  PlanOptions p;
  p.fuse = fuse;
  Result<NDArray> r = compute(a, {}, p);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? std::move(r).value() : NDArray();
}

// Chunk shapes to try for `shape`: whole, size-1, ragged (about two thirds of
// each axis, so the last chunk is shorter), with `oversized` one larger than
// the array, then `random_count` random ones; no shape twice.
inline std::vector<Shape> Chunkings(const Shape& shape, uint32_t seed, int random_count = 2,
                                    bool oversized = false) {
  std::vector<Shape> out;
  Shape whole(shape.size()), ones(shape.size(), 1), ragged(shape.size()), over(shape.size());
  for (size_t i = 0; i < shape.size(); ++i) {
    whole[i] = std::max<Index>(1, shape[i]);
    ragged[i] = std::max<Index>(1, (2 * shape[i] + 2) / 3);
    over[i] = shape[i] + 3;
  }
  std::set<Shape> seen;
  for (const Shape* c : {&whole, &ones, &ragged}) {
    if (seen.insert(*c).second) out.push_back(*c);
  }
  if (oversized && seen.insert(over).second) out.push_back(over);
  std::mt19937 rng(seed);
  for (int t = 0; t < random_count; ++t) {
    Shape c = RandomChunks(shape, rng);
    if (seen.insert(c).second) out.push_back(c);
  }
  return out;
}

// Calls f(index) for every index of `shape` in C order (never for a zero-size
// shape; once for rank 0).
template <typename F>
void ForEachIndex(const Shape& shape, F f) {
  if (NumElements(shape) == 0) return;
  Shape idx(shape.size(), 0);
  do {
    f(idx);
  } while (NextIndex(idx, shape));
}

// A fault injector (ComputeOptions::fault_injector) that fails the store
// task writing chunk row `row` of its target (a task may write several rows
// of chunks), every attempt, with DataLoss "injected".
inline auto FailStoreRow(Index row) {
  return [row](const PlannedOp& op, std::span<const Index> block, int) {
    if (op.node->kind != NodeKind::kStore) return Status::Ok();
    const Box box = op.node->grid.BlockBox(block);
    const Index chunk = op.node->target->metadata().chunk_shape[0];
    if (box.origin[0] <= row * chunk && row * chunk < box.origin[0] + box.shape[0]) {
      return DataLossError("injected");
    }
    return Status::Ok();
  };
}

// Every file under `dir` (by its path relative to `dir`) with its contents,
// for "untouched" checks and to compare the outputs of two runs. Empty when
// `dir` does not exist.
inline std::map<std::string, std::string> Snapshot(const std::string& dir) {
  std::map<std::string, std::string> out;
  std::error_code ec;
  if (!std::filesystem::exists(dir, ec)) return out;
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir)) {
    if (!e.is_regular_file()) continue;
    std::ifstream in(e.path(), std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    out[std::filesystem::relative(e.path(), dir).string()] = ss.str();
  }
  return out;
}

}  // namespace strata::testing_util

#endif  // STRATA_API_API_TEST_UTIL_H_
