// Helpers for API tests: a callback that records every task, reference
// computations on NDArrays, and random chunkings.
#ifndef STRATA_API_TEST_UTIL_H_
#define STRATA_API_TEST_UTIL_H_

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <random>
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

// Records task events; checks measured <= projected <= allowed.
class RecordingCallback : public Callback {
 public:
  void OnTaskEnd(const TaskEndEvent& e) override { events.push_back(e); }
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

#endif  // STRATA_API_TEST_UTIL_H_
