// Spec: the resources a computation may use, shared by every array built
// under it (as in Cubed).
//
//   Spec spec;
//   spec.work_dir = "tmp";
//   spec.allowed_mem = "400MB";      // per task, reserved_mem included
//   spec.total_system_mem = "16GB";  // default: 80% of min(RAM, cgroup limit)
//
// Sizes are ByteSize values: "400MB", "2GiB" or a plain byte count. They are
// parsed when the spec is validated (plan() and compute() do it first), so a
// typo is reported as an error naming the setting, not a crash.
//
// Thread-safety: a value; share as std::shared_ptr<const Spec>.
#ifndef STRATA_PLAN_SPEC_H_
#define STRATA_PLAN_SPEC_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "strata/base/status.h"

namespace strata {

// A size given as bytes or as text such as "400MB".
class ByteSize {
 public:
  ByteSize() = default;
  ByteSize(int64_t bytes) : bytes_(bytes) {}                   // NOLINT
  ByteSize(int bytes) : bytes_(bytes) {}                       // NOLINT
  ByteSize(const char* text) : text_(text) {}                  // NOLINT
  ByteSize(std::string text) : text_(std::move(text)) {}       // NOLINT

  bool is_set() const { return bytes_.has_value() || text_.has_value(); }
  // The size in bytes; InvalidArgument naming `setting` for bad text.
  Result<int64_t> Resolve(std::string_view setting) const;

 private:
  std::optional<int64_t> bytes_;
  std::optional<std::string> text_;
};

// kDask, kRay: Strata's tasks on a scheduler that is not Strata's (a Dask
// distributed.Client, a Ray cluster), driven from Python
// (python/strata/_dask.py, _ray.py) through runtime/external_run.h; planned
// as threads are, with total_system_mem and workers the cluster's (not
// capped by this machine's).
enum class ExecutorKind { kInline, kThreads, kProcesses, kMpi, kDask, kRay };
// kSpill: the memory tier with RAM for only half of the intermediates, so
// that blocks spill per chunk (for tests and experiments).
enum class TierChoice { kAuto, kMemory, kDisk, kObject, kSpill };

std::string_view ExecutorName(ExecutorKind kind);
// True for the executors whose tasks an external scheduler runs (dask, ray).
bool IsExternalExecutor(ExecutorKind kind);
std::string_view TierChoiceName(TierChoice tier);
Result<ExecutorKind> ParseExecutor(std::string_view name);
Result<TierChoice> ParseTierChoice(std::string_view name);

struct Spec {
  // Where disk-tier intermediates go (a directory; created on demand). Empty:
  // a fresh directory under $TMPDIR, removed after each compute.
  std::string work_dir;
  // Memory one task may use, reserved_mem included. Default 2 GB.
  ByteSize allowed_mem;
  // Memory a task needs before touching any chunk (the process, libraries,
  // stacks). Default 16 MB.
  ByteSize reserved_mem;
  // Memory all running tasks plus resident intermediates may use together.
  // Default: 80% of min(physical RAM, cgroup limit); under the mpi executor,
  // the sum of that over the hosts of all ranks.
  ByteSize total_system_mem;
  ExecutorKind executor = ExecutorKind::kThreads;
  // Worker threads/processes; 0: the number of cores. Under the mpi
  // executor, every rank is one worker (this is ignored).
  int workers = 0;
  // Where intermediates go; kAuto lets the planner choose per stage.
  TierChoice tier = TierChoice::kAuto;
  // Object-store prefix for the object tier ("s3://bucket/prefix"), if any.
  std::string object_store_url;
  // Retries of a task after a transient (retryable) error.
  int retries = 2;
  // Straggler backups: a task running longer than backup_slowdown x the
  // median time of its op's completed tasks, once half the tasks of an op of
  // at least 10 are done, gets a second attempt on another worker; the first
  // to finish wins and the other's result is discarded (threads, processes,
  // mpi; the inline executor has one worker).
  bool backup_tasks = true;
  double backup_slowdown = 3.0;
  // processes and mpi: a worker whose heartbeat (sent by a thread of its
  // own, so a long task is not mistaken for a hung one) stops for this many
  // seconds is hung. A worker process is killed and its task retried on
  // another; under mpi, which cannot lose a rank, the job ends with an
  // error naming the rank.
  double heartbeat_timeout = 60;
  // Optimizer passes (each can be switched off; see plan/planner.h).
  bool fuse = true;
  // The dask and ray executors: the address of the scheduler or cluster the
  // arrays compute on (the package finds the client connected to it).
  std::string scheduler;
  // The ray executor: the capacity of the cluster's object store, where its
  // memory-tier blocks live; the RAM tier holds no more than this. Unset: no
  // bound beside total_system_mem's.
  ByteSize ram_tier_mem;
};

// A Spec with every size resolved and every default filled in.
struct ResolvedSpec {
  std::string work_dir;  // empty: a temporary directory per compute
  int64_t allowed_mem = 0;
  int64_t reserved_mem = 0;
  int64_t total_system_mem = 0;
  ExecutorKind executor = ExecutorKind::kThreads;
  int workers = 1;
  TierChoice tier = TierChoice::kAuto;
  std::string object_store_url;
  int retries = 2;
  bool backup_tasks = true;
  double backup_slowdown = 3.0;
  double heartbeat_timeout = 60;
  bool fuse = true;
  int64_t ram_tier_mem = 0;  // 0: unbounded (Spec::ram_tier_mem)

  // What one task may use for chunks and scratch: allowed_mem - reserved_mem.
  // The one place the task budget is derived; the planner's check, the api's
  // chunk choices and the executors' pools all take it from here.
  int64_t task_budget() const { return allowed_mem - reserved_mem; }

  // What was adjusted, for the caller to show (e.g. a total_system_mem larger
  // than the machine's memory, lowered to it).
  std::vector<std::string> warnings;
};

// InvalidArgument naming the setting at fault (bad size text, allowed_mem <=
// reserved_mem, allowed_mem > total_system_mem, workers < 0, retries < 0,
// backup_slowdown <= 1, heartbeat_timeout <= 0).
// Under the mpi executor this is collective (total_system_mem is summed over
// the ranks' hosts): plan() calls it once, and the plan carries the result.
Result<ResolvedSpec> ResolveSpec(const Spec& spec);

// The same checks on this process alone, with no collectives (under mpi,
// total_system_mem is this host's default): for a usage check before any
// plan (the CLI).
Status ValidateSpec(const Spec& spec);

// `spec` resolved on this process alone, or the defaults' resolution when it
// does not resolve (plan() reports why). For the API while it builds graphs
// (auto chunks, reduction fan-in), before a plan exists.
ResolvedSpec ResolveSpecLocally(const Spec& spec);

inline constexpr int64_t kDefaultAllowedMem = 2'000'000'000;
inline constexpr int64_t kDefaultReservedMem = 16'000'000;

}  // namespace strata

#endif  // STRATA_PLAN_SPEC_H_
