// Clang thread-safety annotations and the annotated Mutex they check.
//
// A field that a mutex guards says so where it is declared:
//
//   mutable Mutex mu_;
//   int64_t in_use_ STRATA_GUARDED_BY(mu_) = 0;
//   void EvictLocked() STRATA_REQUIRES(mu_);
//
// and clang (-Wthread-safety, run by scripts/check-thread-safety.sh) rejects
// any read or write of `in_use_` on a path that does not hold `mu_`, and any
// call of `EvictLocked()` without it. On other compilers the macros expand to
// nothing, so GCC builds the same code unchanged.
//
// The analysis follows locks only through annotated types, so guarded state
// uses `strata::Mutex` (not std::mutex), `strata::MutexLock` for a scope, and
// `strata::CondVar` to sleep on a condition:
//
//   MutexLock lock(&mu_);
//   while (in_use_ > cap_) cv_.Wait(&mu_);  // mu_ is released while asleep
//
// Waiting is a loop written out at the call site rather than a predicate
// lambda: the analysis checks a lambda's body as a function of its own, in
// which the caller's lock is not held.
//
// Thread-safety: Mutex and CondVar are safe to use from any thread; a
// MutexLock belongs to the thread that made it.
#ifndef STRATA_BASE_THREAD_ANNOTATIONS_H_
#define STRATA_BASE_THREAD_ANNOTATIONS_H_

#include <chrono>
#include <condition_variable>
#include <mutex>

#if defined(__clang__)
#define STRATA_THREAD_ANNOTATION_(x) __attribute__((x))
#else
#define STRATA_THREAD_ANNOTATION_(x)
#endif

// A type that is a lock (here: Mutex). `name` appears in clang's messages.
#define STRATA_CAPABILITY(name) STRATA_THREAD_ANNOTATION_(capability(name))
// An RAII type that holds a capability for its lifetime (here: MutexLock).
#define STRATA_SCOPED_CAPABILITY STRATA_THREAD_ANNOTATION_(scoped_lockable)
// The field may be read or written only while holding `mu`.
#define STRATA_GUARDED_BY(mu) STRATA_THREAD_ANNOTATION_(guarded_by(mu))
// What the pointer points to may be touched only while holding `mu` (the
// pointer itself is not guarded).
#define STRATA_PT_GUARDED_BY(mu) STRATA_THREAD_ANNOTATION_(pt_guarded_by(mu))
// The caller must hold these capabilities (functions named `...Locked`).
#define STRATA_REQUIRES(...) STRATA_THREAD_ANNOTATION_(requires_capability(__VA_ARGS__))
// The caller must not hold these capabilities (the function takes them).
#define STRATA_EXCLUDES(...) STRATA_THREAD_ANNOTATION_(locks_excluded(__VA_ARGS__))
// The function takes / gives back the capability (the argument, or `this`).
#define STRATA_ACQUIRE(...) STRATA_THREAD_ANNOTATION_(acquire_capability(__VA_ARGS__))
#define STRATA_RELEASE(...) STRATA_THREAD_ANNOTATION_(release_capability(__VA_ARGS__))
// The function takes the capability when it returns `result`.
#define STRATA_TRY_ACQUIRE(...) STRATA_THREAD_ANNOTATION_(try_acquire_capability(__VA_ARGS__))
// Tells the analysis the capability is held (checked at run time by the callee).
#define STRATA_ASSERT_CAPABILITY(mu) STRATA_THREAD_ANNOTATION_(assert_capability(mu))
// The function returns a reference to the capability `mu`.
#define STRATA_RETURN_CAPABILITY(mu) STRATA_THREAD_ANNOTATION_(lock_returned(mu))
// Turns the analysis off for one function; each use says in a comment why the
// access is safe without the lock (e.g. a constructor, or a join that orders it).
#define STRATA_NO_THREAD_SAFETY_ANALYSIS STRATA_THREAD_ANNOTATION_(no_thread_safety_analysis)

namespace strata {

class CondVar;

// A non-recursive mutex (std::mutex) that clang's analysis knows is a lock.
class STRATA_CAPABILITY("mutex") Mutex {
 public:
  Mutex() = default;
  Mutex(const Mutex&) = delete;
  Mutex& operator=(const Mutex&) = delete;

  void Lock() STRATA_ACQUIRE() { mu_.lock(); }
  void Unlock() STRATA_RELEASE() { mu_.unlock(); }
  [[nodiscard]] bool TryLock() STRATA_TRY_ACQUIRE(true) { return mu_.try_lock(); }

  // For a function the analysis cannot follow (a callback invoked under the
  // lock): states that the lock is held. Not checked at run time.
  void AssertHeld() const STRATA_ASSERT_CAPABILITY(this) {}

 private:
  friend class CondVar;
  std::mutex mu_;
};

// Holds `mu` from construction to destruction. `Unlock()` / `Lock()` let a
// scope drop the lock around slow work (I/O, a callback) and take it back; the
// destructor releases only if held.
class STRATA_SCOPED_CAPABILITY MutexLock {
 public:
  explicit MutexLock(Mutex* mu) STRATA_ACQUIRE(mu) : mu_(mu) { mu_->Lock(); }
  explicit MutexLock(Mutex& mu) STRATA_ACQUIRE(mu) : mu_(&mu) { mu_->Lock(); }
  ~MutexLock() STRATA_RELEASE() {
    if (held_) mu_->Unlock();
  }
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

  void Unlock() STRATA_RELEASE() {
    held_ = false;
    mu_->Unlock();
  }
  void Lock() STRATA_ACQUIRE() {
    mu_->Lock();
    held_ = true;
  }

 private:
  Mutex* mu_;
  bool held_ = true;
};

// A condition variable over a Mutex. Each Wait releases the mutex while
// asleep and holds it again on return; wake-ups may be spurious, so callers
// wait in a loop on their condition.
class CondVar {
 public:
  CondVar() = default;
  CondVar(const CondVar&) = delete;
  CondVar& operator=(const CondVar&) = delete;

  void Wait(Mutex* mu) STRATA_REQUIRES(mu) {
    std::unique_lock<std::mutex> lock(mu->mu_, std::adopt_lock);
    cv_.wait(lock);
    lock.release();
  }
  // Returns false when `deadline` passed before a notification.
  template <typename Clock, typename Duration>
  bool WaitUntil(Mutex* mu, std::chrono::time_point<Clock, Duration> deadline)
      STRATA_REQUIRES(mu) {
    std::unique_lock<std::mutex> lock(mu->mu_, std::adopt_lock);
    const bool notified = cv_.wait_until(lock, deadline) == std::cv_status::no_timeout;
    lock.release();
    return notified;
  }
  // Returns false when `timeout` passed before a notification.
  template <typename Rep, typename Period>
  bool WaitFor(Mutex* mu, std::chrono::duration<Rep, Period> timeout) STRATA_REQUIRES(mu) {
    return WaitUntil(mu, std::chrono::steady_clock::now() + timeout);
  }

  void Signal() { cv_.notify_one(); }
  void SignalAll() { cv_.notify_all(); }

 private:
  std::condition_variable cv_;
};

}  // namespace strata

#endif  // STRATA_BASE_THREAD_ANNOTATIONS_H_
