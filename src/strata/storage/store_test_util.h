// The Store conformance suite: every Store implementation runs these tests.
//
//   INSTANTIATE_TEST_SUITE_P(LocalStore, StoreConformanceTest,
//                            testing::Values(StoreFactory{"LocalStore", [] { ... }}));
//
// (TensorStore's kvstore/test_util and Arrow's filesystem/test_util.h play the
// same role there.)
#ifndef STRATA_STORAGE_STORE_TEST_UTIL_H_
#define STRATA_STORAGE_STORE_TEST_UTIL_H_

#include <functional>
#include <memory>
#include <ostream>
#include <string>

#include <gtest/gtest.h>

#include "strata/base/temp_dir.h"
#include "strata/storage/store.h"

namespace strata {

struct StoreFactory {
  std::string name;
  // Returns a new, empty store.
  std::function<std::shared_ptr<Store>()> make;
  // Whether values survive reopening the same location (false for memory://).
  bool persistent = true;
  friend std::ostream& operator<<(std::ostream& os, const StoreFactory& f) { return os << f.name; }
};

class StoreConformanceTest : public ::testing::TestWithParam<StoreFactory> {
 protected:
  void SetUp() override { store_ = GetParam().make(); }
  std::shared_ptr<Store> store_;
};

// A fresh directory for one test, removed by the destructor.
using ScratchDir = TempDir;

}  // namespace strata

#endif  // STRATA_STORAGE_STORE_TEST_UTIL_H_
