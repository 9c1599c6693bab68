#include "strata/storage/memory_store.h"

#include "strata/base/thread_annotations.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <map>

#include "strata/storage/store.h"

namespace strata {

struct MemoryStore::State {
  mutable Mutex mu;
  // Values are immutable once stored; a reader takes a reference under the
  // lock and copies out after it.
  std::map<std::string, std::shared_ptr<const std::vector<std::byte>>, std::less<>> values
      STRATA_GUARDED_BY(mu);
  int64_t total_bytes STRATA_GUARDED_BY(mu) = 0;

  std::shared_ptr<const std::vector<std::byte>> Find(std::string_view key) const {
    MutexLock lock(&mu);
    auto it = values.find(key);
    return it == values.end() ? nullptr : it->second;
  }
};

MemoryStore::MemoryStore() : state_(std::make_unique<State>()) {}
MemoryStore::~MemoryStore() = default;

Result<Buffer> MemoryStore::Get(std::string_view key, MemoryPool& pool) {
  STRATA_RETURN_IF_ERROR(ValidateKey(key));
  auto value = state_->Find(key);
  if (!value) return NotFoundError(fmt::format("memory://{} not found", key));
  STRATA_ASSIGN_OR_RETURN(Buffer buffer, pool.Allocate(static_cast<int64_t>(value->size())));
  if (!value->empty()) std::memcpy(buffer.data(), value->data(), value->size());
  return buffer;
}

Result<Buffer> MemoryStore::GetRange(std::string_view key, int64_t offset, int64_t length,
                                     MemoryPool& pool) {
  STRATA_ASSIGN_OR_RETURN(Suffix range, GetRangeAndSize(key, offset, length, pool));
  return std::move(range.bytes);
}

Result<Store::Suffix> MemoryStore::GetRangeAndSize(std::string_view key, int64_t offset,
                                                   int64_t length, MemoryPool& pool) {
  STRATA_RETURN_IF_ERROR(ValidateKey(key));
  if (offset < 0 || length < 0) {
    return InvalidArgumentError(fmt::format("invalid byte range {}+{} of memory://{}", offset,
                                            length, key));
  }
  auto value = state_->Find(key);
  if (!value) return NotFoundError(fmt::format("memory://{} not found", key));
  int64_t size = static_cast<int64_t>(value->size());
  if (offset > size) {
    return OutOfRangeError(fmt::format(
        "byte range starts at {} past the end of memory://{} ({} bytes)", offset, key, size));
  }
  int64_t n = std::min(length, size - offset);
  STRATA_ASSIGN_OR_RETURN(Buffer buffer, pool.Allocate(n));
  if (n > 0) std::memcpy(buffer.data(), value->data() + offset, static_cast<size_t>(n));
  return Suffix{std::move(buffer), size};
}

Status MemoryStore::GetInto(std::string_view key, std::span<std::byte> out) {
  STRATA_RETURN_IF_ERROR(ValidateKey(key));
  auto value = state_->Find(key);
  if (!value) return NotFoundError(fmt::format("memory://{} not found", key));
  if (value->size() != out.size()) {
    return DataLossError(
        fmt::format("memory://{} holds {} bytes, expected {}", key, value->size(), out.size()));
  }
  if (!out.empty()) std::memcpy(out.data(), value->data(), out.size());
  return Status::Ok();
}

Result<std::optional<int64_t>> MemoryStore::Size(std::string_view key) {
  STRATA_RETURN_IF_ERROR(ValidateKey(key));
  auto value = state_->Find(key);
  if (!value) return std::optional<int64_t>();
  return std::optional<int64_t>(static_cast<int64_t>(value->size()));
}

Status MemoryStore::Set(std::string_view key, std::span<const std::byte> value) {
  STRATA_RETURN_IF_ERROR(ValidateKey(key));
  auto stored = std::make_shared<const std::vector<std::byte>>(value.begin(), value.end());
  MutexLock lock(&state_->mu);
  auto [it, inserted] = state_->values.try_emplace(std::string(key), nullptr);
  if (!inserted) state_->total_bytes -= static_cast<int64_t>(it->second->size());
  it->second = std::move(stored);
  state_->total_bytes += static_cast<int64_t>(value.size());
  return Status::Ok();
}

Status MemoryStore::Erase(std::string_view key) {
  STRATA_RETURN_IF_ERROR(ValidateKey(key));
  MutexLock lock(&state_->mu);
  auto it = state_->values.find(key);
  if (it != state_->values.end()) {
    state_->total_bytes -= static_cast<int64_t>(it->second->size());
    state_->values.erase(it);
  }
  return Status::Ok();
}

Result<std::vector<std::string>> MemoryStore::List(std::string_view prefix) {
  MutexLock lock(&state_->mu);
  std::vector<std::string> keys;
  for (auto it = state_->values.lower_bound(prefix); it != state_->values.end(); ++it) {
    if (it->first.compare(0, prefix.size(), prefix) != 0) break;
    keys.push_back(it->first);
  }
  return keys;
}

int64_t MemoryStore::total_bytes() const {
  MutexLock lock(&state_->mu);
  return state_->total_bytes;
}

}  // namespace strata
