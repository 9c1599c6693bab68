// The memory contract as the tests check it, from the history file a user
// would get: RunTight plans an expression under a generous budget to learn
// its largest per-task projection P, rebuilds it under allowed_mem = P plus a
// small margin (so the budget binds), runs it with a HistoryCallback writing
// JSON lines and checks every "task" and "op" line: measured peak <=
// projection <= allowed_mem, and the largest task within the margin of the
// budget. Shared by memory_contract_test.cc and memory_contract_extras_test.cc.
#ifndef STRATA_API_MEMORY_CONTRACT_TEST_UTIL_H_
#define STRATA_API_MEMORY_CONTRACT_TEST_UTIL_H_

#include <gtest/gtest.h>

#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "strata/base/temp_dir.h"
#include "strata/strata.h"

namespace strata::testing_util {

inline constexpr int64_t kMB = 1'000'000;
inline constexpr int64_t kMargin = 2 * kMB;

inline Spec BudgetSpec(int64_t allowed) {
  Spec spec;
  spec.allowed_mem = allowed;
  spec.reserved_mem = "10MB";
  spec.workers = 2;
  return spec;
}

// Builds the arrays to compute under a spec.
using Builder = std::function<std::vector<Array>(const Spec&)>;

// The largest per-task projection of the plan of `arrays`.
inline int64_t MaxProjection(const std::vector<Array>& arrays) {
  Result<std::shared_ptr<const Plan>> p = plan(arrays);
  EXPECT_TRUE(p.ok()) << p.status().ToString();
  if (!p.ok()) return 0;
  int64_t most = 0;
  for (const PlannedOp& op : (*p)->ops()) {
    if (op.materialized) most = std::max(most, op.projected_mem);
  }
  return most;
}

// The history file: one JSON object per line.
inline std::vector<nlohmann::json> ReadJsonLines(const std::string& path) {
  std::vector<nlohmann::json> lines;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    nlohmann::json j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (!j.is_object()) {
      ADD_FAILURE() << "not a JSON object: " << line;
      continue;
    }
    lines.push_back(std::move(j));
  }
  return lines;
}

// Fields of a history line, failing the test (instead of throwing) when one
// is missing or of another type.
inline int64_t Int(const nlohmann::json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_number_integer()) {
    ADD_FAILURE() << "no integer \"" << key << "\" in " << j.dump();
    return 0;
  }
  return it->get<int64_t>();
}

inline std::string Text(const nlohmann::json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_string()) {
    ADD_FAILURE() << "no string \"" << key << "\" in " << j.dump();
    return "";
  }
  return it->get<std::string>();
}

struct History {
  int64_t allowed = 0;
  int64_t tasks = 0;
  int64_t max_projected = 0;
  int64_t max_measured = 0;
  std::vector<NDArray> results;
};

// Runs `build` under a budget just above its largest projection and checks
// the history file; returns what it saw. `min_measured` is the size of a
// block some task must hold whole (the measured peak must reach it, so the
// measurement is real).
inline History RunTight(const Builder& build, int64_t min_measured) {
  History h;
  // Some ops plan smaller tasks under a smaller budget (take groups fewer
  // blocks per task, matmul splits its output): shrink the budget until the
  // plan no longer changes.
  int64_t need = MaxProjection(build(BudgetSpec(4000 * kMB)));
  for (int round = 0; round < 5; ++round) {
    const int64_t again = MaxProjection(build(BudgetSpec(need + kMargin)));
    if (again == need || again == 0) break;
    need = again;
  }
  EXPECT_GE(need, min_measured);
  const Spec spec = BudgetSpec(need + kMargin);
  std::vector<Array> arrays = build(spec);
  TempDir dir;
  const std::string path = dir.path() + "/history.jsonl";
  auto history = std::make_shared<HistoryCallback>(path);
  EXPECT_TRUE(history->status().ok()) << history->status().ToString();
  ComputeOptions options;
  options.callbacks.push_back(history);
  Result<std::vector<NDArray>> r = compute(arrays, options);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  if (!r.ok()) return h;
  h.results = std::move(r).value();
  history.reset();  // closes the file

  int64_t announced_tasks = -1;
  bool ended_ok = false;
  int64_t op_lines = 0;
  for (const nlohmann::json& j : ReadJsonLines(path)) {
    const std::string event = Text(j, "event");
    if (event == "compute_start") {
      h.allowed = Int(j, "allowed_mem");
      announced_tasks = Int(j, "tasks");
    } else if (event == "task") {
      const int64_t projected = Int(j, "projected_mem");
      const int64_t measured = Int(j, "measured_peak");
      const std::string where =
          Text(j, "op") + " block " + j.value("block", nlohmann::json()).dump();
      EXPECT_GT(measured, 0) << where;
      EXPECT_LE(measured, projected) << where;
      EXPECT_LE(projected, h.allowed) << where;
      h.max_projected = std::max(h.max_projected, projected);
      h.max_measured = std::max(h.max_measured, measured);
      ++h.tasks;
    } else if (event == "op") {
      const std::string where = Text(j, "op");
      EXPECT_LE(Int(j, "measured_peak"), Int(j, "projected_mem")) << where;
      EXPECT_LE(Int(j, "projected_mem"), h.allowed) << where;
      ++op_lines;
    } else if (event == "compute_end") {
      ended_ok = j.value("ok", false);
    }
  }
  EXPECT_EQ(h.allowed, need + kMargin);
  EXPECT_TRUE(ended_ok);
  EXPECT_GT(op_lines, 0);
  EXPECT_GT(h.tasks, 0);
  EXPECT_EQ(h.tasks, announced_tasks);
  // Tight: the largest task uses the budget but for the margin.
  EXPECT_GE(h.max_projected, h.allowed - kMargin);
  EXPECT_GE(h.max_measured, min_measured);
  return h;
}

}  // namespace strata::testing_util

#endif  // STRATA_API_MEMORY_CONTRACT_TEST_UTIL_H_
