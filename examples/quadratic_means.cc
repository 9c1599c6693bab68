// quadratic_means: Cubed's standard benchmark, written as a user would.
//
//   quadratic_means U.zarr V.zarr OUT.zarr [--allowed-mem SIZE] [--workers N]
//                   [--executor inline|threads|processes] [--work-dir DIR]
//                   [--history FILE]
//
// For u, v of shape (t, y, x) it writes to OUT a Zarr v2 array of shape
// (3, y, x) stacking mean(u^2), mean(v^2) and mean(u*v) over axis 0, and
// prints the plan's size and the peak memory measured per op.
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "strata/strata.h"

namespace {

int Usage(const char* why) {
  std::fprintf(stderr,
               "quadratic_means: error: %s\n"
               "usage: quadratic_means U.zarr V.zarr OUT.zarr [--allowed-mem SIZE] [--workers N] "
               "[--executor inline|threads|processes] [--work-dir DIR] [--history FILE]\n",
               why);
  return 2;
}

// Records, per op, the largest measured and projected task memory.
class PeakPerOp : public strata::Callback {
 public:
  void OnTaskEnd(const strata::TaskEndEvent& e) override {
    auto& [measured, projected, tasks] = ops_[e.op->node->op_name];
    measured = std::max(measured, e.measured_peak);
    projected = std::max(projected, e.projected_mem);
    ++tasks;
  }
  void OnComputeEnd(const strata::Plan&, const strata::Status&,
                    const strata::ComputeSummary& summary) override {
    zarr_bytes_read_ = summary.zarr_bytes_read;
  }
  void Print() const {
    // Stored bytes of input chunks read: the inputs' stored size when each
    // chunk is read once (fuse_siblings), twice that without it.
    std::printf("  read %lld bytes of stored Zarr chunks\n",
                static_cast<long long>(zarr_bytes_read_));
    for (const auto& [name, v] : ops_) {
      auto [measured, projected, tasks] = v;
      std::printf("  %-18s %5lld tasks  measured peak %8.1f MB  projected %8.1f MB\n",
                  name.c_str(), static_cast<long long>(tasks), measured / 1e6, projected / 1e6);
    }
  }

 private:
  std::map<std::string, std::tuple<int64_t, int64_t, int64_t>> ops_;
  int64_t zarr_bytes_read_ = 0;
};

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> positional;
  strata::Spec spec;
  spec.allowed_mem = "2GB";
  std::string history;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    auto value = [&]() -> const char* { return i + 1 < argc ? argv[++i] : nullptr; };
    if (arg == "--allowed-mem") {
      const char* v = value();
      if (!v) return Usage("--allowed-mem needs a size");
      spec.allowed_mem = std::string(v);
    } else if (arg == "--workers") {
      const char* v = value();
      if (!v || std::atoi(v) < 1) return Usage("--workers needs a positive number");
      spec.workers = std::atoi(v);
    } else if (arg == "--executor") {
      const char* v = value();
      if (!v) return Usage("--executor needs inline, threads or processes");
      strata::Result<strata::ExecutorKind> kind = strata::ParseExecutor(v);
      if (!kind.ok()) return Usage(std::string(kind.status().message()).c_str());
      spec.executor = *kind;
    } else if (arg == "--work-dir") {
      const char* v = value();
      if (!v) return Usage("--work-dir needs a directory");
      spec.work_dir = v;
    } else if (arg == "--history") {
      const char* v = value();
      if (!v) return Usage("--history needs a file");
      history = v;
    } else if (!arg.empty() && arg[0] == '-') {
      return Usage(("unknown option " + arg).c_str());
    } else {
      positional.push_back(arg);
    }
  }
  if (positional.size() != 3) return Usage("expected U.zarr V.zarr OUT.zarr");

  strata::Array u = strata::from_zarr(positional[0], spec);
  strata::Array v = strata::from_zarr(positional[1], spec);
  strata::Array means = strata::stack(
      {strata::mean(u * u, {0}), strata::mean(v * v, {0}), strata::mean(u * v, {0})}, 0);
  strata::ToZarrOptions out_options;
  out_options.overwrite = true;
  strata::Array out = strata::to_zarr(means, positional[2], out_options);

  strata::Result<std::shared_ptr<const strata::Plan>> plan = strata::plan({out});
  if (!plan.ok()) {
    std::fprintf(stderr, "quadratic_means: error: %s\n", std::string(plan.status().message()).c_str());
    return 1;
  }
  std::printf("plan: %lld tasks\n", static_cast<long long>((*plan)->total_tasks()));

  strata::ComputeOptions options;
  auto peaks = std::make_shared<PeakPerOp>();
  options.callbacks.push_back(peaks);
  options.callbacks.push_back(std::make_shared<strata::ProgressCallback>());
  if (!history.empty()) options.callbacks.push_back(std::make_shared<strata::HistoryCallback>(history));
  strata::Result<strata::NDArray> result = strata::compute(out, options);
  if (!result.ok()) {
    std::fprintf(stderr, "quadratic_means: error: %s\n",
                 std::string(result.status().message()).c_str());
    return 1;
  }
  std::printf("wrote %s\n", positional[2].c_str());
  peaks->Print();
  if (std::getenv("STRATA_ALLOC_STATS")) {
    auto st = strata::MemoryPool::Default()->allocator()->stats();
    std::printf("allocator: %lld fresh (%.1f MB), %lld reused\n", (long long)st.fresh_allocations,
                st.fresh_bytes / 1e6, (long long)st.reused_allocations);
  }
  return 0;
}
