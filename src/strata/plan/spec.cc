#include "strata/plan/spec.h"

#include <fmt/format.h>

#include "strata/base/byte_size.h"
#include "strata/base/mpi.h"
#include "strata/base/system_info.h"

namespace strata {

Result<int64_t> ByteSize::Resolve(std::string_view setting) const {
  if (bytes_) {
    if (*bytes_ < 0) {
      return InvalidArgumentError(fmt::format("{} must not be negative, got {}", setting, *bytes_));
    }
    return *bytes_;
  }
  if (text_) {
    Result<int64_t> parsed = ParseByteSize(*text_);
    if (!parsed.ok()) return parsed.status().WithContext(std::string(setting));
    return parsed;
  }
  return InvalidArgumentError(fmt::format("{} is not set", setting));
}

std::string_view ExecutorName(ExecutorKind kind) {
  switch (kind) {
    case ExecutorKind::kInline: return "inline";
    case ExecutorKind::kThreads: return "threads";
    case ExecutorKind::kProcesses: return "processes";
    case ExecutorKind::kMpi: return "mpi";
    case ExecutorKind::kDask: return "dask";
    case ExecutorKind::kRay: return "ray";
  }
  return "?";
}

bool IsExternalExecutor(ExecutorKind kind) {
  return kind == ExecutorKind::kDask || kind == ExecutorKind::kRay;
}

std::string_view TierChoiceName(TierChoice tier) {
  switch (tier) {
    case TierChoice::kAuto: return "auto";
    case TierChoice::kMemory: return "memory";
    case TierChoice::kDisk: return "disk";
    case TierChoice::kObject: return "object";
    case TierChoice::kSpill: return "spill";
  }
  return "?";
}

Result<ExecutorKind> ParseExecutor(std::string_view name) {
  for (ExecutorKind k : {ExecutorKind::kInline, ExecutorKind::kThreads, ExecutorKind::kProcesses,
                         ExecutorKind::kMpi, ExecutorKind::kDask, ExecutorKind::kRay}) {
    if (ExecutorName(k) == name) return k;
  }
  return InvalidArgumentError(fmt::format(
      "unknown executor '{}' (expected inline, threads, processes, mpi, dask or ray)", name));
}

Result<TierChoice> ParseTierChoice(std::string_view name) {
  for (TierChoice t :
       {TierChoice::kAuto, TierChoice::kMemory, TierChoice::kDisk, TierChoice::kObject,
        TierChoice::kSpill}) {
    if (TierChoiceName(t) == name) return t;
  }
  return InvalidArgumentError(
      fmt::format("unknown tier '{}' (expected auto, memory, disk, spill or object)", name));
}

namespace {

// `collective`: under mpi, join the other ranks (MPI_Init, the hosts' memory).
Result<ResolvedSpec> Resolve(const Spec& spec, bool collective) {
  ResolvedSpec r;
  r.work_dir = spec.work_dir;
  r.allowed_mem = kDefaultAllowedMem;
  r.reserved_mem = kDefaultReservedMem;
  r.total_system_mem = DefaultTotalSystemMemory();
  if (spec.executor == ExecutorKind::kMpi && collective) {
    // Collective: every rank resolves the same spec. total_system_mem is
    // the memory of all the ranks' hosts together.
    STRATA_RETURN_IF_ERROR(mpi::Init().WithContext("executor mpi"));
    if (!spec.total_system_mem.is_set()) {
      STRATA_ASSIGN_OR_RETURN(r.total_system_mem, mpi::SumOverHosts(r.total_system_mem));
    }
  }
  if (spec.allowed_mem.is_set()) {
    STRATA_ASSIGN_OR_RETURN(r.allowed_mem, spec.allowed_mem.Resolve("allowed_mem"));
  }
  if (spec.reserved_mem.is_set()) {
    STRATA_ASSIGN_OR_RETURN(r.reserved_mem, spec.reserved_mem.Resolve("reserved_mem"));
  }
  if (spec.ram_tier_mem.is_set()) {
    STRATA_ASSIGN_OR_RETURN(r.ram_tier_mem, spec.ram_tier_mem.Resolve("ram_tier_mem"));
    if (r.ram_tier_mem < 0) return InvalidArgumentError("ram_tier_mem must not be negative");
  }
  if (spec.total_system_mem.is_set()) {
    STRATA_ASSIGN_OR_RETURN(r.total_system_mem,
                            spec.total_system_mem.Resolve("total_system_mem"));
  }
  if (spec.total_system_mem.is_set() && spec.executor != ExecutorKind::kMpi &&
      !IsExternalExecutor(spec.executor)) {
    // More than the machine has cannot be admitted against: what it has is.
    // (Under mpi, dask and ray it is the memory of other machines too.)
    int64_t machine = PhysicalMemoryBytes();
    if (std::optional<int64_t> cgroup = CgroupMemoryLimitBytes(); cgroup && *cgroup < machine) {
      machine = *cgroup;
    }
    if (machine > 0 && r.total_system_mem > machine) {
      r.warnings.push_back(
          fmt::format("total_system_mem {} is more than this machine has ({}{}); using {}",
                      FormatBytes(r.total_system_mem), FormatBytes(machine),
                      machine < PhysicalMemoryBytes() ? ", the cgroup limit" : " of RAM",
                      FormatBytes(machine)));
      r.total_system_mem = machine;
    }
  }
  if (r.allowed_mem <= r.reserved_mem) {
    return InvalidArgumentError(fmt::format(
        "allowed_mem ({}) must be larger than reserved_mem ({})", FormatBytes(r.allowed_mem),
        FormatBytes(r.reserved_mem)));
  }
  if (r.allowed_mem > r.total_system_mem) {
    return InvalidArgumentError(fmt::format(
        "allowed_mem ({}) exceeds total_system_mem ({}): one task could not run",
        FormatBytes(r.allowed_mem), FormatBytes(r.total_system_mem)));
  }
  if (spec.workers < 0 || spec.workers > 4096) {
    return InvalidArgumentError(fmt::format("workers must be 0..4096, got {}", spec.workers));
  }
  if (spec.retries < 0 || spec.retries > 100) {
    return InvalidArgumentError(fmt::format("retries must be 0..100, got {}", spec.retries));
  }
  if (!(spec.backup_slowdown > 1.0 && spec.backup_slowdown <= 1e6)) {
    return InvalidArgumentError(fmt::format(
        "backup_slowdown must be more than 1 (a multiple of the median task time), got {}",
        spec.backup_slowdown));
  }
  if (!(spec.heartbeat_timeout > 0 && spec.heartbeat_timeout <= 86400)) {
    return InvalidArgumentError(fmt::format(
        "heartbeat_timeout must be more than 0 and at most 86400 seconds, got {}", spec.heartbeat_timeout));
  }
  r.executor = spec.executor;
  r.workers = spec.workers > 0 ? spec.workers : AvailableCores();
  if (r.executor == ExecutorKind::kInline) r.workers = 1;
  // Under MPI every rank is one worker running one task at a time.
  if (r.executor == ExecutorKind::kMpi) r.workers = collective ? mpi::Size() : 1;
  r.tier = spec.tier;
  r.object_store_url = spec.object_store_url;
  r.retries = spec.retries;
  r.backup_tasks = spec.backup_tasks;
  r.backup_slowdown = spec.backup_slowdown;
  r.heartbeat_timeout = spec.heartbeat_timeout;
  r.fuse = spec.fuse;
  if (r.tier == TierChoice::kObject && r.object_store_url.empty()) {
    return InvalidArgumentError("tier 'object' needs an object store URL (object_store_url)");
  }
  return r;
}

}  // namespace

Result<ResolvedSpec> ResolveSpec(const Spec& spec) { return Resolve(spec, /*collective=*/true); }

Status ValidateSpec(const Spec& spec) { return Resolve(spec, /*collective=*/false).status(); }

ResolvedSpec ResolveSpecLocally(const Spec& spec) {
  Result<ResolvedSpec> r = Resolve(spec, /*collective=*/false);
  if (r.ok()) return *std::move(r);
  ResolvedSpec defaults;
  defaults.allowed_mem = kDefaultAllowedMem;
  defaults.reserved_mem = kDefaultReservedMem;
  defaults.total_system_mem = std::max(DefaultTotalSystemMemory(), kDefaultAllowedMem);
  return defaults;
}

}  // namespace strata
