// The memory tier of the `mpi` executor: the ranks' memory together.
//
// Each rank keeps the blocks it produced in its own RAM (a local store: a
// MemoryIntermediateStore under the rank's share of the RAM budget, spilling
// per block to its files past it). A task that reads a block held by another
// rank fetches exactly the region it needs from that rank's BlockServer, as
// MPI messages (a header, then the bytes in pieces of at most
// mpi::kPieceBytes): chunks travel over the interconnect, never through
// storage. A task's regions held by one rank are asked for in one request
// (GetRegions), which the owner answers region after region without waiting
// for the reader to take each one, up to 64 MiB ahead; a rank has one
// request in flight per peer at a time, so the bytes in flight per peer are
// bounded by 64 MiB (or one region, when larger).
//
// Who holds a block is known to the scheduler (rank 0), which sends the
// owners of a task's inputs with the task; `owner` looks them up. Erase on
// rank 0 tells the owner to drop the block (one small message, no reply).
//
// Thread-safety: every method is safe to call concurrently.
#ifndef STRATA_RUNTIME_MPI_TIER_H_
#define STRATA_RUNTIME_MPI_TIER_H_

#include <atomic>
#include <functional>
#include <memory>
#include <thread>
#include <vector>

#include "strata/base/mpi.h"
#include "strata/runtime/intermediate_store.h"

namespace strata {

class MpiIntermediateStore : public IntermediateStore {
 public:
  // `op` names the store in messages (the same on every rank); `owner(linear
  // block)` is the rank holding a block. A region fetched into a strided
  // destination is staged in a buffer from `staging` (recycled, not zeroed).
  MpiIntermediateStore(int op, ChunkGrid grid, DType dtype,
                       std::unique_ptr<IntermediateStore> local,
                       std::function<int(Index)> owner, std::shared_ptr<MemoryPool> staging);
  Status Put(std::span<const Index> block, NDArray data, MemoryPool& staging) override;
  Result<std::shared_ptr<const NDArray>> Get(std::span<const Index> block,
                                             MemoryPool& pool) override;
  Result<BlockView> View(std::span<const Index> block, MemoryPool& pool) override;
  Status GetRegion(std::span<const Index> block, const Box& region, const ArrayView& out,
                   MemoryPool& staging) override;
  Status GetRegions(std::span<const RegionRead> reads, MemoryPool& staging) override;
  Status Erase(std::span<const Index> block) override;
  int64_t resident_bytes() const override { return local_->resident_bytes(); }
  int64_t bytes_written() const override { return local_->bytes_written(); }
  Status Cleanup() override { return local_->Cleanup(); }

  IntermediateStore& local() { return *local_; }
  DType dtype() const { return dtype_; }
  // For the BlockServer: drops a block this rank holds.
  Status EraseLocal(Index linear);
  // For the BlockServer: an answer to a fetch, being sent: a header, then the
  // region's bytes (served) or, when the region cannot be read, a header with
  // the error for the reader to report. Holds what it sends until Finish.
  struct Answer {
    std::vector<std::byte> header;
    std::shared_ptr<const NDArray> held;  // the block, sent from RAM without a copy
    NDArray staged;                       // or the region, copied out of it
    mpi::PendingSend header_send, data_send;
    bool served = false;
    Status Finish();
  };
  Result<Answer> StartServe(int to, Index linear, const Box& region, MemoryPool& pool);
  // Bytes this rank fetched from others.
  int64_t bytes_fetched() const { return bytes_fetched_.load(); }

 private:
  int Owner(std::span<const Index> block) const;
  Status CheckOwner(int owner, std::span<const Index> block) const;
  // Fetches `reads`, all held by `owner`, with one request.
  Status Fetch(int owner, std::span<const RegionRead* const> reads);

  int op_;
  ChunkGrid grid_;
  DType dtype_;
  std::unique_ptr<IntermediateStore> local_;
  std::function<int(Index)> owner_;
  std::shared_ptr<MemoryPool> staging_;
  std::atomic<int64_t> bytes_fetched_{0};
};

// Answers other ranks' fetch and erase requests for this rank's blocks, on a
// thread of its own, until Stop(); and rank 0's notices that the attempt
// this rank runs was superseded (by a backup elsewhere).
class BlockServer {
 public:
  // stores[op]: the op's store, or null. Staging buffers come from `pool`.
  // `superseded(attempt id)` is called for each notice.
  BlockServer(std::vector<MpiIntermediateStore*> stores, std::shared_ptr<MemoryPool> pool,
              std::function<void(int64_t)> superseded = {});
  // Rank 0: tells `rank` that its attempt `attempt_id` was superseded (one
  // small message, no reply; MPI delivers it before StopAll's stop).
  static Status TellSuperseded(int rank, int64_t attempt_id);
  // Erases this rank's own copy of `block` of op `op` on `rank` (a copy a
  // superseded attempt published there), whoever owns the block.
  static Status EraseOn(int rank, int op, Index linear_block);
  ~BlockServer();
  void Start();
  // Rank 0, once no task runs anywhere: tells every rank's server to stop.
  // The stop comes from rank 0 like every erase, so MPI delivers it after
  // them: no erase is left unread to reach the next compute's server.
  static Status StopAll();
  // Waits for this rank's server to stop; the first error it met.
  Status Join();

 private:
  void Loop();
  Status Serve(int from, std::span<const int64_t> request);

  std::vector<MpiIntermediateStore*> stores_;
  std::shared_ptr<MemoryPool> pool_;
  std::function<void(int64_t)> superseded_;
  std::thread thread_;
  Status status_;
};

}  // namespace strata

#endif  // STRATA_RUNTIME_MPI_TIER_H_
