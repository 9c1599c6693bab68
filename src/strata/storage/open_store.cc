#include "strata/storage/open_store.h"

#include <fmt/format.h>

#include "strata/storage/local_store.h"
#include "strata/storage/memory_store.h"
#include "strata/storage/s3/s3_store.h"

namespace strata {

Result<StoreAndPrefix> OpenStoreUrl(std::string_view url, bool create) {
  if (url.empty()) return InvalidArgumentError("empty path");
  if (url.rfind("memory://", 0) == 0) {
    std::string prefix(url.substr(9));
    while (!prefix.empty() && prefix.back() == '/') prefix.pop_back();
    if (!prefix.empty()) STRATA_RETURN_IF_ERROR(ValidateKey(prefix));
    return StoreAndPrefix{std::make_shared<MemoryStore>(), prefix};
  }
  if (url.rfind("s3://", 0) == 0) {
    // Buckets are never created here; a prefix needs no creating.
    STRATA_ASSIGN_OR_RETURN(S3Store::Options options, S3Store::ParseUrl(url));
    STRATA_ASSIGN_OR_RETURN(std::unique_ptr<S3Store> store, S3Store::Open(std::move(options)));
    return StoreAndPrefix{std::move(store), ""};
  }
  std::string_view path = url;
  if (path.rfind("file://", 0) == 0) path.remove_prefix(7);
  size_t scheme = path.find("://");
  if (scheme != std::string_view::npos) {
    return InvalidArgumentError(
        fmt::format("unsupported URL scheme '{}' in '{}' (expected a local path, file://, "
                    "memory:// or s3://)",
                    path.substr(0, scheme), url));
  }
  LocalStore::Options options;
  options.create = create;
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<LocalStore> store,
                          LocalStore::Open(std::string(path), options));
  return StoreAndPrefix{std::move(store), ""};
}

}  // namespace strata
