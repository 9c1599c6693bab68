// Which process owns something a run left on disk or in a bucket, and whether
// that process still lives: the ground of reclaiming what dead runs leave
// (runtime/litter.h, LocalStore's temporary files).
//
// A pid alone is not an owner: pids are reused. A process is named by its
// pid and its start time (field 22 of /proc/<pid>/stat, clock ticks since
// boot), and, for things other hosts may see (a shared work_dir, a bucket),
// by the boot id of its kernel (/proc/sys/kernel/random/boot_id), which
// differs between hosts and between boots of one host.
//
// Thread-safety: free functions reading /proc.
#ifndef STRATA_BASE_PROCESS_INFO_H_
#define STRATA_BASE_PROCESS_INFO_H_

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>

namespace strata {

// Start time of `pid` in clock ticks since boot; nullopt when it is gone.
std::optional<uint64_t> ProcessStartTime(pid_t pid);

// False when `pid` has exited (a zombie counts as exited) or, when
// `start_time` is given, when the process with that pid started at another
// time (the pid was reused).
bool ProcessAlive(pid_t pid, std::optional<uint64_t> start_time = std::nullopt);

// This kernel's boot id (a UUID), or "" when /proc does not say.
const std::string& BootId();

// The start time of this process (cached).
uint64_t ThisProcessStartTime();

}  // namespace strata

#endif  // STRATA_BASE_PROCESS_INFO_H_
