// A write to a guarded field without its mutex: scripts/check-thread-safety.sh
// --self-test requires the check to reject this file, proving that a violation
// in a library source fails CI.
#include "strata/base/thread_annotations.h"

namespace strata {

class Tally {
 public:
  void Add() { ++count_; }  // the violation: mu_ is not held

 private:
  Mutex mu_;
  int count_ STRATA_GUARDED_BY(mu_) = 0;
};

void UseTally() {
  Tally tally;
  tally.Add();
}

}  // namespace strata
