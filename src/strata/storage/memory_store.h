// MemoryStore: the Store driver that keeps values in a map in this process
// (tests, scratch, "memory://").
//
// Thread-safety: every method is safe to call concurrently (store.h).
#ifndef STRATA_STORAGE_MEMORY_STORE_H_
#define STRATA_STORAGE_MEMORY_STORE_H_

#include <memory>
#include <string>
#include <string_view>

#include "strata/storage/store.h"

namespace strata {

// A store in memory. Values are immutable once set, so Get can share them.
class MemoryStore : public Store {
 public:
  MemoryStore();
  ~MemoryStore() override;

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
  std::string url() const override { return "memory://"; }

  // Total bytes of all values.
  int64_t total_bytes() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace strata

#endif  // STRATA_STORAGE_MEMORY_STORE_H_
