// The fixed-size messages a dispatcher exchanges with workers in other
// processes (worker processes over a socketpair, MPI ranks over messages):
// a task to run, and what running it came to.
#ifndef STRATA_RUNTIME_TASK_WIRE_INTERNAL_H_
#define STRATA_RUNTIME_TASK_WIRE_INTERNAL_H_

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>

#include "strata/base/status.h"
#include "strata/runtime/task_runner.h"

namespace strata::internal_runtime {

// op == -1 ends the compute (mpi).
struct WireRequest {
  int32_t op = -1;
  int32_t attempt = 0;
  int64_t block = 0;
  int64_t attempt_id = 0;  // Attempt::id, for the superseded board
};

struct WireReply {
  int32_t code = 0;  // StatusCode
  int32_t skipped = 0;  // TaskFigures::skipped
  double start_seconds = 0;
  double end_seconds = 0;
  int64_t measured_peak = 0;     // the task's MemoryPool
  int64_t disk_bytes = 0;        // written to disk tiers (and memory-tier fallback files)
  int64_t worker_rss = 0;        // the worker's resident set after the task
  int64_t worker_pool_peak = 0;  // peak of the worker's compute pool so far
  int64_t zarr_bytes_read = 0;   // by the task
  char message[2048] = {};

  static WireReply From(const Status& s, const TaskFigures& figures, int64_t disk_bytes,
                        int64_t rss, int64_t pool_peak) {
    WireReply reply;
    reply.code = static_cast<int32_t>(s.code());
    if (!s.ok()) {
      std::string_view m = s.message();
      std::memcpy(reply.message, m.data(), std::min(m.size(), sizeof reply.message - 1));
    }
    reply.start_seconds = figures.start_seconds;
    reply.end_seconds = figures.end_seconds;
    reply.measured_peak = figures.measured_peak;
    reply.skipped = figures.skipped ? 1 : 0;
    reply.disk_bytes = disk_bytes;
    reply.worker_rss = rss;
    reply.worker_pool_peak = pool_peak;
    reply.zarr_bytes_read = figures.zarr_bytes_read;
    return reply;
  }
  Status status() const {
    if (code == 0) return Status::Ok();
    return Status(static_cast<StatusCode>(code),
                  std::string(message, ::strnlen(message, sizeof message)));
  }
  TaskFigures figures() const {
    TaskFigures f;
    f.start_seconds = start_seconds;
    f.end_seconds = end_seconds;
    f.measured_peak = measured_peak;
    f.worker_rss = worker_rss;
    f.zarr_bytes_read = zarr_bytes_read;
    f.skipped = skipped != 0;
    return f;
  }
};

}  // namespace strata::internal_runtime

#endif  // STRATA_RUNTIME_TASK_WIRE_INTERNAL_H_
