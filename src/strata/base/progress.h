// ProgressBar: one line on stderr per operation, "copy  37/100 chunks  812 MB/s",
// redrawn at most ten times a second, only when stderr is a terminal.
//
// Thread-safety: Advance may be called from any thread.
#ifndef STRATA_BASE_PROGRESS_H_
#define STRATA_BASE_PROGRESS_H_

#include <chrono>
#include <cstdint>
#include <string>

#include "strata/base/thread_annotations.h"

namespace strata {

class ProgressBar {
 public:
  // `total` work items, each about `bytes_per_item` bytes (for a rate; 0 for none).
  ProgressBar(std::string label, int64_t total, int64_t bytes_per_item);
  ~ProgressBar();
  void Advance(int64_t items = 1);
  // Prints the final state and a newline.
  void Finish();

  static bool StderrIsTerminal();

 private:
  void DrawLocked(bool force) STRATA_REQUIRES(mu_);

  std::string label_;
  int64_t total_;
  int64_t bytes_per_item_;
  bool enabled_;
  Mutex mu_;
  bool finished_ STRATA_GUARDED_BY(mu_) = false;
  int64_t done_ STRATA_GUARDED_BY(mu_) = 0;
  std::chrono::steady_clock::time_point start_;
  std::chrono::steady_clock::time_point last_draw_ STRATA_GUARDED_BY(mu_);
};

}  // namespace strata

#endif  // STRATA_BASE_PROGRESS_H_
