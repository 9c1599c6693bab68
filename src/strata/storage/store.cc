#include "strata/storage/store.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

namespace strata {

Status ValidateKey(std::string_view key) {
  auto bad = [&](std::string_view why) {
    return InvalidArgumentError(fmt::format("invalid store key '{}': {}", key, why));
  };
  if (key.empty()) return bad("empty");
  if (key.front() == '/') return bad("absolute keys are not allowed");
  if (key.find('\0') != std::string_view::npos) return bad("contains a NUL byte");
  if (key.find('\\') != std::string_view::npos) return bad("contains a backslash");
  size_t start = 0;
  while (start <= key.size()) {
    size_t slash = key.find('/', start);
    std::string_view part =
        key.substr(start, slash == std::string_view::npos ? std::string_view::npos : slash - start);
    if (part.empty()) return bad("empty path component");
    if (part == "." || part == "..") return bad("'.' and '..' would escape the store root");
    if (slash == std::string_view::npos) break;
    start = slash + 1;
  }
  return Status::Ok();
}

std::string JoinKey(std::string_view prefix, std::string_view key) {
  if (prefix.empty()) return std::string(key);
  if (key.empty()) return std::string(prefix);
  std::string out(prefix);
  if (out.back() != '/') out += '/';
  out += key;
  return out;
}

Status Store::ErasePrefix(std::string_view prefix) {
  STRATA_ASSIGN_OR_RETURN(std::vector<std::string> keys, List(prefix));
  for (const std::string& key : keys) STRATA_RETURN_IF_ERROR(Erase(key));
  return Status::Ok();
}

Status Store::Rename(std::string_view from, std::string_view to) {
  STRATA_ASSIGN_OR_RETURN(Buffer value, Get(from, *MemoryPool::Default()));
  STRATA_RETURN_IF_ERROR(Set(to, std::span<const std::byte>(value.data(), value.size())));
  return Erase(from);
}

Result<std::optional<std::string>> Store::Version(std::string_view key) {
  Result<std::string> value = GetString(key);
  if (!value.ok()) {
    if (IsNotFound(value.status())) return std::optional<std::string>();
    return value.status();
  }
  return std::optional<std::string>(std::move(value).value());
}

Result<Store::Suffix> Store::GetRangeAndSize(std::string_view key, int64_t offset,
                                             int64_t length, MemoryPool& pool) {
  STRATA_ASSIGN_OR_RETURN(std::optional<int64_t> size, Size(key));
  if (!size) return NotFoundError(fmt::format("{} not found", JoinKey(url(), key)));
  STRATA_ASSIGN_OR_RETURN(Buffer bytes, GetRange(key, offset, length, pool));
  return Suffix{std::move(bytes), *size};
}

Result<Store::Suffix> Store::GetSuffix(std::string_view key, int64_t length, MemoryPool& pool) {
  if (length < 0) return InvalidArgumentError(fmt::format("invalid suffix length {}", length));
  STRATA_ASSIGN_OR_RETURN(std::optional<int64_t> size, Size(key));
  if (!size) return NotFoundError(fmt::format("{} not found", JoinKey(url(), key)));
  const int64_t start = std::max<int64_t>(0, *size - length);
  STRATA_ASSIGN_OR_RETURN(Buffer bytes, GetRange(key, start, *size - start, pool));
  return Suffix{std::move(bytes), *size};
}

namespace {

// The default writer: one buffer of the value's bound, Set on Commit.
class BufferedStoreWriter final : public StoreWriter {
 public:
  BufferedStoreWriter(Store& store, std::string key, Buffer buffer)
      : store_(store), key_(std::move(key)), buffer_(std::move(buffer)) {}

  Status Append(std::span<const std::byte> bytes) override {
    if (size_ + static_cast<int64_t>(bytes.size()) > buffer_.size()) {
      return InvalidArgumentError(fmt::format("writing {}: {} bytes exceed the bound of {}", key_,
                                              size_ + bytes.size(), buffer_.size()));
    }
    if (!bytes.empty()) std::memcpy(buffer_.data() + size_, bytes.data(), bytes.size());
    size_ += static_cast<int64_t>(bytes.size());
    return Status::Ok();
  }
  Status PatchAt(int64_t offset, std::span<const std::byte> bytes) override {
    STRATA_CHECK(offset >= 0 && offset + static_cast<int64_t>(bytes.size()) <= size_);
    if (!bytes.empty()) std::memcpy(buffer_.data() + offset, bytes.data(), bytes.size());
    return Status::Ok();
  }
  Status Commit() override {
    return store_.Set(key_, std::span<const std::byte>(buffer_.data(), static_cast<size_t>(size_)));
  }
  int64_t size() const override { return size_; }

 private:
  Store& store_;
  std::string key_;
  Buffer buffer_;
  int64_t size_ = 0;
};

}  // namespace

Result<std::unique_ptr<StoreWriter>> Store::OpenWriter(std::string_view key, int64_t max_size,
                                                       MemoryPool& pool) {
  STRATA_RETURN_IF_ERROR(ValidateKey(key));
  STRATA_ASSIGN_OR_RETURN(Buffer buffer, pool.Allocate(max_size));
  return std::unique_ptr<StoreWriter>(
      new BufferedStoreWriter(*this, std::string(key), std::move(buffer)));
}

Result<bool> Store::Exists(std::string_view key) {
  STRATA_ASSIGN_OR_RETURN(std::optional<int64_t> size, Size(key));
  return size.has_value();
}

Result<std::string> Store::GetString(std::string_view key) {
  STRATA_ASSIGN_OR_RETURN(Buffer buffer, Get(key, *MemoryPool::Default()));
  return std::string(reinterpret_cast<const char*>(buffer.data()),
                     static_cast<size_t>(buffer.size()));
}

}  // namespace strata
