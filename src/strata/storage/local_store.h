// LocalStore: the Store driver for a directory of files (store.h).
//
// Values are files under the root; writes go to a hidden temporary file that
// is renamed over the key, so readers and crashes never see a torn value, and
// ReclaimTempFiles removes what writers that died left behind.
//
// Thread-safety: every method is safe to call concurrently (store.h).
#ifndef STRATA_STORAGE_LOCAL_STORE_H_
#define STRATA_STORAGE_LOCAL_STORE_H_

#include <memory>
#include <string>
#include <string_view>

#include "strata/storage/store.h"

namespace strata {

// A store rooted at a directory. Values are files; Set writes a hidden
// temporary file in the same directory and renames it over the key, so readers
// and crashes never see a torn value.
class LocalStore : public Store {
 public:
  struct Options {
    // Create the root directory if missing.
    bool create = true;
    // fsync files and directories after writing (durability against power
    // loss, not needed against process crashes).
    bool fsync = false;
  };

  // NotFound when the root is missing and !create; PermissionDenied or
  // InvalidArgument when it cannot be used.
  static Result<std::unique_ptr<LocalStore>> Open(std::string root, Options options);
  static Result<std::unique_ptr<LocalStore>> Open(std::string root) {
    return Open(std::move(root), Options{});
  }

  Result<Buffer> Get(std::string_view key, MemoryPool& pool) override;
  Result<Buffer> GetRange(std::string_view key, int64_t offset, int64_t length,
                          MemoryPool& pool) override;
  Result<Suffix> GetRangeAndSize(std::string_view key, int64_t offset, int64_t length,
                                 MemoryPool& pool) override;
  Status GetInto(std::string_view key, std::span<std::byte> out) override;
  Result<std::optional<int64_t>> Size(std::string_view key) override;
  Status Set(std::string_view key, std::span<const std::byte> value) override;
  using Store::Set;
  Status Erase(std::string_view key) override;
  Result<std::vector<std::string>> List(std::string_view prefix) override;
  Status ErasePrefix(std::string_view prefix) override;
  Status Rename(std::string_view from, std::string_view to) override;
  Status ReclaimTempFiles(std::string_view prefix) override;
  Result<std::optional<std::string>> Version(std::string_view key) override;
  Result<Suffix> GetSuffix(std::string_view key, int64_t length, MemoryPool& pool) override;
  Result<std::unique_ptr<StoreWriter>> OpenWriter(std::string_view key, int64_t max_size,
                                                  MemoryPool& pool) override;
  int64_t WriterMemory(int64_t) const override { return 0; }
  std::string url() const override { return root_; }

  const std::string& root() const { return root_; }
  // The file path of `key` (validated).
  Result<std::string> PathOf(std::string_view key) const;

  // True for the names LocalStore gives its temporary files; List skips them.
  // A temporary name is ".<key name>.strata-tmp-<pid>-<start time>-<n>",
  // naming the writing process so that a later run can tell one whose writer
  // died (ReclaimTempFiles).
  static bool IsTempName(std::string_view file_name);

 private:
  // A fresh temporary path beside `path`, in the format IsTempName describes.
  std::string TempPathFor(const std::string& path) const;

  LocalStore(std::string root, Options options) : root_(std::move(root)), options_(options) {}
  std::string root_;
  Options options_;
};

}  // namespace strata

#endif  // STRATA_STORAGE_LOCAL_STORE_H_
