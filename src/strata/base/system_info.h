// What the machine offers: physical memory, the cgroup memory limit, cores.
#ifndef STRATA_BASE_SYSTEM_INFO_H_
#define STRATA_BASE_SYSTEM_INFO_H_

#include <cstdint>
#include <optional>

namespace strata {

// Physical RAM in bytes (sysconf).
int64_t PhysicalMemoryBytes();

// The memory limit of this process's cgroup (v2 memory.max or v1
// memory.limit_in_bytes), or nullopt when there is none.
std::optional<int64_t> CgroupMemoryLimitBytes();

// 80% of min(physical RAM, cgroup limit): Strata's default total_system_mem.
int64_t DefaultTotalSystemMemory();

// Cores available to this process (sched_getaffinity), at least 1.
int AvailableCores();

// Resident set size of this process now and its peak (VmHWM), in bytes.
int64_t CurrentRssBytes();
int64_t PeakRssBytes();

}  // namespace strata

#endif  // STRATA_BASE_SYSTEM_INFO_H_
