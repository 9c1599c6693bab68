// TempDir: a fresh directory under $TMPDIR (or /tmp), removed with everything
// in it when the object is destroyed. For tests and scratch space.
#ifndef STRATA_BASE_TEMP_DIR_H_
#define STRATA_BASE_TEMP_DIR_H_

#include <string>

namespace strata {

class TempDir {
 public:
  // CHECK-fails if the directory cannot be created.
  explicit TempDir(const std::string& prefix = "strata-test");
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace strata

#endif  // STRATA_BASE_TEMP_DIR_H_
