#include "strata/base/thread_annotations.h"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>
#include <vector>

namespace strata {
namespace {

// A counter whose increments race unless Mutex excludes them.
class Counter {
 public:
  void Add() STRATA_EXCLUDES(mu_) {
    MutexLock lock(&mu_);
    ++value_;
    cv_.SignalAll();
  }
  // Blocks until the count reaches `target`.
  void AwaitAtLeast(int target) STRATA_EXCLUDES(mu_) {
    MutexLock lock(&mu_);
    while (value_ < target) cv_.Wait(&mu_);
  }
  int value() STRATA_EXCLUDES(mu_) {
    MutexLock lock(&mu_);
    return value_;
  }

 private:
  Mutex mu_;
  CondVar cv_;
  int value_ STRATA_GUARDED_BY(mu_) = 0;
};

// Whether a fresh thread could take `mu` at this moment (it gives it back).
bool FreeForAnotherThread(Mutex& mu) {
  bool taken = false;
  std::thread([&] {
    if (mu.TryLock()) {
      taken = true;
      mu.Unlock();
    }
  }).join();
  return taken;
}

TEST(MutexTest, ExcludesConcurrentWriters) {
  Counter counter;
  constexpr int kThreads = 4, kAdds = 20000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < kAdds; ++i) counter.Add();
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(counter.value(), kThreads * kAdds);
}

TEST(MutexTest, TryLockFailsWhileHeld) {
  Mutex mu;
  {
    MutexLock lock(&mu);
    EXPECT_FALSE(FreeForAnotherThread(mu));
  }
  EXPECT_TRUE(FreeForAnotherThread(mu));
}

TEST(MutexLockTest, UnlockAndRelockInOneScope) {
  Mutex mu;
  MutexLock lock(mu);
  lock.Unlock();
  // Another thread can take the mutex while this scope has dropped it.
  EXPECT_TRUE(FreeForAnotherThread(mu));
  lock.Lock();
  EXPECT_FALSE(FreeForAnotherThread(mu));
}  // The destructor releases the relocked mutex; a leak would hang the next test.

TEST(CondVarTest, WaitWakesOnSignal) {
  Counter counter;
  std::thread waiter([&] { counter.AwaitAtLeast(3); });
  for (int i = 0; i < 3; ++i) counter.Add();
  waiter.join();
  EXPECT_EQ(counter.value(), 3);
}

TEST(CondVarTest, WaitForTimesOutWithoutSignal) {
  Mutex mu;
  CondVar cv;
  MutexLock lock(&mu);
  const auto start = std::chrono::steady_clock::now();
  // Spurious wake-ups may end a wait early; a timeout must end one eventually.
  while (cv.WaitFor(&mu, std::chrono::milliseconds(5))) {
  }
  EXPECT_GE(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(5));
  // The mutex is held again after the wait.
  EXPECT_FALSE(FreeForAnotherThread(mu));
}

}  // namespace
}  // namespace strata
