#include "strata/runtime/mpi_rank_watch.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <span>
#include <vector>

namespace strata {
namespace internal_runtime {

const int64_t RankWatch::kMessages[4] = {0, kBeat, kBye, kAck};

void RankWatch::Loop() {
  using Clock = std::chrono::steady_clock;
  const int rank = mpi::Rank();
  const int ranks = mpi::Size();
  const auto interval = std::chrono::duration_cast<Clock::duration>(
      std::chrono::duration<double>(std::clamp(timeout_ / 10, 0.01, 1.0)));
  const auto timeout = std::chrono::duration_cast<Clock::duration>(
      std::chrono::duration<double>(timeout_));
  std::vector<Clock::time_point> heard(ranks, Clock::now());
  std::vector<bool> gone(ranks, false);  // rank 0: said bye
  Clock::time_point next_beat = Clock::now();
  bool said_bye = false;
  bool stopping = false;
  while (true) {
    {
      // Until Stop, wake for the next beat; then poll for the bye/ack.
      MutexLock lock(&mu_);
      const bool seen = stopping;
      const Clock::time_point deadline =
          seen ? Clock::now() + std::chrono::milliseconds(1) : next_beat;
      while (!(stopping_ && !seen) && cv_.WaitUntil(&mu_, deadline)) {
      }
      stopping = stopping_;
    }
    const Clock::time_point now = Clock::now();
    if (rank != 0 && stopping && !said_bye) {
      Post(0, kBye);
      said_bye = true;
    }
    if (now >= next_beat) {
      next_beat = now + interval;
      for (int r = 0; r < ranks; ++r) {
        if (r == rank || (rank != 0 && r != 0) || gone[r] || said_bye) continue;
        Post(r, kBeat);
      }
    }
    std::vector<std::byte> message;
    int from = -1;
    bool acked = false;
    while (true) {
      Result<bool> got = mpi::TryReceiveAny(rank == 0 ? -1 : 0, kTagBeat, &from, &message);
      if (!got.ok() || !*got) break;
      int64_t what = 0;
      if (message.size() == sizeof what) std::memcpy(&what, message.data(), sizeof what);
      heard[from] = Clock::now();
      if (rank == 0 && what == kBye) {
        gone[from] = true;
        Post(from, kAck);
      }
      acked = acked || (rank != 0 && what == kAck);
    }
    while (!sends_.empty()) {
      Result<bool> done = sends_.front().Test();
      if (done.ok() && !*done) break;
      sends_.pop_front();
    }
    for (int r = 0; r < ranks; ++r) {
      if (r == rank || (rank != 0 && r != 0) || gone[r]) continue;
      if (Clock::now() - heard[r] > timeout) Hung(r);
    }
    const bool all_gone = std::count(gone.begin() + 1, gone.end(), true) == ranks - 1;
    if ((rank == 0 && stopping && all_gone) || acked) break;
  }
  for (mpi::PendingSend& send : sends_) send.Finish().IgnoreError();
  sends_.clear();
}

}  // namespace internal_runtime
}  // namespace strata
