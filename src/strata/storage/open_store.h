// OpenStoreUrl: a Store from a URL or path, the one place that knows every
// driver (store.h names none): memory:// -> MemoryStore, s3:// -> S3Store,
// file:// or a plain path -> LocalStore.
//
// Thread-safety: free functions.
#ifndef STRATA_STORAGE_OPEN_STORE_H_
#define STRATA_STORAGE_OPEN_STORE_H_

#include <memory>
#include <string>
#include <string_view>

#include "strata/base/status.h"
#include "strata/storage/store.h"

namespace strata {

// Opens the store for a URL or path: "memory://" (a new MemoryStore), a local
// path or "file://path" (a LocalStore; created when `create`), or
// "s3://bucket/prefix[?endpoint=...&region=...]" (an S3Store rooted at the
// prefix; see S3Store::ParseUrl; the bucket must exist whatever `create`).
// Returns the store and the key prefix within it (empty for local paths and
// S3 URLs, whose store is rooted at the path itself).
struct StoreAndPrefix {
  std::shared_ptr<Store> store;
  std::string prefix;
};
Result<StoreAndPrefix> OpenStoreUrl(std::string_view url, bool create);

}  // namespace strata

#endif  // STRATA_STORAGE_OPEN_STORE_H_
