// RankWatch: heartbeats between the ranks of an mpi compute, so that a hung
// or stopped rank ends the job instead of hanging it (mpi_dispatcher.cc).
#ifndef STRATA_RUNTIME_MPI_RANK_WATCH_H_
#define STRATA_RUNTIME_MPI_RANK_WATCH_H_

#include <cstdint>
#include <deque>
#include <thread>

#include "strata/base/mpi.h"
#include "strata/base/thread_annotations.h"

namespace strata {
namespace internal_runtime {

// The tag of heartbeats on Strata's communicator.
constexpr int kTagBeat = 0x5403;

// Heartbeats between rank 0 and every other rank while tasks run, on a
// thread of each rank (so a long task never silences its rank): rank 0 beats
// to every rank and every rank to rank 0, every heartbeat_timeout / 10. A
// rank that hears nothing from its peer for heartbeat_timeout (rank 0: from
// one of the ranks; the others: from rank 0) ends the job. Stop ends the
// exchange together, leaving no beat unreceived for a later compute: a rank
// says bye to rank 0 and waits for its ack (MPI keeps the order of one
// thread's messages to one rank, so every beat before the ack has been
// received), and rank 0 stops once every rank said bye.
//
// Thread-safety: Start and Stop from one thread.
class RankWatch {
 public:
  explicit RankWatch(double timeout) : timeout_(timeout) {}
  ~RankWatch() { Stop(); }
  void Start() { thread_ = std::thread([this] { Loop(); }); }
  void Stop() {
    if (!thread_.joinable()) return;
    {
      MutexLock lock(&mu_);
      stopping_ = true;
    }
    cv_.SignalAll();
    thread_.join();
  }

 private:
  enum : int64_t { kBeat = 1, kBye = 2, kAck = 3 };
  static const int64_t kMessages[4];

  void Loop() STRATA_EXCLUDES(mu_);
  void Post(int to, int64_t what) {
    Result<mpi::PendingSend> send =
        mpi::StartSend(to, kTagBeat, std::as_bytes(std::span(&kMessages[what], 1)));
    if (send.ok()) sends_.push_back(*std::move(send));
  }
  [[noreturn]] void Hung(int rank) {
    std::fprintf(stderr,
                 "strata: error: rank %d sent no heartbeat for %.1f s (heartbeat_timeout): it is "
                 "hung or stopped, and an MPI job cannot go on without one of its ranks; ending "
                 "the job (destinations stay incomplete: run the command again to finish)\n",
                 rank, timeout_);
    std::fflush(stderr);
    mpi::Abort(1);
    std::abort();
  }

  const double timeout_;
  Mutex mu_;
  CondVar cv_;
  bool stopping_ STRATA_GUARDED_BY(mu_) = false;
  std::deque<mpi::PendingSend> sends_;  // the watch thread's
  std::thread thread_;
};

}  // namespace internal_runtime
}  // namespace strata

#endif  // STRATA_RUNTIME_MPI_RANK_WATCH_H_
