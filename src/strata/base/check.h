// STRATA_CHECK / STRATA_DCHECK: assertions for programmer errors.
//
// A failed check prints the condition, the location and any streamed message
// to stderr and aborts. Conditions the caller can cause (bad input, I/O) are
// reported as Status instead; see status.h.
#ifndef STRATA_BASE_CHECK_H_
#define STRATA_BASE_CHECK_H_

#include <sstream>

namespace strata::internal_base {

class CheckFailure {
 public:
  CheckFailure(const char* file, int line, const char* condition);
  [[noreturn]] ~CheckFailure();
  template <typename T>
  CheckFailure& operator<<(const T& value) {
    stream_ << value;
    return *this;
  }

 private:
  std::ostringstream stream_;
};

// Lets `STRATA_CHECK(x) << msg` compile to nothing when x holds.
struct Voidify {
  void operator&(CheckFailure&) {}
  void operator&(CheckFailure&&) {}
};

}  // namespace strata::internal_base

#define STRATA_CHECK(condition)                  \
  (condition) ? (void)0                          \
              : ::strata::internal_base::Voidify() & \
                    ::strata::internal_base::CheckFailure(__FILE__, __LINE__, #condition)

#ifdef NDEBUG
#define STRATA_DCHECK(condition) \
  while (false) STRATA_CHECK(condition)
#else
#define STRATA_DCHECK(condition) STRATA_CHECK(condition)
#endif

#endif  // STRATA_BASE_CHECK_H_
