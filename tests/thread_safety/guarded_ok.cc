// Correctly locked code: scripts/check-thread-safety.sh --self-test requires
// the check to accept it (so a broken flag set cannot pass by rejecting all).
#include "strata/base/thread_annotations.h"

namespace strata {

class Tally {
 public:
  void Add() STRATA_EXCLUDES(mu_) {
    MutexLock lock(&mu_);
    AddLocked();
  }

 private:
  void AddLocked() STRATA_REQUIRES(mu_) { ++count_; }

  Mutex mu_;
  int count_ STRATA_GUARDED_BY(mu_) = 0;
};

void UseTally() {
  Tally tally;
  tally.Add();
}

}  // namespace strata
