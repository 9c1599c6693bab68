#include "strata/base/temp_dir.h"

#include <stdlib.h>

#include <cstdlib>
#include <filesystem>
#include <vector>

#include "strata/base/check.h"

namespace strata {

TempDir::TempDir(const std::string& prefix) {
  const char* tmp = std::getenv("TMPDIR");
  std::string base = tmp && *tmp ? tmp : "/tmp";
  std::string pattern = base + "/" + prefix + "-XXXXXX";
  std::vector<char> buf(pattern.begin(), pattern.end());
  buf.push_back('\0');
  STRATA_CHECK(::mkdtemp(buf.data()) != nullptr) << "cannot create a directory under " << base;
  path_ = buf.data();
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

}  // namespace strata
