// The coordinator's cost per task: sum(ones((N,), chunks=(1,))) — N source
// blocks of one element each, every one its own task, and the rounds of the
// tree reduction over them — planned and run in this process on the threads,
// processes or inline executor. The work per task is nothing, so what is
// measured is Strata's own cost: planning, scheduling, dispatch, bookkeeping.
// The source is fused into the reduction's first round, so the plan has few
// tasks, each over many blocks: the unit that grows is the block. Prints one
// JSON line: blocks, plan tasks, plan and compute seconds, microseconds per
// block, the peak RSS of this process (the coordinator; the processes
// executor's workers are measured by bench/coordinator_scale.py), its RSS
// before planning and after, and RSS bytes per block.
//
//   coordinator_scale --blocks 1000000 [--executor threads|processes|inline] [--workers 2]
#include <sys/resource.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <string>

#include "strata/strata.h"

namespace {

// Resident bytes of this process now (/proc/self/statm).
int64_t CurrentRssBytes() {
  std::ifstream statm("/proc/self/statm");
  int64_t pages = 0, resident = 0;
  statm >> pages >> resident;
  return resident * 4096;
}

int64_t PeakRssBytes() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<int64_t>(ru.ru_maxrss) * 1024;
}

}  // namespace

int main(int argc, char** argv) {
  int64_t blocks = 100000;
  std::string executor = "threads";
  int workers = 2;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--blocks") {
      blocks = std::atoll(argv[i + 1]);
    } else if (flag == "--executor") {
      executor = argv[i + 1];
    } else if (flag == "--workers") {
      workers = std::atoi(argv[i + 1]);
    } else {
      std::cerr << "coordinator_scale: unknown flag " << flag << "\n";
      return 2;
    }
  }
  strata::Spec spec;
  spec.allowed_mem = "100MB";
  spec.workers = workers;
  if (executor == "threads") {
    spec.executor = strata::ExecutorKind::kThreads;
  } else if (executor == "processes") {
    spec.executor = strata::ExecutorKind::kProcesses;
  } else if (executor == "inline") {
    spec.executor = strata::ExecutorKind::kInline;
  } else {
    std::cerr << "coordinator_scale: unknown executor " << executor << "\n";
    return 2;
  }
  const int64_t rss_start = CurrentRssBytes();
  const auto t0 = std::chrono::steady_clock::now();
  strata::Array x = strata::ones({blocks}, {1}, strata::DTypeId::kFloat64, spec);
  strata::Array total = strata::sum(x);
  auto plan = strata::plan({total});
  const auto t1 = std::chrono::steady_clock::now();
  if (!plan.ok()) {
    std::cerr << "coordinator_scale: " << plan.status().ToString() << "\n";
    return 1;
  }
  const int64_t tasks = (*plan)->total_tasks();
  const int64_t rss_planned = CurrentRssBytes();
  auto result = strata::compute(total);
  const auto t2 = std::chrono::steady_clock::now();
  if (!result.ok()) {
    std::cerr << "coordinator_scale: " << result.status().ToString() << "\n";
    return 1;
  }
  const double value = *static_cast<const double*>(static_cast<const void*>(result->data()));
  const double plan_s = std::chrono::duration<double>(t1 - t0).count();
  const double run_s = std::chrono::duration<double>(t2 - t1).count();
  const int64_t peak = PeakRssBytes();
  std::cout << "{\"executor\": \"" << executor << "\", \"workers\": " << workers
            << ", \"blocks\": " << blocks << ", \"tasks\": " << tasks << ", \"sum\": " << value
            << ", \"plan_s\": " << plan_s << ", \"compute_s\": " << run_s
            << ", \"us_per_block\": " << 1e6 * run_s / static_cast<double>(blocks)
            << ", \"rss_start_bytes\": " << rss_start << ", \"rss_planned_bytes\": " << rss_planned
            << ", \"peak_rss_bytes\": " << peak << ", \"bytes_per_block\": "
            << static_cast<double>(peak - rss_start) / static_cast<double>(blocks) << "}\n";
  return value == static_cast<double>(blocks) ? 0 : 1;
}
