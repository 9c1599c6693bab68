#include "strata/base/status.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>

namespace strata {

namespace internal_base {

CheckFailure::CheckFailure(const char* file, int line, const char* condition) {
  stream_ << file << ":" << line << ": check failed: " << condition << " ";
}

CheckFailure::~CheckFailure() {
  std::cerr << stream_.str() << std::endl;
  std::abort();
}

}  // namespace internal_base

std::string_view StatusCodeName(StatusCode code) {
  switch (code) {
    case StatusCode::kOk: return "OK";
    case StatusCode::kCancelled: return "CANCELLED";
    case StatusCode::kUnknown: return "UNKNOWN";
    case StatusCode::kInvalidArgument: return "INVALID_ARGUMENT";
    case StatusCode::kDeadlineExceeded: return "DEADLINE_EXCEEDED";
    case StatusCode::kNotFound: return "NOT_FOUND";
    case StatusCode::kAlreadyExists: return "ALREADY_EXISTS";
    case StatusCode::kPermissionDenied: return "PERMISSION_DENIED";
    case StatusCode::kResourceExhausted: return "RESOURCE_EXHAUSTED";
    case StatusCode::kFailedPrecondition: return "FAILED_PRECONDITION";
    case StatusCode::kAborted: return "ABORTED";
    case StatusCode::kOutOfRange: return "OUT_OF_RANGE";
    case StatusCode::kUnimplemented: return "UNIMPLEMENTED";
    case StatusCode::kInternal: return "INTERNAL";
    case StatusCode::kUnavailable: return "UNAVAILABLE";
    case StatusCode::kDataLoss: return "DATA_LOSS";
  }
  return "UNKNOWN";
}

Status::Status(StatusCode code, std::string message) {
  if (code != StatusCode::kOk) {
    state_ = std::make_shared<const State>(State{code, std::move(message)});
  }
}

Status Status::WithContext(std::string_view context) const {
  if (ok()) return *this;
  std::string message(context);
  message += ": ";
  message += state_->message;
  return Status(state_->code, std::move(message));
}

std::string Status::ToString() const {
  if (ok()) return "OK";
  std::string s(StatusCodeName(code()));
  s += ": ";
  s += state_->message;
  return s;
}

bool IsRetryable(const Status& status) {
  switch (status.code()) {
    case StatusCode::kUnavailable:
    case StatusCode::kDeadlineExceeded:
    case StatusCode::kAborted:
      return true;
    default:
      return false;
  }
}

#define STRATA_DEFINE_ERROR(Name, Code) \
  Status Name(std::string message) { return Status(StatusCode::Code, std::move(message)); }
STRATA_DEFINE_ERROR(CancelledError, kCancelled)
STRATA_DEFINE_ERROR(UnknownError, kUnknown)
STRATA_DEFINE_ERROR(InvalidArgumentError, kInvalidArgument)
STRATA_DEFINE_ERROR(DeadlineExceededError, kDeadlineExceeded)
STRATA_DEFINE_ERROR(NotFoundError, kNotFound)
STRATA_DEFINE_ERROR(AlreadyExistsError, kAlreadyExists)
STRATA_DEFINE_ERROR(PermissionDeniedError, kPermissionDenied)
STRATA_DEFINE_ERROR(ResourceExhaustedError, kResourceExhausted)
STRATA_DEFINE_ERROR(FailedPreconditionError, kFailedPrecondition)
STRATA_DEFINE_ERROR(AbortedError, kAborted)
STRATA_DEFINE_ERROR(OutOfRangeError, kOutOfRange)
STRATA_DEFINE_ERROR(UnimplementedError, kUnimplemented)
STRATA_DEFINE_ERROR(InternalError, kInternal)
STRATA_DEFINE_ERROR(UnavailableError, kUnavailable)
STRATA_DEFINE_ERROR(DataLossError, kDataLoss)
#undef STRATA_DEFINE_ERROR

Status ErrnoToStatus(int errno_value, std::string_view what) {
  std::string message(what);
  message += ": ";
  message += std::strerror(errno_value);
  switch (errno_value) {
    case ENOENT:
    case ENOTDIR:
      return NotFoundError(std::move(message));
    case EEXIST:
      return AlreadyExistsError(std::move(message));
    case EACCES:
    case EPERM:
    case EROFS:
      return PermissionDeniedError(std::move(message));
    case ENOSPC:
    case EDQUOT:
    case ENOMEM:
    case EMFILE:
    case ENFILE:
      return ResourceExhaustedError(std::move(message));
    case EINTR:
    case EAGAIN:
    case EBUSY:
    case ETIMEDOUT:
    case ECONNRESET:
    case ECONNREFUSED:
      return UnavailableError(std::move(message));
    case EINVAL:
    case ENAMETOOLONG:
    case EISDIR:
      return InvalidArgumentError(std::move(message));
    case EIO:
      return DataLossError(std::move(message));
    default:
      return UnknownError(std::move(message));
  }
}

}  // namespace strata
