// Status and Result<T>: how every fallible Strata call reports failure.
//
// Errors are values so that they can cross threads, worker processes and MPI
// ranks. A Status carries a code and a one-line message; callers add context on
// the way up ("reading chunk 3.7 of /data/a.zarr: ..."). The code tells an
// executor whether a failure is worth a retry (see IsRetryable).
//
// Thread-safety: Status and Result are values; distinct objects may be used
// from different threads freely, one object needs external synchronisation.
#ifndef STRATA_BASE_STATUS_H_
#define STRATA_BASE_STATUS_H_

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "strata/base/check.h"

namespace strata {

enum class StatusCode : int {
  kOk = 0,
  kCancelled = 1,
  kUnknown = 2,
  kInvalidArgument = 3,
  kDeadlineExceeded = 4,
  kNotFound = 5,
  kAlreadyExists = 6,
  kPermissionDenied = 7,
  kResourceExhausted = 8,
  kFailedPrecondition = 9,
  kAborted = 10,
  kOutOfRange = 11,
  kUnimplemented = 12,
  kInternal = 13,
  kUnavailable = 14,
  kDataLoss = 15,
};

std::string_view StatusCodeName(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;  // OK
  Status(StatusCode code, std::string message);

  static Status Ok() { return Status(); }

  bool ok() const { return state_ == nullptr; }
  StatusCode code() const { return state_ ? state_->code : StatusCode::kOk; }
  std::string_view message() const {
    return state_ ? std::string_view(state_->message) : std::string_view();
  }

  // Returns this status with "context: " prepended to the message; OK stays OK.
  Status WithContext(std::string_view context) const;

  // "INVALID_ARGUMENT: message", or "OK".
  std::string ToString() const;

  // Marks a status as checked when the caller deliberately ignores it.
  void IgnoreError() const {}

  friend bool operator==(const Status& a, const Status& b) {
    return a.code() == b.code() && a.message() == b.message();
  }

 private:
  struct State {
    StatusCode code;
    std::string message;
  };
  // Shared so that copying a Status (common when errors fan out to callbacks)
  // does not copy the message; never mutated after construction.
  std::shared_ptr<const State> state_;
};

// Errors worth a retry: transient I/O, a busy server, a lost worker.
bool IsRetryable(const Status& status);

Status CancelledError(std::string message);
Status UnknownError(std::string message);
Status InvalidArgumentError(std::string message);
Status DeadlineExceededError(std::string message);
Status NotFoundError(std::string message);
Status AlreadyExistsError(std::string message);
Status PermissionDeniedError(std::string message);
Status ResourceExhaustedError(std::string message);
Status FailedPreconditionError(std::string message);
Status AbortedError(std::string message);
Status OutOfRangeError(std::string message);
Status UnimplementedError(std::string message);
Status InternalError(std::string message);
Status UnavailableError(std::string message);
Status DataLossError(std::string message);

inline bool IsNotFound(const Status& s) { return s.code() == StatusCode::kNotFound; }

// Maps an errno value from a failed system call to a Status: ENOENT is
// NotFound, ENOSPC is ResourceExhausted, EACCES is PermissionDenied, EINTR and
// EAGAIN are Unavailable (retryable), everything else is Unknown.
Status ErrnoToStatus(int errno_value, std::string_view what);

// A value of type T or the error that prevented computing it.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(const Status& status) : status_(status) {  // NOLINT: implicit by design
    STRATA_CHECK(!status_.ok()) << "Result constructed from an OK status";
  }
  Result(Status&& status) : status_(std::move(status)) {  // NOLINT
    STRATA_CHECK(!status_.ok()) << "Result constructed from an OK status";
  }
  Result(const T& value) : value_(value) {}  // NOLINT
  Result(T&& value) : value_(std::move(value)) {}  // NOLINT
  template <typename U,
            typename = std::enable_if_t<std::is_constructible_v<T, U&&> &&
                                        !std::is_same_v<std::decay_t<U>, Status> &&
                                        !std::is_same_v<std::decay_t<U>, Result<T>>>>
  Result(U&& value) : value_(std::forward<U>(value)) {}  // NOLINT

  bool ok() const { return value_.has_value(); }
  const Status& status() const& { return status_; }
  Status status() && { return ok() ? Status() : std::move(status_); }

  const T& value() const& {
    CheckOk();
    return *value_;
  }
  T& value() & {
    CheckOk();
    return *value_;
  }
  T&& value() && {
    CheckOk();
    return std::move(*value_);
  }
  const T& operator*() const& { return value(); }
  T& operator*() & { return value(); }
  T&& operator*() && { return std::move(*this).value(); }
  const T* operator->() const { return &value(); }
  T* operator->() { return &value(); }

  T value_or(T fallback) const& { return ok() ? *value_ : std::move(fallback); }

 private:
  void CheckOk() const {
    STRATA_CHECK(value_.has_value()) << "value() of a failed Result: " << status_.ToString();
  }

  Status status_;
  std::optional<T> value_;
};

namespace internal_base {
inline Status ToStatus(const Status& s) { return s; }
inline Status ToStatus(Status&& s) { return std::move(s); }
template <typename T>
Status ToStatus(const Result<T>& r) {
  return r.status();
}
template <typename T>
Status ToStatus(Result<T>&& r) {
  return std::move(r).status();
}
}  // namespace internal_base

}  // namespace strata

#define STRATA_INTERNAL_CONCAT2(a, b) a##b
#define STRATA_INTERNAL_CONCAT(a, b) STRATA_INTERNAL_CONCAT2(a, b)

// Returns from the enclosing function if `expr` (a Status or Result) failed.
#define STRATA_RETURN_IF_ERROR(expr)                                  \
  do {                                                                \
    auto&& strata_status_ = (expr);                                   \
    if (!strata_status_.ok()) {                                       \
      return ::strata::internal_base::ToStatus(std::move(strata_status_)); \
    }                                                                 \
  } while (false)

// `lhs = value of rexpr`, or returns its error from the enclosing function.
#define STRATA_ASSIGN_OR_RETURN(lhs, rexpr) \
  STRATA_INTERNAL_ASSIGN_OR_RETURN(STRATA_INTERNAL_CONCAT(strata_result_, __LINE__), lhs, rexpr)

#define STRATA_INTERNAL_ASSIGN_OR_RETURN(tmp, lhs, rexpr) \
  auto tmp = (rexpr);                                     \
  if (!tmp.ok()) return std::move(tmp).status();          \
  lhs = std::move(tmp).value()

#endif  // STRATA_BASE_STATUS_H_
